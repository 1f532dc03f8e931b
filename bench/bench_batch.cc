// Batched k-means throughput: B problems of N x D at once (fit_batch) against one problem of
// B*N rows, per Lloyd iteration, on the Sparse-VideoGen shape by default.
// Then one member of it in float32, bfloat16 and float16: on AMX tiles (the default for 16-bit
// input where the CPU has AMX-BF16) and on the widening path (a SIMD target named), with the
// ceilings measured in the same run: OpenBLAS sgemm for float32, the AMX tile rate for bf16.
// Usage: bench_batch [B N D K [half]]   (defaults 32 75600 128 1000; random init; `half`
// skips the batched part)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <omp.h>

#include "cpu/amx.hpp"
#include "flashkm/flashkm.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#ifdef FLASHKM_BENCH_HAVE_CBLAS
extern "C" void cblas_sgemm(int, int, int, int, int, int, float, const float*, int, const float*,
                            int, float, float*, int);
#endif

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

#ifdef FLASHKM_BENCH_HAVE_CBLAS
// OpenBLAS sgemm 2048^3 on all threads, GFLOP/s, median of 5.
double sgemm_rate() {
  const int n = 2048;
  std::vector<float> a(std::size_t(n) * n, 0.5f), b(std::size_t(n) * n, 0.25f), c(std::size_t(n) * n);
  std::vector<double> r;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = Clock::now();
    cblas_sgemm(101, 111, 111, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    r.push_back(2.0 * n * double(n) * n / std::chrono::duration<double>(Clock::now() - t0).count() * 1e-9);
  }
  std::sort(r.begin(), r.end());
  return r[2];
}
#else
double sgemm_rate() { return 0; }
#endif

#if defined(__x86_64__)
// The AMX-BF16 tile rate on one thread, GFLOP/s: four independent 16 x 16 accumulators,
// TDPBF16PS (16 x 16 x 32 x 2 flops each) from registers only, or -- with_loads -- each group
// of four fed by four fresh tile loads from L1 (two A, two B: the 2 x 2 blocking that
// FlashAssign's tiles use, the most reuse eight tile registers allow).
__attribute__((target("amx-tile,amx-bf16"))) double amx_rate_one(bool with_loads) {
  flashkm::detail::TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
  alignas(64) static const std::uint16_t ones[4 * 4 * 16 * 32] = {};
  _tile_loadd(4, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_loadd(6, ones, 64);
  _tile_loadd(7, ones, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const long iters = 2000000;
  const auto t0 = Clock::now();
  for (long i = 0; i < iters; ++i) {
    if (with_loads) {
      const std::uint16_t* p = ones + (i % 4) * 4 * 512;
      _tile_loadd(4, p, 64);
      _tile_loadd(5, p + 512, 64);
      _tile_loadd(6, p + 1024, 64);
      _tile_loadd(7, p + 1536, 64);
    }
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
  _tile_release();
  return 4.0 * iters * 16 * 16 * 32 * 2 / sec * 1e-9;
}
#endif

// The tile rate on every thread at once, GFLOP/s (0 without AMX); a warm-up run first (the
// tile unit powers up on first use).
double amx_rate(bool with_loads) {
#if defined(__x86_64__)
  if (!flashkm::detail::amx_usable()) return 0;
  double total = 0;
#pragma omp parallel
  amx_rate_one(with_loads);
#pragma omp parallel reduction(+ : total)
  total += amx_rate_one(with_loads);
  return total;
#else
  return 0;
#endif
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
  const bool half_only = argc > 5 && std::strcmp(argv[5], "half") == 0;
  if (!half_only) {
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
  }

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
  const auto time16 = [&](const std::vector<std::uint16_t>& v, flashkm::HalfType type, const std::string& target,
                          double* pairs_per_row) {
    o.target = target;
    const std::size_t before = flashkm::detail::amx_rescored_pairs();
    const double t = per_iteration([&](int iters) {
      o.max_iter = iters;
      flashkm::fit(flashkm::HalfView{v.data(), N, D, D, type}, o);
    });
    // Every timed fit made 1 + 5 assignments plus a final one per run (3 repeats, 2 runs).
    *pairs_per_row = double(flashkm::detail::amx_rescored_pairs() - before) / (double(N) * 3 * (2 + 6));
    o.target.clear();
    return t;
  };
  const std::string simd = flashkm::available_targets().front();
  const bool amx = flashkm::detail::amx_usable();
  const bool dp = flashkm::detail::avx512bf16_usable();
  double p_b16 = 0, p_f16 = 0, p_dp = 0, unused = 0;
  const double b16dp = dp ? time16(bf, flashkm::HalfType::kBFloat16, "AVX512_BF16", &p_dp) : 0;
  const double b16 = amx ? time16(bf, flashkm::HalfType::kBFloat16, "AMX_BF16", &p_b16) : 0;
  const double f16 = amx ? time16(h, flashkm::HalfType::kFloat16, "AMX_BF16", &p_f16) : 0;
  const double b16w = time16(bf, flashkm::HalfType::kBFloat16, simd, &unused);
  const double f16w = time16(h, flashkm::HalfType::kFloat16, simd, &unused);
  const double sgemm = sgemm_rate();
  const double tiles = amx_rate(false);
  const double tiles_fed = amx_rate(true);
  const double one = 2.0 * double(N) * double(D) * double(K);
  std::printf("\n%d threads; ceilings measured in this run: sgemm %.1f GFLOP/s (OpenBLAS 2048^3), AMX-BF16 tiles %.1f GFLOP/s (TDPBF16PS from registers), %.1f GFLOP/s fed by 4 tile loads from L1 per 4 TDPBF16PS\n",
              omp_get_max_threads(), sgemm, tiles, tiles_fed);
  std::printf("\n| one problem %zu x %zu, K = %zu | path | per iteration | GFLOP/s (2NDK) | of ceiling | re-scored pairs per row |\n|---|---|---|---|---|---|\n", N, D, K);
  std::printf("| float32 | %s | %.4f s | %.0f | %.0f%% of sgemm | |\n", simd.c_str(), f32, one / f32 * 1e-9, 100 * one / f32 * 1e-9 / sgemm);
  if (amx) {
    std::printf("| bfloat16 | AMX_BF16 | %.4f s | %.0f | %.1f%% of tiles | %.3f |\n", b16, one / b16 * 1e-9, 100 * one / b16 * 1e-9 / tiles, p_b16);
    std::printf("| (bfloat16 against the fed tile rate) | | | | %.1f%% of fed tiles | |\n", 100 * one / b16 * 1e-9 / tiles_fed);
    std::printf("| float16 | AMX_BF16 | %.4f s | %.0f | %.1f%% of tiles | %.3f |\n", f16, one / f16 * 1e-9, 100 * one / f16 * 1e-9 / tiles, p_f16);
  }
  if (dp) std::printf("| bfloat16 | AVX512_BF16 | %.4f s | %.0f | | %.3f |\n", b16dp, one / b16dp * 1e-9, p_dp);
  std::printf("| bfloat16 | %s (widening) | %.4f s | %.0f | | |\n", simd.c_str(), b16w, one / b16w * 1e-9);
  std::printf("| float16 | %s (widening) | %.4f s | %.0f | | |\n", simd.c_str(), f16w, one / f16w * 1e-9);
  if (amx) std::printf("bfloat16 (AMX) speed-up over float32: %.2fx; float16 (AMX): %.2fx\n", f32 / b16, f32 / f16);
  if (dp) std::printf("bfloat16 (AVX512_BF16) speed-up over float32: %.2fx\n", f32 / b16dp);
  return 0;
}
