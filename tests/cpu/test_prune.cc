// Bounded assignment (KMeansOptions::prune): pruning changes the speed, never the answer. Every
// test fits the same data with prune off and on and requires bitwise-equal results; a few
// check that the bounds really skip work.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <utility>

#include "cpu/cpu_engine.hpp"
#include "cpu/groups.hpp"
#include "testlib.hpp"

namespace flashkm {
namespace {

using testing::blobs;
using testing::ChunkSource;

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Everything but the distance counts and the times must be bitwise equal; where `fewer`, no
// iteration of `on` computes more distances than `off`'s (not so between auto and on: auto
// starts its bounds later, and later bounds are tighter).
template <class T>
void expect_bitwise(const KMeansResult<T>& off, const KMeansResult<T>& on, bool fewer = true) {
  EXPECT_TRUE(same_bits(off.centroids, on.centroids));
  EXPECT_EQ(off.labels, on.labels);
  EXPECT_TRUE(same_bits(off.inertia, on.inertia)) << off.inertia << " vs " << on.inertia;
  EXPECT_EQ(off.n_iter, on.n_iter);
  EXPECT_EQ(off.stop_reason, on.stop_reason);
  EXPECT_EQ(off.best_init, on.best_init);
  ASSERT_EQ(off.history.size(), on.history.size());
  for (std::size_t i = 0; i < off.history.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "iteration " << i);
    const IterationStats &a = off.history[i], &b = on.history[i];
    EXPECT_TRUE(same_bits(a.inertia, b.inertia));
    EXPECT_TRUE(same_bits(a.center_shift, b.center_shift));
    EXPECT_EQ(a.labels_changed, b.labels_changed);
    EXPECT_EQ(a.empty_relocated, b.empty_relocated);
    EXPECT_EQ(a.init_run, b.init_run);
    if (fewer) EXPECT_LE(b.distances, a.distances);
  }
}

// Fits with prune off and on (same options otherwise); returns the pruned result.
template <class T>
KMeansResult<T> check(const std::vector<T>& X, std::size_t n, std::size_t d, KMeansOptions o) {
  o.prune = Prune::kOff;
  const KMeansResult<T> off = fit(MatrixView<T>(X.data(), n, d), o);
  for (const auto& h : off.history) EXPECT_EQ(h.distances, static_cast<std::uint64_t>(n) * o.n_clusters);
  o.prune = Prune::kOn;
  KMeansResult<T> on = fit(MatrixView<T>(X.data(), n, d), o);
  expect_bitwise(off, on);
  return on;
}

// Options running k centroids for up to max_iter iterations to strict convergence (tol = 0):
// the late iterations are where pruning bites.
KMeansOptions to_convergence(std::size_t k, int max_iter) {
  KMeansOptions o;
  o.n_clusters = k;
  o.max_iter = max_iter;
  o.tol = 0;
  return o;
}

// Fits with prune off, on (check) and auto (same options otherwise); returns on's result and
// auto's, auto bitwise the others (its distance counts may fall below on's: its bounds start
// later, and later bounds are tighter).
std::pair<KMeansResult<float>, KMeansResult<float>> on_and_auto(const std::vector<float>& X, std::size_t n,
                                                                std::size_t d, KMeansOptions o) {
  KMeansResult<float> on = check(X, n, d, o);
  o.prune = Prune::kAuto;
  KMeansResult<float> a = fit(MatrixView<float>(X.data(), n, d), o);
  expect_bitwise(a, on, false);
  return {std::move(on), std::move(a)};
}

std::uint64_t total_distances(const std::vector<IterationStats>& h) {
  std::uint64_t t = 0;
  for (const auto& s : h) t += s.distances;
  return t;
}

template <class T>
class PruneTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(PruneTest, Types);

struct Shape {
  std::size_t n, d, k;
};

// The usual sweep: N and K not multiples of any tile or panel, K = 1, K = N, D = 1, D past the
// vector width, very large D, and K large enough for many groups.
TYPED_TEST(PruneTest, RandomShapesBitwise) {
  using T = TypeParam;
  const Shape shapes[] = {{1, 1, 1},     {7, 1, 7},     {300, 1, 5},    {1000, 3, 1},   {2000, 2, 9},
                          {2500, 17, 37}, {3001, 33, 300}, {1500, 129, 64}, {400, 2048, 12}, {5000, 8, 257},
                          {64, 5, 64},    {4097, 64, 130}};
  std::uint64_t seed = 1;
  for (const Shape& s : shapes) {
    SCOPED_TRACE(::testing::Message() << s.n << " x " << s.d << ", K = " << s.k);
    const auto X = blobs<T>(s.n, s.d, std::max<std::size_t>(1, s.k / 2), seed++, 3.0);
    KMeansOptions o = to_convergence(s.k, 40);
    o.seed = seed;
    check(X, s.n, s.d, o);
  }
}

// n sample weights drawn uniformly from [0, 3).
std::vector<double> random_weights(std::size_t n, unsigned seed) {
  std::vector<double> w(n);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 3.0);
  for (double& v : w) v = u(rng);
  return w;
}

// Every compiled target, with 1, 2 and 3 threads; weights; two init runs.
TYPED_TEST(PruneTest, EveryTargetThreadCountAndWeights) {
  using T = TypeParam;
  const std::size_t n = 6007, d = 19, k = 70;
  const auto X = blobs<T>(n, d, 40, 11, 2.0);
  const std::vector<double> w = random_weights(n, 3);
  for (const std::string& target : available_targets()) {
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(::testing::Message() << target << ", " << threads << " threads");
      KMeansOptions o;
      o.n_clusters = k;
      o.max_iter = 25;
      o.n_init = 2;
      o.target = target;
      o.n_threads = threads;
      o.sample_weight = w;
      const auto on = check(X, n, d, o);
      EXPECT_LT(total_distances(on.history), static_cast<std::uint64_t>(on.history.size()) * n * k);
    }
  }
}

// Duplicated rows and exact ties (integer data, centroids on data points), at every scale
// from 2^-60 to 2^60, and far from the origin.
TYPED_TEST(PruneTest, DuplicatesTiesScalesAndOffsets) {
  using T = TypeParam;
  const std::size_t n = 3000, d = 6, k = 24;
  const auto base = testing::small_ints<T>(n, d, 5, 2);  // values in [-2, 2]: many duplicates
  for (int e : {-60, -20, 0, 20, 60}) {
    for (double offset : {0.0, 1e4}) {
      SCOPED_TRACE(::testing::Message() << "scale 2^" << e << ", offset " << offset);
      std::vector<T> X(base.size());
      for (std::size_t i = 0; i < X.size(); ++i) X[i] = static_cast<T>(std::ldexp(static_cast<double>(base[i]), e) + offset);
      // Initial centroids on data rows: many points tie exactly between two of them.
      const auto C0 = testing::pick_rows(X, d, testing::distinct_ids(n, k, 9));
      KMeansOptions o = testing::explicit_init(C0, k, d);
      o.max_iter = 30;
      o.tol = 0;
      check(X, n, d, o);
      KMeansOptions r;
      r.n_clusters = k;
      r.init = InitMethod::kRandom;
      r.max_iter = 30;
      r.seed = 2;
      check(X, n, d, r);
    }
  }
}

// Near-ties: every point sits between two centroids up to a perturbation of relative size
// 2^-e, from coarse to below float rounding.
TYPED_TEST(PruneTest, NearTiesAtEveryScale) {
  using T = TypeParam;
  const std::size_t n = 2000, d = 9, k = 2;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> g;
  for (int e : {2, 10, 20, 23, 30, 52}) {
    SCOPED_TRACE(::testing::Message() << "perturbation 2^-" << e);
    std::vector<T> X(n * d);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < d; ++j) X[i * d + j] = static_cast<T>(j == 0 ? std::ldexp(g(rng), -e) : 3 * g(rng));
    }
    std::vector<double> C0(k * d, 0.0);
    C0[0] = -1;
    C0[d] = 1;  // the plane x_0 = 0 is the tie
    KMeansOptions o = testing::explicit_init(C0, k, d);
    o.max_iter = 20;
    o.tol = 0;
    check(X, n, d, o);
  }
}

// Clusters that empty after the first iteration (many K on few points, half of them of zero
// weight, random init): relocated by the driver to the farthest points, whose distances a
// pruned iteration must recompute. Seeds that relocate late are common enough at this shape.
TYPED_TEST(PruneTest, EmptyClustersRelocated) {
  using T = TypeParam;
  const std::size_t n = 300, d = 2, k = 60;
  std::vector<double> w(n, 1.0);
  for (std::size_t i = 0; i < n; i += 2) w[i] = 0.0;
  std::size_t relocated = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto X = blobs<T>(n, d, 3, seed, 3.0);
    KMeansOptions o = to_convergence(k, 100);
    o.init = InitMethod::kRandom;
    o.seed = seed;
    o.sample_weight = w;
    const auto on = check(X, n, d, o);
    for (std::size_t i = 1; i < on.history.size(); ++i) relocated += on.history[i].empty_relocated;
  }
  EXPECT_GT(relocated, 0u) << "the data must empty clusters after the first iteration";
}

TYPED_TEST(PruneTest, CosineBitwiseAndPrunes) {
  using T = TypeParam;
  for (const Shape& s : {Shape{4000, 16, 20}, Shape{3001, 65, 130}, Shape{500, 3, 1}}) {
    SCOPED_TRACE(::testing::Message() << s.n << " x " << s.d << ", K = " << s.k);
    const auto X = blobs<T>(s.n, s.d, 10, 7, 3.0, 2.0);
    KMeansOptions o = to_convergence(s.k, 40);
    o.metric = Metric::kCosine;
    const auto on = check(X, s.n, s.d, o);
    if (on.history.size() > 3) EXPECT_LT(on.history.back().distances, static_cast<std::uint64_t>(s.n) * s.k);
  }
}

// The bounds prove most labels after the first iterations on clustered data.
TEST(Prune, DistanceCountsFall) {
  const std::size_t n = 20000, d = 32, k = 256;
  const auto X = blobs<float>(n, d, k, 3, 4.0);
  KMeansOptions o = to_convergence(k, 30);
  const auto on = check(X, n, d, o);
  ASSERT_GE(on.history.size(), 4u);
  const std::uint64_t full = static_cast<std::uint64_t>(n) * k;
  EXPECT_EQ(on.history[0].distances, full);  // no bounds yet
  EXPECT_LT(on.history[2].distances, full / 4);
  EXPECT_LT(on.history.back().distances, full / 10);
}

// Auto prunes Euclidean fits; the dot metric stays unpruned and refuses prune = on.
TEST(Prune, AutoAndDot) {
  const std::size_t n = 20000, d = 32, k = 256;
  const auto X = blobs<float>(n, d, k, 3, 4.0);
  KMeansOptions o = to_convergence(k, 20);
  const auto a = fit(MatrixView<float>(X.data(), n, d), o);
  ASSERT_GE(a.history.size(), 3u);
  EXPECT_LT(a.history.back().distances, static_cast<std::uint64_t>(n) * k / 10);
  o.metric = Metric::kDot;
  const auto dot = fit(MatrixView<float>(X.data(), n, d), o);
  for (const auto& h : dot.history) EXPECT_EQ(h.distances, static_cast<std::uint64_t>(n) * k);
  o.prune = Prune::kOn;
  EXPECT_THROW(fit(MatrixView<float>(X.data(), n, d), o), InvalidArgument);
}

// Where the bounds do not pay (heavily overlapping clusters), auto stops pruning after its trial
// iterations; on keeps pruning. Both are bitwise the unpruned fit.
TEST(Prune, AutoGivesUpWhereBoundsDoNotPay) {
  // Heavily overlapping clusters: most rows stay near several centroids, and the bounds prove
  // little for many iterations. In 16 dimensions a distance is cheap against a row's upkeep
  // (break-even 16 / 112 of the distances, AutoPrune::break_even_for), so the bounds do not
  // pay here. K x D = 2048 is the least work per row at which auto tries them at all (at D = 8,
  // K = 256 or 512, and at D = 32, K = 64, the fractions kept falling on AVX2, and auto went on).
  const std::size_t n = 20000, d = 16, k = 128;
  const auto X = blobs<float>(n, d, 100, 3, 0.5);
  const auto [on, a] = on_and_auto(X, n, d, to_convergence(k, 80));
  const std::uint64_t full = static_cast<std::uint64_t>(n) * k;
  // Auto's bounds start once an iteration moved at most 5% of the labels (their first
  // iteration scores every distance); then the first unpruned iteration after them.
  std::size_t started = 0;
  while (started < a.history.size() && a.history[started].distances == full) ++started;
  ASSERT_LT(started, a.history.size()) << "auto never pruned";
  std::size_t gave_up = started;
  while (gave_up < a.history.size() && a.history[gave_up].distances < full) ++gave_up;
  EXPECT_GE(gave_up - started, 19u) << "two windows of 10 bounded iterations come first";
  EXPECT_LT(gave_up, a.history.size()) << "auto kept pruning";
  for (std::size_t i = gave_up; i < a.history.size(); ++i) EXPECT_EQ(a.history[i].distances, full) << i;
  EXPECT_LT(on.history.back().distances, full);
}

// Auto starts the bounds only after an iteration that moved at most 5% of the labels (while
// the centroids move far, bounds set early loosen by every drift that follows): until then
// every iteration computes every distance, the first bounded one too (it sets the bounds), and
// from the next on the bounds skip distances; on bounds from the first iteration. Both are
// bitwise the unpruned fit.
TEST(Prune, AutoStartsOnceFewLabelsMove) {
  const std::size_t n = 20000, d = 32, k = 96;
  const auto X = blobs<float>(n, d, 64, 11, 1.0);  // overlapping: the first iterations move many rows
  const auto [on, a] = on_and_auto(X, n, d, to_convergence(k, 60));
  const std::uint64_t full = static_cast<std::uint64_t>(n) * k;
  ASSERT_GE(on.history.size(), 4u);
  EXPECT_LT(on.history[1].distances, full) << "on prunes from the second iteration";
  std::size_t calm = 0;  // the first iteration that moved at most 5% of the labels
  while (calm < a.history.size() && a.history[calm].labels_changed * 20 > n) ++calm;
  ASSERT_GE(calm, 2u) << "the data should move many labels in the first iterations";
  ASSERT_LT(calm + 2, a.history.size());
  for (std::size_t i = 0; i <= calm + 1; ++i) EXPECT_EQ(a.history[i].distances, full) << "iteration " << i;
  EXPECT_LT(a.history[calm + 2].distances, full) << "the bounds prune from their second iteration";
  EXPECT_LT(total_distances(a.history), total_distances(on.history) + (calm + 1) * full);
}

// The group masks' bit count (SWAR, no popcnt in the baseline build) against a loop over the
// bits: every single bit, all bits, and random masks of every density.
TEST(Prune, GroupMaskBitCount) {
  auto slow = [](std::uint64_t v) {
    std::size_t n = 0;
    for (int b = 0; b < 64; ++b) n += (v >> b) & 1u;
    return n;
  };
  EXPECT_EQ(detail::bits_set64(0), 0u);
  EXPECT_EQ(detail::bits_set64(~std::uint64_t{0}), 64u);
  for (int b = 0; b < 64; ++b) EXPECT_EQ(detail::bits_set64(std::uint64_t{1} << b), 1u) << b;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const std::uint64_t a = rng(), b = rng(), c = rng();
    for (const std::uint64_t v : {a, a & b, a & b & c, a | b, a | b | c}) EXPECT_EQ(detail::bits_set64(v), slow(v)) << v;
  }
}

// Where a row's distances are cheap (K x D below 2048 multiply-adds), auto does not try the
// bounds at all: every iteration computes every distance, from the first, even on data where
// the bounds would skip most of them; on prunes there, bitwise alike.
TEST(Prune, AutoLeavesCheapRowsUnpruned) {
  const std::size_t n = 20000;
  for (const auto& [d, k] : {std::pair<std::size_t, std::size_t>{16, 16}, {32, 63}, {8, 100}}) {
    const auto X = blobs<float>(n, d, k, 5, 1.5);  // the bounds skip most of the distances
    const auto [on, a] = on_and_auto(X, n, d, to_convergence(k, 30));
    const std::uint64_t full = static_cast<std::uint64_t>(n) * k;
    for (const auto& h : a.history) EXPECT_EQ(h.distances, full) << "D " << d << " K " << k << " it " << h.iteration;
    ASSERT_GE(on.history.size(), 3u) << "D " << d << " K " << k;
    EXPECT_LT(on.history.back().distances, full / 2) << "D " << d << " K " << k << ": on prunes this data";
  }
}

// Sets an environment variable for one scope, restoring what it held.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// The total distances of a fit on overlapping clusters in high dimension (6000 x 96, K = 48:
// K lower bounds fit in a row), checked bitwise against the unpruned fit, with one environment
// variable set (value null: unset).
std::uint64_t high_d_distances(const char* var, const char* value) {
  const std::size_t n = 6000, d = 96, k = 48;
  const auto X = blobs<float>(n, d, 48, 21, 0.5);
  ScopedEnv env(var, value);
  return total_distances(check(X, n, d, to_convergence(k, 60)).history);
}

// Where K lower bounds fit in a row of X (D > K), the engine keeps one per centroid and, on
// overlapping clusters in high dimension, scores fewer groups than with one bound per group;
// both kinds are bitwise the unpruned fit. (ctest also runs the PruneTests but the every-target
// sweep with per-centroid bounds forced, on every shape.)
TEST(Prune, PerCentroidBoundsScoreFewerGroupsAtHighD) {
  // Without the pair filter, which only per-centroid bounds have.
  ScopedEnv pairs("FLASHKM_PRUNE_PAIRS", "0");
  EXPECT_LT(high_d_distances("FLASHKM_PRUNE_BOUNDS", nullptr), high_d_distances("FLASHKM_PRUNE_BOUNDS", "groups"));
}

// The pair filter (per-centroid bounds, several groups): a survivor's own centroid and the
// others its bounds leave are scored one pair at a time, and only groups holding a pair that
// could reach its best are scored whole. Bitwise the unpruned fit either way (check, which also
// checks that no iteration computes more than N*K), and fewer distances than whole groups alone.
TEST(Prune, PairFilterScoresFewerDistances) {
  EXPECT_LT(high_d_distances("FLASHKM_PRUNE_PAIRS", nullptr), high_d_distances("FLASHKM_PRUNE_PAIRS", "0"));
}

// The pair filter (D > K, several groups) on every target, 1 / 2 / 3 threads, with weights:
// bitwise the unpruned fit, never more distances than without it, and fewer where it runs: its
// groups must be wider than a pair's cost, so on the widest target for float (AVX2 or AVX-512,
// 8 or 16 lanes) and on AVX-512 for double; the narrower targets leave it off.
TYPED_TEST(PruneTest, PairFilterEveryTargetThreadCountAndWeights) {
  using T = TypeParam;
  const std::size_t n = 3001, d = 96, k = 40;
  const auto X = blobs<T>(n, d, 40, 13, 0.5);
  const std::vector<double> w = random_weights(n, 5);
  for (const std::string& target : available_targets()) {
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(::testing::Message() << target << ", " << threads << " threads");
      KMeansOptions o = to_convergence(k, 30);
      o.target = target;
      o.n_threads = threads;
      o.sample_weight = w;
      const std::uint64_t pairs = total_distances(check(X, n, d, o).history);
      ScopedEnv env("FLASHKM_PRUNE_PAIRS", "0");
      const std::uint64_t groups = total_distances(check(X, n, d, o).history);
      const bool runs = target == "AVX3" || (std::is_same_v<T, float> && target == "AVX2");
      if (runs) {
        EXPECT_LT(pairs, groups);
      } else {
        EXPECT_EQ(pairs, groups);
      }
    }
  }
}

// Blocks scored whole with the wide panel (per-centroid bounds in narrower groups: the first
// iteration, and blocks whose bounds leave nearly everything). A wide panel holds two or more
// groups, so its centroid indices need not ascend with the lanes. 16 centroids in 8 mirror
// pairs across the plane x_0 = 0, centroid 0 and 9..15 on one side, 8 and 1..7 on the other,
// so that most pairs are split between the two groups of 8 (coherent_order): on AVX2 float
// (8-centroid groups, a 16-centroid wide panel) the panel came out as ids 0 8 10..15 | 1..7 9,
// the higher index of pairs 2..7 in an earlier lane, and this test failed without the
// lowest-index rule. Small integers make every score exact, and rows with x_0 = 0 score both
// centroids of a pair equally: the label must be the lower index, bitwise as the unpruned fit,
// on every target.
TYPED_TEST(PruneTest, WholeBlocksSettleTiesByTheLowestIndex) {
  using T = TypeParam;
  const std::size_t n = 400, d = 24, k = 16;
  std::vector<T> X = testing::small_ints<T>(n, d, 41, 3);
  for (std::size_t r = 0; r < n; ++r) {
    if (r % 3 != 0) X[r * d] = T(0);  // two rows in three on the plane
  }
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> off(-2, 2);
  std::vector<double> C0(k * d);
  for (std::size_t p = 0; p < 8; ++p) {
    const std::size_t plus = p == 0 ? 0 : 8 + p, minus = p == 0 ? 8 : p;
    for (std::size_t j = 1; j < d; ++j) C0[plus * d + j] = C0[minus * d + j] = off(rng);
    C0[plus * d] = 4;
    C0[minus * d] = -4;
  }
  for (const std::string& target : available_targets()) {
    SCOPED_TRACE(target);
    KMeansOptions o = testing::explicit_init(C0, k, d);
    o.max_iter = 3;
    o.tol = 0;
    o.target = target;
    o.n_threads = 1;
    check(X, n, d, o);
  }
}

TYPED_TEST(PruneTest, StreamedBitwise) {
  using T = TypeParam;
  // Several granules (one granule is 16 MiB of rows: 2^18 rows of 16 floats is 16 MiB).
  const std::size_t d = 16, g = row_source_granule(d, sizeof(T)), n = 2 * g + 1234, k = 30;
  const auto X = blobs<T>(n, d, 30, 8, 6.0);
  KMeansOptions o = to_convergence(k, 8);
  o.init = InitMethod::kRandom;
  const auto on = check(X, n, d, o);
  ChunkSource<T> src(X, n, d);
  o.prune = Prune::kOn;
  const auto streamed = fit(src, o);
  expect_bitwise(on, streamed);
  EXPECT_EQ(total_distances(on.history), total_distances(streamed.history));
}

// Same distance counts for any thread count (fixed blocks), not only the same answer.
TEST(Prune, CountsIndependentOfThreads) {
  const std::size_t n = 7000, d = 10, k = 33;
  const auto X = blobs<float>(n, d, 20, 6, 4.0);
  KMeansOptions o;
  o.n_clusters = k;
  o.max_iter = 15;
  o.prune = Prune::kOn;
  o.n_threads = 1;
  const auto one = fit(MatrixView<float>(X.data(), n, d), o);
  o.n_threads = 3;
  const auto three = fit(MatrixView<float>(X.data(), n, d), o);
  ASSERT_EQ(one.history.size(), three.history.size());
  for (std::size_t i = 0; i < one.history.size(); ++i) EXPECT_EQ(one.history[i].distances, three.history[i].distances);
}

// 16-bit input (X truncated to bfloat16 or float16): pruned bitwise the unpruned 16-bit fit and
// the float32 fit of the same values.
void half_input_bitwise(HalfType type, std::uint64_t seed) {
  const std::size_t n = 6000, d = 24, k = 40;
  auto X = blobs<float>(n, d, 30, seed, 5.0);
  const std::vector<std::uint16_t> H = testing::to_half(X, type);
  KMeansOptions o = to_convergence(k, 20);
  const auto on32 = check(X, n, d, o);
  o.prune = Prune::kOff;
  const auto off16 = fit(HalfView{H.data(), n, d, d, type}, o);
  o.prune = Prune::kOn;
  const auto on16 = fit(HalfView{H.data(), n, d, d, type}, o);
  expect_bitwise(off16, on16);
  expect_bitwise(on32, on16);
}

TEST(Prune, BFloat16Input) { half_input_bitwise(HalfType::kBFloat16, 12); }
TEST(Prune, Float16Input) { half_input_bitwise(HalfType::kFloat16, 14); }

// The incremental update (docs/KERNELS.md, "Incremental update"): once few labels move, a step
// applies only the moved rows to the sums it kept. Each incremental step's sums, weights and
// inertia must match a full update of the same labels (to rounding; counts exactly), a cluster
// that empties must hold exactly zero, and the bits must not depend on the thread count. Runs
// Lloyd steps through the engine; at step 20 centroid 0 is sent far away (its cluster empties
// within an incremental step) and at step 21 it comes back. Returns every step's results.
template <class T>
std::vector<double> incremental_against_full(std::size_t n, std::size_t d, std::size_t k, double offset,
                                             bool weighted, int threads, int* incremental_steps,
                                             bool streamed = false, std::vector<std::string>* paths = nullptr) {
  const auto X = blobs<T>(n, d, k, 5, 6.0, offset);
  std::vector<double> w;
  if (weighted) {
    w.resize(n);
    std::mt19937_64 rng(9);
    std::uniform_real_distribution<double> u(0.1, 2.0);
    for (std::size_t i = 0; i < n; ++i) w[i] = i % 7 == 3 ? 0.0 : u(rng);
  }
  ChunkSource<T> source(X, n, d);
  auto engine = streamed ? detail::make_cpu_engine<T>(source, w, threads, "")
                         : detail::make_cpu_engine<T>(MatrixView<T>(X.data(), n, d), w, threads, "");
  auto full = detail::make_cpu_engine<T>(MatrixView<T>(X.data(), n, d), w, threads, "");
  const double* shift = engine->shift();
  double xmax = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < d; ++j) xmax = std::max(xmax, std::abs(static_cast<double>(X[i * d + j]) - shift[j]));
  }
  std::vector<double> c(k * d);
  const auto ids = testing::distinct_ids(n, k, 17);
  for (std::size_t a = 0; a < k; ++a) {
    for (std::size_t j = 0; j < d; ++j) c[a * d + j] = static_cast<double>(X[ids[a] * d + j]) - shift[j];
  }
  engine->begin_run(Prune::kOff, k);
  std::vector<double> sums(k * d), ws(k), rs(k * d), rw(k), trace;
  std::vector<double> saved(d);
  *incremental_steps = 0;
  for (int step = 0; step < 40; ++step) {
    SCOPED_TRACE(::testing::Message() << "step " << step);
    std::vector<double> cc = c;
    if (step == 20) {
      std::copy(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(d), saved.begin());
      for (std::size_t j = 0; j < d; ++j) cc[j] = 1e3 * (xmax + 1);
    }
    std::size_t changed = 0;
    const double inertia = engine->assign_update(cc.data(), k, sums.data(), ws.data(), &changed);
    const std::string path = engine->update_path();
    if (paths != nullptr) paths->push_back(path);
    const bool inc = path.find("+incremental") != std::string::npos;
    *incremental_steps += inc;
    const double ref = full->update(engine->labels(), cc.data(), k, rs.data(), rw.data());
    if (step == 20) {
      EXPECT_TRUE(inc) << path;
      EXPECT_EQ(rw[0], 0.0);
    }
    EXPECT_NEAR(inertia, ref, 1e-10 * ref + 1e-300);
    double wtot = 0;
    for (double v : rw) wtot += v;
    for (std::size_t a = 0; a < k; ++a) {
      if (rw[a] == 0) {
        EXPECT_EQ(ws[a], 0.0) << "cluster " << a;
        for (std::size_t j = 0; j < d; ++j) EXPECT_EQ(sums[a * d + j], 0.0) << "cluster " << a;
        continue;
      }
      if (weighted) {
        EXPECT_NEAR(ws[a], rw[a], 1e-12 * wtot) << "cluster " << a;
      } else {
        EXPECT_EQ(ws[a], rw[a]) << "cluster " << a;
      }
      for (std::size_t j = 0; j < d; ++j) {
        EXPECT_NEAR(sums[a * d + j], rs[a * d + j], 1e-11 * wtot * (xmax + 1)) << "cluster " << a;
      }
    }
    trace.push_back(inertia);
    trace.insert(trace.end(), sums.begin(), sums.end());
    trace.insert(trace.end(), ws.begin(), ws.end());
    for (std::size_t a = 0; a < k; ++a) {
      if (ws[a] > 0) {
        for (std::size_t j = 0; j < d; ++j) c[a * d + j] = sums[a * d + j] / ws[a];
      } else if (step == 20 && a == 0) {
        std::copy(saved.begin(), saved.end(), c.begin());
      }
    }
  }
  return trace;
}

TYPED_TEST(PruneTest, IncrementalUpdateMatchesFull) {
  using T = TypeParam;
  struct Case {
    std::size_t n, d, k;
    double offset;
    bool weighted;
  };
  // Fused (small K) and grouped paths, D = 1 and past the vector width, weights with zeros,
  // data far from the origin.
  for (const Case& cs : {Case{3001, 5, 7, 0.0, false}, Case{4003, 1, 3, 0.0, true}, Case{2500, 37, 60, 1e4, false},
                         Case{5000, 12, 200, 0.0, true}, Case{20011, 9, 10, -3e3, true}}) {
    SCOPED_TRACE(::testing::Message() << cs.n << " x " << cs.d << " x " << cs.k << (cs.weighted ? ", weighted" : ""));
    int inc1 = 0, inc3 = 0;
    const auto one = incremental_against_full<T>(cs.n, cs.d, cs.k, cs.offset, cs.weighted, 1, &inc1);
    const auto three = incremental_against_full<T>(cs.n, cs.d, cs.k, cs.offset, cs.weighted, 3, &inc3);
    EXPECT_GE(inc1, 10);
    EXPECT_EQ(inc1, inc3);
    EXPECT_TRUE(same_bits(one, three)) << "thread count changed the bits";
  }
}

// A step that moved more rows than the engine's cap applies them in batches of consecutive rows
// (inc_apply); each cluster still takes its moves in row order, so the bits are the common
// path's. FLASHKM_PRUNE_MOVE_CAP lowers the cap (max(N/8, 4096) by default, above every move
// count here) to one, so that every step moving two rows or more goes in batches (step 20, whose
// cluster empties, at least); in memory and streamed, fused (small K) and grouped, 1 to 3 threads.
TEST(Prune, IncrementalUpdateBatchedBitwise) {
  struct Case {
    std::size_t n, d, k;
    bool streamed;
    int threads;
  };
  const std::size_t nd = 1000;
  const std::size_t ns = 2 * row_source_granule(nd, sizeof(float)) + 77;
  for (const Case& cs : {Case{5000, 12, 7, false, 3}, Case{5000, 12, 200, false, 1}, Case{4003, 1, 3, false, 3},
                         Case{ns, nd, 6, true, 2}}) {
    SCOPED_TRACE(::testing::Message() << cs.n << " x " << cs.d << " x " << cs.k << (cs.streamed ? ", streamed" : "")
                                      << ", " << cs.threads << " threads");
    int inc_common = 0, inc_batched = 0;
    std::vector<std::string> common_paths, batched_paths;
    const auto common = incremental_against_full<float>(cs.n, cs.d, cs.k, 30.0, true, cs.threads, &inc_common,
                                                        cs.streamed, &common_paths);
    ASSERT_EQ(setenv("FLASHKM_PRUNE_MOVE_CAP", "1", 1), 0);
    const auto batched = incremental_against_full<float>(cs.n, cs.d, cs.k, 30.0, true, cs.threads, &inc_batched,
                                                         cs.streamed, &batched_paths);
    unsetenv("FLASHKM_PRUNE_MOVE_CAP");
    int batched_steps = 0;
    for (const auto& p : common_paths) EXPECT_EQ(p.find("+batched"), std::string::npos) << p;
    for (const auto& p : batched_paths) batched_steps += p.find("+batched") != std::string::npos;
    EXPECT_GE(inc_common, 10);
    EXPECT_EQ(inc_common, inc_batched);
    EXPECT_GE(batched_steps, 1) << "the cap did not send steps through the batches";
    EXPECT_TRUE(same_bits(common, batched)) << "the batches changed the bits";
  }
}

// Weights more than 2^53 apart: the full update's weight of cluster 0 (99 rows of weight 1 and
// one of 1e20) rounds to 1e20, so when the heavy row leaves in an incremental step the running
// weight reaches 0 while 99 members remain; the step must be redone in full (weight 99), not
// report cluster 0 empty.
TEST(Prune, IncrementalUpdateRedoneWhenWeightRoundsAway) {
  const std::size_t n = 200, k = 2;
  std::vector<double> X(n), w(n, 1.0);
  for (std::size_t i = 0; i < 99; ++i) X[i] = 0.01 * static_cast<double>(i);
  X[99] = 5.2;
  w[99] = 1e20;
  for (std::size_t i = 100; i < n; ++i) X[i] = 10 + 0.01 * static_cast<double>(i - 100);
  auto engine = detail::make_cpu_engine<double>(MatrixView<double>(X.data(), n, 1), w, 2, "");
  const double s = engine->shift()[0];
  engine->begin_run(Prune::kOff, k);
  std::vector<double> sums(k), ws(k);
  std::size_t changed = 0;
  const std::vector<double> c1 = {0.5 - s, 10 - s}, c2 = {0.3 - s, 9.9 - s};
  engine->assign_update(c1.data(), k, sums.data(), ws.data(), &changed);
  ASSERT_EQ(engine->labels()[99], 0);
  engine->assign_update(c1.data(), k, sums.data(), ws.data(), &changed);
  EXPECT_EQ(changed, 0u);
  engine->assign_update(c2.data(), k, sums.data(), ws.data(), &changed);
  ASSERT_EQ(changed, 1u);
  ASSERT_EQ(engine->labels()[99], 1);
  EXPECT_EQ(ws[0], 99.0);
  EXPECT_EQ(std::string(engine->update_path()).find("+incremental"), std::string::npos) << engine->update_path();
}

// Streamed through a RowSource in several chunks (each chunk's moves applied while it is in
// memory): bitwise the in-memory engine's steps, fused (small K) and grouped.
TEST(Prune, IncrementalUpdateStreamedBitwise) {
  const std::size_t d = 1000;
  const std::size_t n = 2 * row_source_granule(d, sizeof(float)) + 77;
  for (std::size_t k : {6, 40}) {
    SCOPED_TRACE(::testing::Message() << "k = " << k);
    int inc_mem = 0, inc_stream = 0;
    const auto mem = incremental_against_full<float>(n, d, k, 50.0, true, 2, &inc_mem);
    const auto str = incremental_against_full<float>(n, d, k, 50.0, true, 2, &inc_stream, true);
    EXPECT_GE(inc_mem, 10);
    EXPECT_EQ(inc_mem, inc_stream);
    EXPECT_TRUE(same_bits(mem, str)) << "streaming changed the bits";
  }
}

}  // namespace
}  // namespace flashkm
