// Kernel benchmarks with the machine's ceilings measured in the same run:
//   ceiling/sgemm_4096   OpenBLAS sgemm 4096^3 (compute ceiling for f32 FlashAssign)
//   ceiling/read_bw      streaming read of an N x D float32 array (ceiling of the update)
//   assign/N/D/K         FlashAssign, f32, GFLOP/s = 2NDK / time
//   update/N/D/K         Sort-Inverse Update, GB/s of X streamed
//   iteration/N/D/K      one whole Lloyd iteration (assign + update, fused into one pass over X
//                        when K is small enough), time
//   panel/R/D/{0,1,2}    one thread, R rows against one panel of centroids: 0 assign_rows with
//                        the one-vector panel (a bounded assignment's group on AVX-512), 1
//                        group_min over the same rows packed and held by pointer in shuffled
//                        order (as a block's survivors are), 2 assign_rows with the wide panel
//                        (the unpruned kernel); GFLOP/s = 2 R D nr / time, the cost per distance
// Run with --benchmark_repetitions=5 --benchmark_report_aggregates_only=true for medians.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "cpu/cpu_engine.hpp"
#include "cpu/aligned_buffer.hpp"
#include "cpu/cpu_targets.hpp"
#include "cpu/kernel_table.hpp"

#ifdef FLASHKM_BENCH_HAVE_CBLAS
extern "C" void cblas_sgemm(int, int, int, int, int, int, float, const float*, int, const float*,
                            int, float, float*, int);
#endif

namespace {

struct Problem {
  std::size_t n, d, k;
  std::vector<float> X;
  std::vector<double> C;
  std::unique_ptr<flashkm::detail::Engine<float>> engine;
  std::vector<std::int32_t> labels;
  std::vector<float> dist;
  std::vector<double> sums, wsums;

  Problem(std::size_t n_, std::size_t d_, std::size_t k_) : n(n_), d(d_), k(k_), X(n_ * d_) {
    std::mt19937_64 rng(42);
    std::normal_distribution<float> g;
    for (float& v : X) v = g(rng);
    engine = flashkm::detail::make_cpu_engine<float>({X.data(), n, d}, {}, 0, "");
    C.resize(k * d);
    std::vector<double> row(d);
    for (std::size_t c = 0; c < k; ++c) {
      engine->row_centred((c * 7919) % n, row.data());
      std::copy(row.begin(), row.end(), C.begin() + static_cast<std::ptrdiff_t>(c * d));
    }
    engine->set_centroids(C.data(), k);
    labels.assign(n, -1);
    dist.resize(n);
    sums.resize(k * d);
    wsums.resize(k);
    engine->assign(labels.data(), dist.data());
  }
};

Problem& problem(std::size_t n, std::size_t d, std::size_t k) {
  static std::unique_ptr<Problem> p;
  if (!p || p->n != n || p->d != d || p->k != k) {
    p.reset();
    p = std::make_unique<Problem>(n, d, k);
  }
  return *p;
}

void Assign(benchmark::State& st) {
  auto& p = problem(st.range(0), st.range(1), st.range(2));
  for (auto _ : st) {
    p.engine->set_centroids(p.C.data(), p.k);
    benchmark::DoNotOptimize(p.engine->assign(p.labels.data(), p.dist.data()));
  }
  const double flops = 2.0 * double(p.n) * double(p.d) * double(p.k);
  st.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(p.engine->target());
}

void Update(benchmark::State& st) {
  auto& p = problem(st.range(0), st.range(1), st.range(2));
  for (auto _ : st) {
    benchmark::DoNotOptimize(p.engine->update(p.labels.data(), p.C.data(), p.k, p.sums.data(), p.wsums.data()));
  }
  st.counters["GBps"] = benchmark::Counter(double(p.n * p.d * sizeof(float)) * 1e-9,
                                           benchmark::Counter::kIsIterationInvariantRate);
}

void Iteration(benchmark::State& st) {
  auto& p = problem(st.range(0), st.range(1), st.range(2));
  std::size_t changed = 0;
  p.engine->begin_run(flashkm::Prune::kOff, p.k);
  for (auto _ : st) {
    benchmark::DoNotOptimize(p.engine->assign_update(p.C.data(), p.k, p.sums.data(), p.wsums.data(), &changed));
  }
  const double flops = 2.0 * double(p.n) * double(p.d) * double(p.k);
  st.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Sum of all values with 32 independent partial sums: vectorisable without reassociation, so
// the loop is limited by memory, not by an addition chain. Cloned for wide SIMD (GCC picks the
// clone at run time) so that the ceiling is not understated by the baseline build.
__attribute__((target_clones("avx512f", "avx2", "default"))) float stream_sum(const float* x,
                                                                                std::size_t total) {
  float s = 0;
#pragma omp parallel reduction(+ : s)
  {
    float acc[32] = {};
#pragma omp for schedule(static)
    for (std::size_t i = 0; i < total / 32; ++i) {
      for (std::size_t j = 0; j < 32; ++j) acc[j] += x[i * 32 + j];
    }
    for (float a : acc) s += a;
  }
  return s;
}

void ReadBandwidth(benchmark::State& st) {
  auto& p = problem(st.range(0), st.range(1), st.range(2));
  const std::size_t total = p.X.size();
  for (auto _ : st) benchmark::DoNotOptimize(stream_sum(p.X.data(), total));
  st.counters["GBps"] = benchmark::Counter(double(total * sizeof(float)) * 1e-9,
                                           benchmark::Counter::kIsIterationInvariantRate);
}

// One panel's worth of centroids against r rows, on one thread.
void Panel(benchmark::State& st) {
  namespace fd = flashkm::detail;
  const auto r = static_cast<std::size_t>(st.range(0)), d = static_cast<std::size_t>(st.range(1));
  const bool grouped = st.range(2) == 1;
  const fd::KernelTable<float>* table = fd::find_table<float>("");
  const fd::PanelKernels<float>& panel = st.range(2) == 2 ? table->wide : table->narrow;
  const std::size_t k = panel.nr, P = table->center_pad;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> g;
  std::vector<float> x(r * d), shift(d, 0.0f);
  for (float& v : x) v = g(rng);
  std::vector<double> c(k * d);
  for (double& v : c) v = g(rng);
  fd::AlignedBuffer<float> packed;  // the panels' aligned loads, as the engine's
  panel.pack_centroids(c.data(), k, d, packed.reserve(panel.packed_size(k, d)));
  std::vector<float> ids(k);
  for (std::size_t i = 0; i < k; ++i) ids[i] = static_cast<float>(i);
  const fd::PointsRef<float> pts{x.data(), d, d, shift.data()};
  // The rows packed for group_min, a sliver at a time, and pointers to them in shuffled order.
  const std::size_t rp = (r + P - 1) / P * P;
  std::vector<float> bx(rp * d), bnorm(rp);
  std::vector<std::uint32_t> idx(r);
  for (std::size_t i = 0; i < r; ++i) idx[i] = static_cast<std::uint32_t>(i);
  for (std::size_t s0 = 0; s0 < r; s0 += P) {
    table->pack_rows(pts, idx.data() + s0, std::min(P, r - s0), bx.data() + s0 * d, bnorm.data() + s0);
  }
  std::vector<const float*> xr(rp);
  std::vector<std::size_t> order(r);
  for (std::size_t i = 0; i < r; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (std::size_t q = 0; q < rp; ++q) xr[q] = bx.data() + order[q < r ? q : 0] * d;
  std::vector<float> min1(rp), min2(rp), dist(r);
  std::vector<std::int32_t> idx1(rp), labels(r, -1);
  for (auto _ : st) {
    if (grouped) {
      panel.group_min(xr.data(), d, packed.data(), ids.data(), k, 0, k, r, min1.data(), idx1.data(), min2.data(),
                      nullptr, 0);
      benchmark::DoNotOptimize(min1.data());
    } else {
      benchmark::DoNotOptimize(panel.assign_rows(pts, packed.data(), k, 0, r, labels.data(), dist.data()));
    }
  }
  const double flops = 2.0 * double(r) * double(d) * double(k);
  st.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(table->name);
}

#ifdef FLASHKM_BENCH_HAVE_CBLAS
void Sgemm(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  std::vector<float> a(std::size_t(n) * n, 0.5f), b(std::size_t(n) * n, 0.25f), c(std::size_t(n) * n);
  for (auto _ : st) {
    // RowMajor=101, NoTrans=111.
    cblas_sgemm(101, 111, 111, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  st.counters["GFLOPs"] = benchmark::Counter(2.0 * n * double(n) * n * 1e-9,
                                             benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(Sgemm)->Name("ceiling/sgemm")->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

BENCHMARK(ReadBandwidth)->Name("ceiling/read_bw")->Args({1000000, 128, 16})->Unit(benchmark::kMillisecond)->UseRealTime();
// The shapes, then the peer benchmark's wide ones (200k x 768 x 256; Fashion-MNIST's
// 70k x 784 with K = 10).
void Shapes(benchmark::internal::Benchmark* b) {
  b->Args({100000, 128, 1024})->Args({1000000, 32, 256})->Args({200000, 768, 256})->Args({70000, 784, 10});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(Assign)->Name("assign")->Apply(Shapes)->Args({50000, 16, 16});
BENCHMARK(Update)->Name("update")->Apply(Shapes)->Args({1000000, 128, 1024});
BENCHMARK(Iteration)->Name("iteration")->Apply(Shapes)->Args({50000, 16, 16});
BENCHMARK(Panel)->Name("panel")->ArgsProduct({{1024}, {64, 128, 784}, {0, 1, 2}})->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
