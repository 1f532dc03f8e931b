// Bounded greedy k-means++ (Engine::seed_*): the centres are bitwise those of the plain
// implementation that computes every distance (init_kmeanspp_plain), on awkward shapes, data
// far from the origin, duplicates and near-ties, with weights, on every target and thread
// count, and streamed; and the bounds do skip most distances on clustered data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <map>
#include <random>
#include <string>

#include "core/backend.hpp"
#include "core/exact_sum.hpp"
#include "core/init.hpp"
#include "core/seeding.hpp"
#include "cpu/cpu_engine.hpp"
#include "testlib.hpp"

namespace flashkm {
namespace {

using testing::blobs;
using testing::ChunkSource;

struct Seeds {
  std::vector<double> centres;
  std::uint64_t distances = 0;
};

class Counter final : public detail::SeedProgress {
 public:
  void step(const char* phase, std::size_t chosen, std::size_t k, std::uint64_t distances) override {
    EXPECT_STREQ(phase, "k-means++");
    EXPECT_EQ(chosen, ++steps);
    EXPECT_LE(chosen, k);
    EXPECT_GE(distances, last);
    last = distances;
  }
  std::size_t steps = 0;
  std::uint64_t last = 0;
};

template <class T>
Seeds bounded(detail::Engine<T>& engine, std::size_t k, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Counter progress;
  Seeds s;
  s.centres = detail::init_kmeanspp(engine, k, rng, {&progress});
  EXPECT_EQ(progress.steps, k);
  s.distances = progress.last;
  return s;
}

template <class T>
std::vector<double> plain(detail::Engine<T>& engine, std::size_t k, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  return detail::init_kmeanspp_plain(engine, k, rng);
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// Seeds X (n x d) both ways on one engine and requires the same bits; returns the bounded run.
template <class T>
Seeds check(const std::vector<T>& X, std::size_t n, std::size_t d, std::size_t k, std::uint64_t seed,
            const std::vector<double>& w = {}, int threads = 2, const std::string& target = "") {
  auto engine = detail::make_cpu_engine<T>(MatrixView<T>(X.data(), n, d), w, threads, target);
  const std::vector<double> want = plain(*engine, k, seed);
  const Seeds got = bounded(*engine, k, seed);
  EXPECT_TRUE(same_bits(want, got.centres)) << "n=" << n << " d=" << d << " k=" << k << " seed=" << seed;
  return got;
}

template <class T>
class SeedingTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(SeedingTest, Types);

TYPED_TEST(SeedingTest, RandomShapesBitwise) {
  using T = TypeParam;
  struct Shape {
    std::size_t n, d, k;
  };
  // N = 1, K = 1, K = N, D = 1, D off every vector width, very large D, N off every block.
  for (const Shape s : {Shape{1, 1, 1}, Shape{1, 7, 1}, Shape{9, 3, 9}, Shape{40, 1, 12}, Shape{300, 17, 25},
                        Shape{2000, 64, 100}, Shape{150, 2048, 12}, Shape{5003, 33, 64}, Shape{4097, 5, 300}}) {
    for (std::uint64_t seed : {1u, 2u}) {
      const auto X = blobs<T>(s.n, s.d, std::max<std::size_t>(1, s.k / 2), 10 * seed + s.d, 5.0);
      check(X, s.n, s.d, s.k, seed);
    }
  }
}

TYPED_TEST(SeedingTest, FarFromTheOriginBitwise) {
  using T = TypeParam;
  const std::size_t n = 3000, d = 24, k = 50;
  for (double offset : {1e4, -3e5}) {
    const auto X = blobs<T>(n, d, 20, 5, 3.0, offset);
    check(X, n, d, k, 7);
  }
}

// Duplicated rows (ties to the last bit), at scales from 2^-60 to 2^60: distances in the
// subnormal range and near the float range's top must not break the bounds.
TYPED_TEST(SeedingTest, DuplicatesAndScalesBitwise) {
  using T = TypeParam;
  const std::size_t d = 6, base = 40, copies = 25, n = base * copies, k = 60;
  const auto B = blobs<T>(base, d, 8, 3, 4.0);
  for (int e : {-60, -20, 0, 20, 60}) {
    std::vector<T> X(n * d);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < d; ++j) X[i * d + j] = static_cast<T>(std::ldexp(static_cast<double>(B[(i % base) * d + j]), e));
    }
    SCOPED_TRACE(::testing::Message() << "scale 2^" << e);
    check(X, n, d, k, 11);
  }
}

// Points a hair apart: near-ties between a candidate and a row's closest centre at every scale.
TYPED_TEST(SeedingTest, NearTiesBitwise) {
  using T = TypeParam;
  const std::size_t d = 9, n = 2400, k = 80;
  std::mt19937_64 rng(4);
  std::uniform_int_distribution<int> grid(-3, 3);
  std::uniform_real_distribution<double> hair(-1, 1);
  for (double eps : {0.0, 1e-7, 1e-3}) {
    std::vector<T> X(n * d);
    for (auto& v : X) v = static_cast<T>(grid(rng) + eps * hair(rng));
    SCOPED_TRACE(::testing::Message() << "eps " << eps);
    check(X, n, d, k, 5);
  }
}

// One candidate a step (plain k-means++; k-means|| may recluster with it) and many.
TYPED_TEST(SeedingTest, TrialCountsBitwise) {
  using T = TypeParam;
  const std::size_t n = 3000, d = 10, k = 40;
  const auto X = blobs<T>(n, d, 20, 4, 5.0);
  auto engine = detail::make_cpu_engine<T>(MatrixView<T>(X.data(), n, d), {}, 2, "");
  for (std::size_t trials : {1u, 3u, 16u, 21u}) {
    std::mt19937_64 a(5), b(5);
    const auto want = detail::init_kmeanspp_plain(*engine, k, a, trials);
    std::vector<std::size_t> rows;
    const auto got = detail::init_kmeanspp(*engine, k, b, {nullptr, trials, &rows});
    EXPECT_TRUE(same_bits(want, got)) << trials << " trials";
    ASSERT_EQ(rows.size(), k);
    std::vector<double> row(d);
    for (std::size_t c = 0; c < k; ++c) {
      engine->row_centred(rows[c], row.data());
      EXPECT_TRUE(std::equal(row.begin(), row.end(), got.begin() + static_cast<std::ptrdiff_t>(c * d))) << "centre " << c;
    }
  }
}

// Every compiled target, 1 / 2 / 3 threads, weights (some zero).
TYPED_TEST(SeedingTest, TargetsThreadsWeightsBitwise) {
  using T = TypeParam;
  const std::size_t n = 6000, d = 21, k = 70;
  const auto X = blobs<T>(n, d, 40, 9, 6.0, 50.0);
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> u(0, 3);
  std::vector<double> w(n);
  for (std::size_t i = 0; i < n; ++i) w[i] = i % 13 == 0 ? 0.0 : u(rng);
  std::vector<double> first;
  for (const std::string& target : available_targets()) {
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(::testing::Message() << target << ", " << threads << " threads");
      const Seeds got = check(X, n, d, k, 3, w, threads, target);
      if (target == available_targets().front()) {
        if (first.empty()) first = got.centres;
        EXPECT_TRUE(same_bits(first, got.centres)) << "thread count changed the centres";
      }
    }
  }
}

// Streamed through a RowSource: bitwise the in-memory plain seeding.
TYPED_TEST(SeedingTest, StreamedBitwise) {
  using T = TypeParam;
  const std::size_t d = 16, g = row_source_granule(d, sizeof(T)), n = 2 * g + 777, k = 20;
  const auto X = blobs<T>(n, d, 20, 6, 6.0);
  auto memory = detail::make_cpu_engine<T>(MatrixView<T>(X.data(), n, d), {}, 2, "");
  const std::vector<double> want = plain(*memory, k, 9);
  ChunkSource<T> src(X, n, d);
  auto streamed = detail::make_cpu_engine<T>(src, {}, 2, "");
  const std::size_t before = src.passes();
  EXPECT_TRUE(same_bits(want, bounded(*streamed, k, 9).centres));
  // The plain seeding reads the source twice a centre; keeping a candidate re-reads it only
  // while its lowerings do not fit (the first steps).
  EXPECT_LT(src.passes() - before, 3 * k / 2) << "passes over the source";
}

// The public kmeans_plusplus: its indices name the rows the plain seeding chooses (the centres
// are those rows minus the engine's shift, bit for bit), with weights, on 1 and 3 threads.
TYPED_TEST(SeedingTest, IndicesAreThePlainSeedingsRows) {
  using T = TypeParam;
  const std::size_t n = 4000, d = 19, k = 50;
  const auto X = blobs<T>(n, d, 30, 8, 6.0, 20.0);
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> u(0.1, 3);
  std::vector<double> w(n);
  for (double& v : w) v = u(rng);
  for (int threads : {1, 3}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    KMeansOptions o;
    o.seed = 12;
    o.n_threads = threads;
    o.sample_weight = w;
    const SeedResult<T> got = kmeans_plusplus(MatrixView<T>(X.data(), n, d), k, o);
    auto engine = detail::make_cpu_engine<T>(MatrixView<T>(X.data(), n, d), w, threads, "");
    std::mt19937_64 r(o.seed);
    const std::vector<double> want = detail::init_kmeanspp_plain(*engine, k, r);
    ASSERT_EQ(got.indices.size(), k);
    ASSERT_EQ(want.size(), k * d);
    for (std::size_t t = 0; t < k; ++t) {
      const auto i = static_cast<std::size_t>(got.indices[t]);
      ASSERT_LT(i, n);
      for (std::size_t j = 0; j < d; ++j) {
        EXPECT_EQ(static_cast<double>(X[i * d + j]) - engine->shift()[j], want[t * d + j]) << "centre " << t;
        EXPECT_EQ(got.centers[t * d + j], X[i * d + j]);
      }
    }
  }
}

// 16-bit rows (float16 and bfloat16, widened a chunk at a time as the engine reads them, on AMX
// tiles where the CPU has them): bitwise the plain seeding on the same engine, with weights, on
// 1 and 3 threads.
TEST(Seeding, HalfInputBitwise) {
  const std::size_t n = 5000, d = 24, k = 40;
  const auto X = blobs<float>(n, d, 30, 5, 6.0);
  std::vector<double> w(n);
  for (std::size_t i = 0; i < n; ++i) w[i] = 0.5 + static_cast<double>(i % 7);
  for (HalfType type : {HalfType::kFloat16, HalfType::kBFloat16}) {
    std::vector<float> Xt = X;
    const std::vector<std::uint16_t> H = testing::to_half(Xt, type);
    for (int threads : {1, 3}) {
      SCOPED_TRACE(::testing::Message() << (type == HalfType::kFloat16 ? "float16" : "bfloat16") << ", " << threads
                                        << " threads");
      auto source = detail::make_half_source(HalfView{H.data(), n, d, d, type}, threads);
      auto engine = detail::make_cpu_engine<float>(*source, w, threads, "");
      const std::vector<double> want = plain(*engine, k, 21);
      const Seeds got = bounded(*engine, k, 21);
      EXPECT_TRUE(same_bits(want, got.centres));
      // The plain seeding computes N distances per centre and per candidate (2 + ln K each step).
      const std::uint64_t trials = 2 + static_cast<std::uint64_t>(std::log(static_cast<double>(k)));
      EXPECT_LT(got.distances, static_cast<std::uint64_t>(n) * (k + (k - 1) * trials));
    }
  }
}

// In low dimension the bounds skip most distances (the plain seeding computes N per centre
// and N per candidate); in high dimension the triangle inequality proves far less.
TYPED_TEST(SeedingTest, BoundsSkipMostDistances) {
  using T = TypeParam;
  const std::size_t n = 20000, d = 3, k = 128;
  const auto X = blobs<T>(n, d, 16, 12, 10.0);
  const Seeds s = check(X, n, d, k, 1);
  const std::size_t trials = 2 + static_cast<std::size_t>(std::log(static_cast<double>(k)));
  const double full = static_cast<double>(n) * static_cast<double>(k + (k - 1) * trials);
  EXPECT_LT(static_cast<double>(s.distances), 0.2 * full) << s.distances << " of " << full;
  EXPECT_GE(s.distances, n) << "the first centre's distances are all computed";
}

// k-means||: the same centres for any thread count, streamed or in memory, with weights.
TYPED_TEST(SeedingTest, ParallelInitIsDeterministic) {
  using T = TypeParam;
  const std::size_t d = 12, g = row_source_granule(d, sizeof(T)), n = g + 999, k = 40;
  const auto X = blobs<T>(n, d, 30, 3, 5.0, 20.0);
  std::vector<double> w(n);
  std::mt19937_64 rng(8);
  for (auto& v : w) v = static_cast<double>(rng() % 4);  // zeros included
  KMeansOptions o;
  o.n_clusters = k;
  o.init = InitMethod::kMeansParallel;
  o.max_iter = 3;
  o.seed = 17;
  o.sample_weight = w;
  std::vector<T> first;
  for (int threads : {1, 2, 3}) {
    o.n_threads = threads;
    const auto r = fit(MatrixView<T>(X.data(), n, d), o);
    if (first.empty()) first = r.centroids;
    EXPECT_EQ(std::memcmp(first.data(), r.centroids.data(), first.size() * sizeof(T)), 0) << threads << " threads";
  }
  ChunkSource<T> src(X, n, d);
  const auto s = fit(src, o);
  EXPECT_EQ(std::memcmp(first.data(), s.centroids.data(), first.size() * sizeof(T)), 0) << "streamed";
  o.seed = 18;
  const auto other = fit(MatrixView<T>(X.data(), n, d), o);
  EXPECT_NE(std::memcmp(first.data(), other.centroids.data(), first.size() * sizeof(T)), 0) << "the seed is used";
}

// k-means||'s rounds over rows in memory with D >= 16 are filtered by the 8-bit sketch (all
// but the first eighth of the first round): the centres are bitwise those of unfiltered rounds (seed_sketch off, and streamed
// rows, which have no sketch), on every compiled target (the default one with 1 and 3
// threads), with weights, on awkward D, duplicates, overlapping and well separated blobs and
// data far from the origin; and the filter skips most of the pairs.
TYPED_TEST(SeedingTest, ParallelInitSketchedRoundsBitwise) {
  using T = TypeParam;
  struct Shape {
    std::size_t n, d, k;
    double spread, offset;
  };
  const Shape shapes[] = {{3001, 16, 60, 4.0, 0.0}, {2500, 33, 100, 1.0, 0.0}, {2000, 64, 40, 6.0, 1000.0},
                          {1500, 17, 200, 4.0, -50.0}};
  std::uint64_t all_filtered = 0, all_unfiltered = 0;
  for (const Shape& sh : shapes) {
    auto X = blobs<T>(sh.n, sh.d, sh.k / 2, 41 + sh.d, sh.spread, sh.offset);
    for (std::size_t j = 0; j < sh.d; ++j) X[7 * sh.d + j] = X[8 * sh.d + j];  // duplicate rows
    std::vector<double> w(sh.n);
    std::mt19937_64 rng(sh.n);
    for (auto& v : w) v = static_cast<double>(rng() % 3) + 0.5;
    KMeansOptions o;
    o.n_clusters = sh.k;
    o.init = InitMethod::kMeansParallel;
    o.max_iter = 1;
    o.seed = 5;
    o.sample_weight = w;
    std::uint64_t distances = 0;
    o.seed_callback = [&](const SeedStats& st) {
      if (std::string(st.phase) == "k-means||") distances = st.distances;
    };
    std::vector<T> want;
    {
      KMeansOptions plain = o;
      plain.seed_sketch = false;
      plain.n_threads = 2;
      want = fit(MatrixView<T>(X.data(), sh.n, sh.d), plain).centroids;
    }
    const std::uint64_t unfiltered = distances;
    for (const std::string& target : available_targets()) {
    for (int threads : {1, 3}) {
      if (target != available_targets().front() && threads != 3) continue;  // other targets: 3 threads
      o.n_threads = threads;
      o.target = target;
      const auto got = fit(MatrixView<T>(X.data(), sh.n, sh.d), o).centroids;
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(T)), 0)
          << "d=" << sh.d << " k=" << sh.k << " threads=" << threads << " target=" << target;
      // Rounds 2..5 filtered: fewer pairs than unfiltered rounds (a kept pair costs its
      // candidate's whole panel, so on well separated blobs, where each round's candidates
      // from a row's own blob survive, the saving is small).
      EXPECT_LT(distances, unfiltered) << "d=" << sh.d << " k=" << sh.k;
      all_filtered += threads == 1 ? distances : 0;
    }
    }
    o.target = "";
    all_unfiltered += unfiltered;
    ChunkSource<T> src(X, sh.n, sh.d);
    const auto streamed = fit(src, o).centroids;
    EXPECT_EQ(std::memcmp(want.data(), streamed.data(), want.size() * sizeof(T)), 0) << "streamed d=" << sh.d;
  }
  EXPECT_LT(all_filtered * 2, all_unfiltered) << "the filter skips most pairs over all shapes";
}

// Converged inertia from k-means|| within 1% of k-means++'s (median over 5 seeds).
template <class T>
void expect_parallel_quality(const std::vector<T>& X, std::size_t n, std::size_t d, std::size_t k) {
  std::vector<double> pp, par;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    KMeansOptions o;
    o.n_clusters = k;
    o.seed = seed;
    o.max_iter = 100;
    pp.push_back(fit(MatrixView<T>(X.data(), n, d), o).inertia);
    o.init = InitMethod::kMeansParallel;
    par.push_back(fit(MatrixView<T>(X.data(), n, d), o).inertia);
  }
  std::sort(pp.begin(), pp.end());
  std::sort(par.begin(), par.end());
  EXPECT_LE(par[2], pp[2] * 1.01) << "k-means|| median inertia " << par[2] << " vs k-means++ " << pp[2] << " (k-means++ " << pp[0] << " .. " << pp[4]
                            << ", k-means|| " << par[0] << " .. " << par[4] << ")";
}

TEST(ParallelInit, QualityOnBlobs) {
  const std::size_t n = 20000, d = 16, k = 64;
  expect_parallel_quality(blobs<float>(n, d, 64, 5, 3.0), n, d, k);
}

TEST(ParallelInit, QualityOnFashionMnist) {
  std::size_t n = 0, d = 0;
  const auto X = testing::load_fashion_mnist(8000, n, d);
  ASSERT_FALSE(X.empty()) << "Fashion-MNIST not found: install Debian's dataset-fashion-mnist (make test does)";
  expect_parallel_quality(X, n, d, 32);
}

// Few distinct rows: the rounds draw fewer than K + 1 rows and k-means++ over all rows takes over.
TEST(ParallelInit, FewDistinctRowsFallBack) {
  const std::size_t d = 3, n = 500, k = 6;
  std::vector<float> X(n * d);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < d; ++j) X[i * d + j] = static_cast<float>((i % 6) * 10 + j);
  }
  KMeansOptions o;
  o.n_clusters = k;
  o.init = InitMethod::kMeansParallel;
  const auto r = fit(MatrixView<float>(X.data(), n, d), o);
  EXPECT_EQ(r.inertia, 0.0) << "each of the 6 distinct rows is a centre";
}

TEST(ParallelInit, RefusesBadOptions) {
  const auto X = blobs<float>(100, 2, 3, 1);
  KMeansOptions o;
  o.n_clusters = 3;
  o.init = InitMethod::kMeansParallel;
  o.init_oversampling = 0;
  EXPECT_THROW(fit(MatrixView<float>(X.data(), 100, 2), o), InvalidArgument);
  o.init_oversampling = std::numeric_limits<double>::infinity();
  EXPECT_THROW(fit(MatrixView<float>(X.data(), 100, 2), o), InvalidArgument);
  o.init_oversampling = 2;
  o.init_rounds = 0;
  EXPECT_THROW(fit(MatrixView<float>(X.data(), 100, 2), o), InvalidArgument);
  // Whatever the init: a distributed engine seeds large-K k-means++ with k-means||.
  o.init = InitMethod::kMeansPlusPlus;
  EXPECT_THROW(fit(MatrixView<float>(X.data(), 100, 2), o), InvalidArgument);
  o.init_rounds = 1;
  EXPECT_NO_THROW(fit(MatrixView<float>(X.data(), 100, 2), o));
}

// The seeding callback hears every step of each phase, with times; init_seconds is reported.
TEST(SeedCallback, HearsEveryStep) {
  const std::size_t n = 3000, d = 8, k = 25;
  const auto X = blobs<float>(n, d, 10, 2);
  for (InitMethod m : {InitMethod::kMeansPlusPlus, InitMethod::kMeansParallel}) {
    std::vector<SeedStats> seen;
    KMeansOptions o;
    o.n_clusters = k;
    o.init = m;
    o.n_init = 2;
    o.init_rounds = 3;
    o.seed_callback = [&](const SeedStats& s) { seen.push_back(s); };
    const auto r = fit(MatrixView<float>(X.data(), n, d), o);
    EXPECT_GT(r.init_seconds, 0.0);
    std::size_t pp = 0, par = 0;
    for (const SeedStats& s : seen) {
      EXPECT_LE(s.done, s.total);
      EXPECT_GE(s.seconds, 0.0);
      EXPECT_GE(s.seconds_left, 0.0);
      if (std::string(s.phase) == "k-means++") {
        EXPECT_EQ(s.total, k);
        ++pp;
      } else {
        EXPECT_EQ(std::string(s.phase), "k-means||");
        EXPECT_EQ(s.total, 3u);
        ++par;
      }
    }
    EXPECT_EQ(pp, 2 * k) << "every centre of both runs";
    EXPECT_EQ(par, m == InitMethod::kMeansParallel ? 6u : 0u);
    EXPECT_EQ(seen.back().init_run, 1);
  }
}

// A phase's time starts where the seeding (or the phase before it) did, so its first step's
// work counts: the phases' last times add up to init_seconds. (k-means|| with one round: the
// round is most of the seeding, and its time was once measured from its own report, ~0.) The
// time between the last step and the seeding's end is not in any phase: a few milliseconds
// of the thread being descheduled there (a loaded CI host, a seeding of ~7 ms) once left the
// phases at 39% of init_seconds. So up to three fits: a phase that misses its work misses it
// in every one, a preemption does not recur at the same spot.
TEST(SeedCallback, PhaseTimesAddUpToTheSeeding) {
  const std::size_t n = 20000, d = 16, k = 64;
  const auto X = blobs<float>(n, d, 16, 8);
  for (InitMethod m : {InitMethod::kMeansPlusPlus, InitMethod::kMeansParallel}) {
    SCOPED_TRACE(m == InitMethod::kMeansParallel ? "k-means||" : "k-means++");
    double best = 0, best_sum = 0, best_init = 0;
    for (int attempt = 0; attempt < 3 && best < 0.9; ++attempt) {
      std::map<std::string, double> last;
      KMeansOptions o;
      o.n_clusters = k;
      o.init = m;
      o.init_rounds = 1;
      o.max_iter = 1;
      o.seed_callback = [&](const SeedStats& s) { last[s.phase] = s.seconds; };
      const auto r = fit(MatrixView<float>(X.data(), n, d), o);
      double sum = 0;
      for (const auto& [phase, seconds] : last) sum += seconds;
      EXPECT_EQ(last.size(), m == InitMethod::kMeansParallel ? 2u : 1u);
      EXPECT_LE(sum, r.init_seconds * (1 + 1e-9) + 1e-6);
      if (r.init_seconds > 0 && sum / r.init_seconds >= best) {
        best = sum / r.init_seconds;
        best_sum = sum;
        best_init = r.init_seconds;
      }
    }
    EXPECT_GE(best, 0.9) << "phases " << best_sum << " s of a seeding of " << best_init << " s";
  }
}

// ---- ExactSum: the exact accumulator k-means|| sums its potentials with ----

double exact_sum(const std::vector<double>& v) {
  detail::ExactSum s;
  for (double x : v) s.add(x);
  return s.value();
}

bool same_double(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(ExactSum, RoundsOnceToNearestEven) {
  EXPECT_EQ(exact_sum({}), 0.0);
  EXPECT_EQ(exact_sum({0.0, 0.0}), 0.0);
  EXPECT_EQ(exact_sum({1.5}), 1.5);
  // 2^20 terms of 2^-60 after a 1: naive double addition loses every one of them.
  std::vector<double> v{1.0};
  v.insert(v.end(), std::size_t{1} << 20, std::ldexp(1.0, -60));
  EXPECT_EQ(exact_sum(v), 1.0 + std::ldexp(1.0, -40));
  // Ties go to even; anything below the tie breaks it upwards.
  EXPECT_EQ(exact_sum({1.0, std::ldexp(1.0, -53)}), 1.0);
  EXPECT_EQ(exact_sum({1.0 + std::ldexp(1.0, -52), std::ldexp(1.0, -53)}), 1.0 + std::ldexp(1.0, -51));
  EXPECT_EQ(exact_sum({1.0, std::ldexp(1.0, -53), std::ldexp(1.0, -200)}), 1.0 + std::ldexp(1.0, -52));
  // Subnormals add exactly; the largest doubles overflow to infinity.
  const double tiny = std::numeric_limits<double>::denorm_min();
  EXPECT_EQ(exact_sum({tiny, tiny, 3 * tiny}), 5 * tiny);
  EXPECT_EQ(exact_sum({std::numeric_limits<double>::min(), tiny}), std::numeric_limits<double>::min() + tiny);
  const double big = std::numeric_limits<double>::max();
  EXPECT_EQ(exact_sum({big, 0.0}), big);
  EXPECT_TRUE(std::isinf(exact_sum({big, big})));
  EXPECT_THROW(exact_sum({std::numeric_limits<double>::quiet_NaN()}), std::invalid_argument);
  EXPECT_THROW(exact_sum({-std::numeric_limits<double>::infinity()}), std::invalid_argument);
  // Signed: cancellation is exact, and negative sums round as their magnitudes do.
  EXPECT_EQ(exact_sum({1.0, -1.0}), 0.0);
  EXPECT_EQ(exact_sum({1e300, 1.0, -1e300}), 1.0);
  EXPECT_EQ(exact_sum({-1.0, -std::ldexp(1.0, -53), -std::ldexp(1.0, -200)}), -(1.0 + std::ldexp(1.0, -52)));
  EXPECT_EQ(exact_sum({-tiny, 2 * tiny}), tiny);
  EXPECT_EQ(exact_sum({-big, -big / 4}), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(exact_sum({-3.0, 1.0}), -2.0);
}

// Against a sum in __float128, exact for these values (53-bit mantissas over 40 binades and
// 2^12 terms need at most 105 bits), rounded once to double.
TEST(ExactSum, MatchesQuadPrecisionOnRandomValues) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(1, 2);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t n = 1 + rng() % 4096;
    std::vector<double> v(n);
    __float128 q = 0;
    for (double& x : v) {
      x = std::ldexp(u(rng), static_cast<int>(rng() % 40) - 20) * (trial % 2 && rng() % 3 == 0 ? -1 : 1);
      q += x;
    }
    ASSERT_TRUE(same_double(exact_sum(v), static_cast<double>(q))) << trial;
  }
}

// The same bits whatever the order of the additions and however the values are split among
// accumulators (threads, MPI ranks) and merged, over the whole range of doubles.
TEST(ExactSum, IndependentOfOrderAndSplits) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> v(20000);
  for (double& x : v) x = std::ldexp(u(rng), static_cast<int>(rng() % 2000) - 1070) * (rng() % 2 ? -1 : 1);
  const double want = exact_sum(v);
  for (int trial = 0; trial < 5; ++trial) {
    std::shuffle(v.begin(), v.end(), rng);
    const std::size_t parts = 1 + rng() % 7;
    std::vector<detail::ExactSum> acc(parts);
    for (double x : v) acc[rng() % parts].add(x);
    detail::ExactSum total;
    for (std::size_t p = parts; p-- > 0;) total.merge(acc[p].limbs().data());
    EXPECT_TRUE(same_double(total.value(), want));
  }
}

// The blocked running sums of search_cumulative, as its comment defines them, one row at a time.
std::vector<double> blocked_running_sums(const std::vector<float>& cl, const std::vector<double>* w) {
  std::vector<double> cum(cl.size());
  double start = 0, q = 0;
  for (std::size_t i = 0; i < cl.size(); ++i) {
    if (i % detail::kDrawBlock == 0) {
      start += q;
      q = 0;
    }
    q += (w ? (*w)[i] : 1.0) * static_cast<double>(cl[i]);
    cum[i] = start + q;
  }
  return cum;
}

// search_cumulative against the definition above (numpy.searchsorted on those sums), on sizes
// around the block and the eight-block pass, with and without weights, with targets drawn at
// random, equal to running sums, zero and beyond the total; and within rounding of the exact
// running sums (long double).
TEST(SearchCumulative, MatchesItsDefinition) {
  std::mt19937_64 rng(5);
  const std::size_t B = detail::kDrawBlock;
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, B - 1, B, B + 1, 8 * B - 1, 8 * B, 8 * B + 5, 17 * B + 77}) {
    for (bool weighted : {false, true}) {
      std::vector<float> cl(n);
      std::vector<double> w(n);
      std::exponential_distribution<float> e(1.0f);
      std::uniform_real_distribution<double> u(0.0, 3.0);
      for (std::size_t i = 0; i < n; ++i) {
        cl[i] = (i % 7 == 3) ? 0.0f : e(rng);  // some rows already centres
        w[i] = u(rng);
      }
      const std::vector<double> cum = blocked_running_sums(cl, weighted ? &w : nullptr);
      std::vector<double> targets = {0.0, cum.back(), cum.back() * 1.5};
      std::uniform_int_distribution<std::size_t> pick(0, n - 1);
      for (int t = 0; t < 20; ++t) targets.push_back(std::uniform_real_distribution<double>(0, 1)(rng) * cum.back());
      for (int t = 0; t < 10; ++t) targets.push_back(cum[pick(rng)]);
      const auto got = detail::search_cumulative(cl.data(), weighted ? w.data() : nullptr, n, targets);
      ASSERT_EQ(got.size(), targets.size());
      long double exact = 0;
      std::vector<long double> ex(n);
      for (std::size_t i = 0; i < n; ++i) ex[i] = exact += (weighted ? w[i] : 1.0) * static_cast<long double>(cl[i]);
      for (std::size_t t = 0; t < targets.size(); ++t) {
        const auto want = static_cast<std::size_t>(std::lower_bound(cum.begin(), cum.end(), targets[t]) - cum.begin());
        EXPECT_EQ(got[t], std::min(want, n - 1)) << "n " << n << " weighted " << weighted << " target " << targets[t];
        if (targets[t] > cum.back()) continue;
        const long double tol = 1e-12L * ex.back();
        EXPECT_GE(ex[got[t]] + tol, targets[t]);
        if (got[t] > 0) EXPECT_LE(ex[got[t] - 1], targets[t] + tol);
      }
    }
  }
}

}  // namespace
}  // namespace flashkm
