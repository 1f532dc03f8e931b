// Results do not depend on the thread count: bitwise-equal centroids, labels and history.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <random>

#include "testlib.hpp"

namespace flashkm {
namespace {

template <class T>
bool bitwise_equal(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <class T>
void expect_same_for_all_thread_counts(const std::vector<T>& X, std::size_t n, std::size_t d, KMeansOptions o) {
  std::vector<KMeansResult<T>> results;
  for (int threads : {1, 2, 3, 8}) {
    o.n_threads = threads;
    results.push_back(fit(MatrixView<T>(X.data(), n, d), o));
  }
  const auto& first = results.front();
  for (std::size_t r = 1; r < results.size(); ++r) {
    SCOPED_TRACE(::testing::Message() << "run " << r);
    const auto& other = results[r];
    EXPECT_TRUE(bitwise_equal(first.centroids, other.centroids));
    EXPECT_EQ(first.labels, other.labels);
    EXPECT_EQ(std::memcmp(&first.inertia, &other.inertia, sizeof(double)), 0);
    ASSERT_EQ(first.history.size(), other.history.size());
    for (std::size_t i = 0; i < first.history.size(); ++i) {
      EXPECT_EQ(std::memcmp(&first.history[i].inertia, &other.history[i].inertia, sizeof(double)), 0);
      EXPECT_EQ(std::memcmp(&first.history[i].center_shift, &other.history[i].center_shift, sizeof(double)), 0);
      EXPECT_EQ(first.history[i].labels_changed, other.history[i].labels_changed);
    }
  }
}

template <class T>
class DeterminismTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(DeterminismTest, Types);

TYPED_TEST(DeterminismTest, KMeansPlusPlusAndLloydAreThreadCountIndependent) {
  using T = TypeParam;
  // Large enough for many update blocks and assign tasks, with clusters spanning blocks.
  const std::size_t n = 20011, d = 33, k = 37;
  auto X = testing::blobs<T>(n, d, 12, 5, 1.5);
  KMeansOptions o;
  o.n_clusters = k;
  o.max_iter = 15;
  o.n_init = 2;
  expect_same_for_all_thread_counts(X, n, d, o);
}

TYPED_TEST(DeterminismTest, WeightedRandomInitWithEmptyClusters) {
  using T = TypeParam;
  const std::size_t n = 9001, d = 7, k = 64;
  auto X = testing::blobs<T>(n, d, 4, 6, 6.0);
  std::vector<double> w(n);
  std::mt19937_64 rng(8);
  for (double& v : w) v = double(rng() % 7) * 0.37;
  KMeansOptions o;
  o.n_clusters = k;
  o.init = InitMethod::kRandom;
  o.sample_weight = w;
  o.max_iter = 20;
  expect_same_for_all_thread_counts(X, n, d, o);
}

TEST(Determinism, OneGiantClusterSpansEveryBlock) {
  // K = 2 with one far outlier: nearly all points in one run, reduced over many blocks.
  const std::size_t n = 50000, d = 16;
  auto X = testing::blobs<float>(n, d, 1, 9, 0.0);
  for (std::size_t j = 0; j < d; ++j) X[j] = 1000.0f;
  KMeansOptions o;
  o.n_clusters = 2;
  o.max_iter = 5;
  expect_same_for_all_thread_counts(X, n, d, o);
}

TEST(Determinism, ATeamSmallerThanAskedForGivesTheSameResult) {
  // Called from inside a parallel region, OpenMP gives the engine's regions one thread
  // although n_threads asks for 3: the counting sort must split rows by the real team size.
  const std::size_t n = 20000, d = 256, k = 300;  // K too large for the fused step at this D
  const auto X = testing::blobs<float>(n, d, 20, 13);
  KMeansOptions o;
  o.n_clusters = k;
  o.init = InitMethod::kRandom;
  o.max_iter = 4;
  o.n_threads = 3;
  const KMeansResult<float> normal = fit(MatrixView<float>(X.data(), n, d), o);
  KMeansResult<float> nested;
  const int levels = omp_get_max_active_levels();
  omp_set_max_active_levels(1);  // no nested teams: the engine's regions get one thread
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    nested = fit(MatrixView<float>(X.data(), n, d), o);
  }
  omp_set_max_active_levels(levels);
  EXPECT_TRUE(bitwise_equal(normal.centroids, nested.centroids));
  EXPECT_EQ(normal.labels, nested.labels);
}

TEST(Determinism, PredictAndTransformAreThreadCountIndependent) {
  const std::size_t n = 7777, d = 21, k = 50;
  auto X = testing::blobs<float>(n, d, k, 10);
  const auto C = testing::pick_rows(X, d, testing::distinct_ids(n, k, 11));
  std::vector<float> Cf(C.begin(), C.end());
  const MatrixView<float> Xv(X.data(), n, d), Cv(Cf.data(), k, d);
  PredictOptions one;
  one.n_threads = 1;
  PredictOptions many;
  many.n_threads = 3;
  EXPECT_EQ(predict(Xv, Cv, one), predict(Xv, Cv, many));
  EXPECT_TRUE(bitwise_equal(transform(Xv, Cv, one), transform(Xv, Cv, many)));
  EXPECT_EQ(score(Xv, Cv, one), score(Xv, Cv, many));
}

}  // namespace
}  // namespace flashkm
