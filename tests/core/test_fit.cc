// End-to-end: flashkm::fit against a float64 textbook Lloyd from the same initial centroids.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <random>

#include "testlib.hpp"

namespace flashkm {
namespace {

struct Case {
  const char* name;
  std::size_t n, d, k;
  double spread, offset;
  bool weighted;
  // Long float32 runs on many points meet a genuine near-tie sooner or later, after which the
  // two trajectories part; big cases compare a few iterations.
  int max_iter = 40;
};

// Compares a fit with the reference: labels (up to genuine ties), inertia to 1e-5 relative,
// centroids to float32 rounding of the coordinates' magnitude.
template <class T>
void check_against_reference(const std::vector<T>& X, std::size_t n, std::size_t d, std::size_t k,
                             const std::vector<double>& C0, const std::vector<double>& w, int max_iter,
                             double tol) {
  KMeansOptions o = testing::explicit_init(C0, k, d);
  o.max_iter = max_iter;
  o.tol = tol;
  o.sample_weight = w;
  const auto got = fit(MatrixView<T>(X.data(), n, d), o);
  const auto ref = testing::reference_lloyd(X, n, d, C0, k, max_iter,
                                            tol * testing::mean_variance(X, n, d), w);
  ASSERT_EQ(got.centroids.size(), k * d);
  ASSERT_EQ(got.labels.size(), n);
  // A tie here means two centroids at the same float64 distance to float32 precision.
  const double rel_tie = sizeof(T) == 4 ? 1e-5 : 1e-12;
  const std::size_t ties = testing::expect_labels_match(X, d, ref.centroids, got.labels, ref.labels, rel_tie);
  EXPECT_LE(ties, n / 1000 + 1) << "too many ties to be genuine";
  EXPECT_NEAR(got.inertia, ref.inertia, 1e-5 * ref.inertia + 1e-9);
  if (ties == 0) {
    EXPECT_EQ(got.n_iter, ref.n_iter);
    double scale = 0;
    for (double v : ref.centroids) scale = std::max(scale, std::abs(v));
    // The centroid is a float64 mean rounded once to T: one ulp of the largest coordinate,
    // plus float64 summation error.
    const double tol_c = (sizeof(T) == 4 ? 1.2e-7 : 1e-14) * scale * 2 + 1e-12;
    for (std::size_t i = 0; i < k * d; ++i) ASSERT_NEAR(double(got.centroids[i]), ref.centroids[i], tol_c) << i;
  }
  // The returned labels are the assignment of the returned centroids -- of their float64 values
  // before the one rounding to T, so against the rounded ones allow ties at that resolution:
  // a coordinate moved by delta moves a distance by up to 2 |x - c| sqrt(D) delta.
  double cmax = 0, dmax = 0;
  for (T v : got.centroids) cmax = std::max(cmax, std::abs(double(v)));
  for (std::size_t i = 0; i < n; ++i) dmax = std::max(dmax, testing::sqdist(&X[i * d], &got.centroids[got.labels[i] * d], d));
  const double delta = cmax * std::numeric_limits<T>::epsilon();
  const double abs_tie = 2 * std::sqrt(dmax * double(d)) * delta + double(d) * delta * delta;
  testing::expect_labels_match(X, d, got.centroids, got.labels,
                               testing::nearest(X, n, d, got.centroids, k), rel_tie, abs_tie);
}

template <class T>
class FitTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(FitTest, Types);

TYPED_TEST(FitTest, MatchesFloat64TextbookLloyd) {
  using T = TypeParam;
  const Case cases[] = {
      {"blobs", 3000, 16, 20, 3.0, 0.0, false},
      {"weighted", 2000, 9, 7, 3.0, 0.0, true},
      {"D=1", 1500, 1, 6, 5.0, 0.0, false},
      {"K=1", 800, 33, 1, 1.0, 0.0, false},
      {"large offset 1e4", 3000, 17, 12, 2.0, 1e4, false},
      {"wide D=129", 600, 129, 15, 2.0, 0.0, false},
      {"D=1000", 300, 1000, 8, 1.0, 0.0, false},
      // Enough rows for the fused tile path (assign + tile-local update in one pass).
      {"fused tiles", 50000, 12, 25, 2.0, 0.0, false, 6},
      {"fused tiles, weighted, offset", 50000, 12, 25, 2.0, 1e4, true, 6},
  };
  std::uint64_t seed = 11;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto X = testing::blobs<T>(c.n, c.d, c.k, seed++, c.spread, c.offset);
    const auto C0 = testing::pick_rows(X, c.d, testing::distinct_ids(c.n, c.k, seed++));
    std::vector<double> w;
    if (c.weighted) {
      std::mt19937_64 rng(seed++);
      for (std::size_t i = 0; i < c.n; ++i) w.push_back(double(rng() % 5));  // zeros included
    }
    check_against_reference(X, c.n, c.d, c.k, C0, w, c.max_iter, 1e-4);
    check_against_reference(X, c.n, c.d, c.k, C0, w, 3, 0.0);  // stops on max_iter
  }
}

TYPED_TEST(FitTest, KEqualsNEveryPointItsOwnCluster) {
  using T = TypeParam;
  const std::size_t n = 64, d = 5;
  auto X = testing::blobs<T>(n, d, 8, 5);
  std::vector<std::size_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) ids[i] = (i * 37) % n;
  const auto C0 = testing::pick_rows(X, d, ids);
  KMeansOptions o = testing::explicit_init(C0, n, d);
  const auto r = fit(MatrixView<T>(X.data(), n, d), o);
  // The first update moves nothing: converged on tolerance after one iteration.
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.n_iter, 1);
  EXPECT_NEAR(r.inertia, 0.0, 1e-18);  // float64 rounding of x - shift + shift
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(ids[r.labels[i]], i);
  // k-means++ with K = N also ends with every point alone.
  o.init = InitMethod::kMeansPlusPlus;
  const auto r2 = fit(MatrixView<T>(X.data(), n, d), o);
  EXPECT_NEAR(r2.inertia, 0.0, 1e-9);
}

TYPED_TEST(FitTest, DuplicatePointsAndEmptyClusters) {
  using T = TypeParam;
  // 12 distinct points, each repeated 50 times, shuffled; K = 20 > distinct values, so some
  // clusters must stay empty or be relocated onto duplicates: the result must still be valid.
  const std::size_t distinct = 12, reps = 50, d = 3, k = 20, n = distinct * reps;
  auto base = testing::blobs<T>(distinct, d, distinct, 8, 10.0);
  std::vector<T> X(n * d);
  const auto order = testing::distinct_ids(n, n, 9);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < d; ++j) X[order[i] * d + j] = base[(i % distinct) * d + j];
  }
  // Which of several equally far duplicates takes an empty cluster is a genuine tie, so check
  // the properties instead of one trajectory: labels are the nearest centroids, the inertia is
  // theirs, and every distinct point ends up a centroid.
  KMeansOptions o;
  o.n_clusters = k;
  for (InitMethod m : {InitMethod::kMeansPlusPlus, InitMethod::kRandom}) {
    o.init = m;
    const auto r = fit(MatrixView<T>(X.data(), n, d), o);
    EXPECT_NEAR(r.inertia, 0.0, 1e-6);
    // Centroids that are means of identical points equal them only up to rounding.
    testing::expect_labels_match(X, d, r.centroids, r.labels, testing::nearest(X, n, d, r.centroids, k),
                                 1e-6, 1e-20);
  }
}

TYPED_TEST(FitTest, EmptyClusterIsRelocatedToFarthestPoint) {
  using T = TypeParam;
  // Two tight groups; the third initial centroid is far from everything and gets no points.
  std::vector<T> X = {0, 0, 0.1f, 0, 0, 0.1f, 10, 10, 10.1f, 10, 10, 10.1f, 30, 30};
  const std::size_t n = 7, d = 2, k = 3;
  std::vector<double> C0 = {0, 0, 10, 10, -1000, -1000};
  check_against_reference(X, n, d, k, C0, {}, 20, 0.0);
  KMeansOptions o = testing::explicit_init(C0, k, d);
  const auto r = fit(MatrixView<T>(X.data(), n, d), o);
  ASSERT_GE(r.history.size(), 1u);
  EXPECT_EQ(r.history[0].empty_relocated, 1u);
  EXPECT_EQ(r.labels[6], 2);  // the far point (30, 30) now has its own cluster
  EXPECT_EQ(r.centroids[4], T(30));
}

TYPED_TEST(FitTest, NInitKeepsLowestInertiaAndHistoryIsComplete) {
  using T = TypeParam;
  const std::size_t n = 2000, d = 4, k = 9;
  auto X = testing::blobs<T>(n, d, k, 21, 2.0);
  KMeansOptions o;
  o.n_clusters = k;
  o.init = InitMethod::kRandom;
  o.n_init = 5;
  o.seed = 3;
  const auto all = fit(MatrixView<T>(X.data(), n, d), o);
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < 5; ++r) {
    // Each run's last recorded iteration belongs to run r.
    int iters = 0;
    for (const auto& h : all.history) iters += h.init_run == r;
    EXPECT_GE(iters, 1);
  }
  for (const auto& h : all.history) best = std::min(best, h.inertia);
  EXPECT_LE(all.inertia, best * (1 + 1e-12));
  // The fit is reproducible from the seed, and another seed changes it.
  EXPECT_EQ(fit(MatrixView<T>(X.data(), n, d), o).centroids, all.centroids);
}

TYPED_TEST(FitTest, KMeansPlusPlusBeatsRandomOnSeparatedBlobs) {
  using T = TypeParam;
  const std::size_t n = 5000, d = 8, k = 25;
  auto X = testing::blobs<T>(n, d, k, 77, 20.0);
  KMeansOptions o;
  o.n_clusters = k;
  o.max_iter = 1;  // compare the seeding itself
  double pp = 0, rnd = 0;
  for (std::uint64_t s = 0; s < 5; ++s) {
    o.seed = s;
    o.init = InitMethod::kMeansPlusPlus;
    pp += fit(MatrixView<T>(X.data(), n, d), o).history[0].inertia;
    o.init = InitMethod::kRandom;
    rnd += fit(MatrixView<T>(X.data(), n, d), o).history[0].inertia;
  }
  EXPECT_LT(pp, 0.5 * rnd);
}

TYPED_TEST(FitTest, CallbackSeesEveryIterationAndCanStop) {
  using T = TypeParam;
  const std::size_t n = 3000, d = 6, k = 30;
  auto X = testing::blobs<T>(n, d, 10, 31, 1.0);
  KMeansOptions o;
  o.n_clusters = k;
  o.tol = 0;
  int calls = 0;
  o.callback = [&](const IterationStats& s) {
    ++calls;
    EXPECT_EQ(s.iteration, calls);
    EXPECT_GT(s.seconds, 0.0);
    return s.iteration < 3;
  };
  const auto r = fit(MatrixView<T>(X.data(), n, d), o);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(r.n_iter, 3);
  EXPECT_EQ(r.stop_reason, StopReason::kCallback);
  EXPECT_STREQ(to_string(r.stop_reason), "callback");
  EXPECT_FALSE(r.converged);
  // Labels are those of the returned centroids even though the run was cut short.
  EXPECT_EQ(predict(MatrixView<T>(X.data(), n, d), r.centroids_view()), r.labels);

  // With several runs, stopping ends the whole fit: no further initialisations or runs, and
  // the result says it was stopped even when an earlier run converged with lower inertia.
  o.n_init = 3;
  o.tol = 1e-4;
  o.callback = [&](const IterationStats& s) { return !(s.init_run == 1 && s.iteration == 2); };
  const auto r3 = fit(MatrixView<T>(X.data(), n, d), o);
  EXPECT_EQ(r3.stop_reason, StopReason::kCallback);
  EXPECT_FALSE(r3.converged);
  EXPECT_EQ(r3.history.back().init_run, 1);
  EXPECT_EQ(r3.history.back().iteration, 2);
}

TYPED_TEST(FitTest, PredictTransformScoreAgreeWithFit) {
  using T = TypeParam;
  const std::size_t n = 1200, d = 7, k = 11;
  auto X = testing::blobs<T>(n, d, k, 41, 3.0);
  KMeansOptions o;
  o.n_clusters = k;
  const auto r = fit(MatrixView<T>(X.data(), n, d), o);
  const MatrixView<T> Xv(X.data(), n, d);
  EXPECT_EQ(predict(Xv, r.centroids_view()), r.labels);
  EXPECT_NEAR(-score(Xv, r.centroids_view()), r.inertia, 1e-9 * r.inertia);
  const auto D = transform(Xv, r.centroids_view());
  ASSERT_EQ(D.size(), n * k);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t c = 0; c < k; ++c) {
      const double exact = std::sqrt(testing::sqdist(&X[i * d], &r.centroids[c * d], d));
      ASSERT_NEAR(double(D[i * k + c]), exact, 1e-3 * (exact + 1));
    }
    const auto row = D.begin() + static_cast<std::ptrdiff_t>(i * k);
    EXPECT_EQ(std::min_element(row, row + static_cast<std::ptrdiff_t>(k)) - row, r.labels[i]);
  }
  // Row strides larger than D are honoured.
  std::vector<T> wide(n * (d + 3), T(-777));
  for (std::size_t i = 0; i < n; ++i) std::copy_n(&X[i * d], d, &wide[i * (d + 3)]);
  EXPECT_EQ(predict(MatrixView<T>(wide.data(), n, d, d + 3), r.centroids_view()), r.labels);
}

TEST(FitRealData, FashionMnistMatchesReference) {
  std::size_t n = 0, d = 0;
  const auto X = testing::load_fashion_mnist(6000, n, d);
  ASSERT_FALSE(X.empty()) << "Fashion-MNIST not found: install Debian's dataset-fashion-mnist "
                             "(make test does)";
  const std::size_t k = 10;
  const auto C0 = testing::pick_rows(X, d, testing::distinct_ids(n, k, 1));
  check_against_reference(X, n, d, k, C0, {}, 25, 1e-4);
}

}  // namespace
}  // namespace flashkm
