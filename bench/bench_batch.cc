// Batched k-means throughput: B problems of N x D at once (fit_batch) against one problem of
// B*N rows, per Lloyd iteration, on the Sparse-VideoGen shape by default.
// Usage: bench_batch [B N D K]   (defaults 32 75600 128 1000; float32, random init)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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
  return 0;
}
