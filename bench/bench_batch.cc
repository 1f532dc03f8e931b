// Batched k-means throughput: B problems of N x D at once (fit_batch) against one problem of
// B*N rows, per Lloyd iteration, on the Sparse-VideoGen shape by default.
// Usage: bench_batch [B N D K]   (defaults 32 75600 128 1000; float32, random init)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "flashkm/flashkm.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Seconds per Lloyd iteration of `run(iters)`: the difference between 5 and 1 iterations
// (initialisation and the final assignment cancel), median of 3.
template <class Run>
double per_iteration(Run&& run) {
  std::vector<double> t;
  for (int rep = 0; rep < 3; ++rep) {
    const auto a = Clock::now();
    run(1);
    const auto b = Clock::now();
    run(5);
    const auto c = Clock::now();
    t.push_back((std::chrono::duration<double>(c - b).count() - std::chrono::duration<double>(b - a).count()) / 4);
  }
  std::sort(t.begin(), t.end());
  return t[1];
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t B = argc > 4 ? std::strtoull(argv[1], nullptr, 10) : 32;
  const std::size_t N = argc > 4 ? std::strtoull(argv[2], nullptr, 10) : 75600;
  const std::size_t D = argc > 4 ? std::strtoull(argv[3], nullptr, 10) : 128;
  const std::size_t K = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 1000;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> g;
  std::vector<float> X(B * N * D);
  for (float& v : X) v = g(rng);
  flashkm::KMeansOptions o;
  o.n_clusters = K;
  o.init = flashkm::InitMethod::kRandom;
  o.tol = 0;
  const double flops = 2.0 * double(B) * double(N) * double(D) * double(K);
  const double batched = per_iteration([&](int iters) {
    o.max_iter = iters;
    flashkm::fit_batch(flashkm::BatchView<float>{X.data(), B, N, D}, o);
  });
  const double single = per_iteration([&](int iters) {
    o.max_iter = iters;
    flashkm::fit(flashkm::MatrixView<float>(X.data(), B * N, D), o);
  });
  std::printf("| B x N x D, K | per iteration | GFLOP/s (2BNDK) |\n|---|---|---|\n");
  std::printf("| batched %zu x %zu x %zu, K = %zu (fit_batch) | %.3f s | %.0f |\n", B, N, D, K, batched, flops / batched * 1e-9);
  std::printf("| one problem %zu x %zu, K = %zu (fit) | %.3f s | %.0f |\n", B * N, D, K, single, flops / single * 1e-9);
  std::printf("batched / single time: %.3f\n", batched / single);

  // One member in bfloat16 and float16 against float32 (the same values: X rounded to bf16).
  std::vector<std::uint16_t> bf(N * D), h(N * D);
  std::vector<float> xr(N * D);
  for (std::size_t i = 0; i < N * D; ++i) {
    std::uint32_t b;
    std::memcpy(&b, &X[i], 4);
    b &= 0xffff0000u;  // bf16 truncation: exact in float16 too for |x| < 65504 with 8-bit mantissa
    bf[i] = static_cast<std::uint16_t>(b >> 16);
    std::memcpy(&xr[i], &b, 4);
    // float16 bits of the same value (normal range: these values are |x| < 8 and not tiny)
    const std::uint32_t sign = (b >> 16) & 0x8000u;
    const int exp = static_cast<int>((b >> 23) & 0xff) - 127 + 15;
    h[i] = (b & 0x7fffffffu) == 0 || exp <= 0 ? static_cast<std::uint16_t>(sign)
                                             : static_cast<std::uint16_t>(sign | (exp << 10) | ((b >> 13) & 0x3ffu));
  }
  const double f32 = per_iteration([&](int iters) {
    o.max_iter = iters;
    flashkm::fit(flashkm::MatrixView<float>(xr.data(), N, D), o);
  });
  const double b16 = per_iteration([&](int iters) {
    o.max_iter = iters;
    flashkm::fit(flashkm::HalfView{bf.data(), N, D, D, flashkm::HalfType::kBFloat16}, o);
  });
  const double f16 = per_iteration([&](int iters) {
    o.max_iter = iters;
    flashkm::fit(flashkm::HalfView{h.data(), N, D, D, flashkm::HalfType::kFloat16}, o);
  });
  const double one = 2.0 * double(N) * double(D) * double(K);
  std::printf("\n| one problem %zu x %zu, K = %zu | per iteration | GFLOP/s |\n|---|---|---|\n", N, D, K);
  std::printf("| float32 | %.3f s | %.0f |\n| bfloat16 | %.3f s | %.0f |\n| float16 | %.3f s | %.0f |\n", f32,
              one / f32 * 1e-9, b16, one / b16 * 1e-9, f16, one / f16 * 1e-9);
  std::printf("bfloat16 speed-up over float32: %.2fx\n", f32 / b16);
  return 0;
}
