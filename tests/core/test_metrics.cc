// Cosine (spherical) and inner-product k-means against float64 textbook references.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "core/backend.hpp"
#include "core/fit_engine.hpp"
#include "testlib.hpp"

namespace flashkm {
namespace {

struct Ref {
  std::vector<double> centroids;
  std::vector<std::int32_t> labels;
  double inertia = 0;
  int n_iter = 0;
};

// Textbook Lloyd in float64 for the inner-product metrics, with flashkm's loop semantics
// (strict convergence keeps the centroids that produced the labels; otherwise a final
// assignment), tol = 0. Cosine: argmax x.c over unit centroids, update = normalised sum of
// w x / ||x||, inertia = sum w (1 - cos). Dot: argmax x.c, update = mean, inertia = -sum w x.c.
template <class T>
Ref reference(const std::vector<T>& X, std::size_t n, std::size_t d, std::vector<double> c, std::size_t k,
              int max_iter, Metric metric, const std::vector<double>& w) {
  const bool cosine = metric == Metric::kCosine;
  auto normalise = [&](std::vector<double>& v) {
    for (std::size_t r = 0; r < k; ++r) {
      double s = 0;
      for (std::size_t j = 0; j < d; ++j) s += v[r * d + j] * v[r * d + j];
      if (s > 0) {
        for (std::size_t j = 0; j < d; ++j) v[r * d + j] /= std::sqrt(s);
      }
    }
  };
  if (cosine) normalise(c);
  auto assign = [&](const std::vector<double>& cc, std::vector<std::int32_t>& lab, double* inertia) {
    *inertia = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double norm = 0;
      for (std::size_t j = 0; j < d; ++j) norm += double(X[i * d + j]) * double(X[i * d + j]);
      norm = std::sqrt(norm);
      double best = -INFINITY;
      std::int32_t arg = 0;
      for (std::size_t r = 0; r < k; ++r) {
        double dot = 0;
        for (std::size_t j = 0; j < d; ++j) dot += double(X[i * d + j]) * cc[r * d + j];
        if (dot > best) {
          best = dot;
          arg = static_cast<std::int32_t>(r);
        }
      }
      lab[i] = arg;
      const double wi = w.empty() ? 1.0 : w[i];
      *inertia += cosine ? wi * (1 - (norm > 0 ? best / norm : 0.0)) : -wi * best;
    }
  };
  Ref ref;
  ref.labels.assign(n, -1);
  std::vector<std::int32_t> prev;
  for (int it = 1; it <= max_iter; ++it) {
    assign(c, ref.labels, &ref.inertia);
    ref.n_iter = it;
    if (it > 1 && ref.labels == prev) {
      ref.centroids = c;
      return ref;
    }
    prev = ref.labels;
    std::vector<double> sums(k * d, 0.0), ws(k, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      double norm = 0;
      for (std::size_t j = 0; j < d; ++j) norm += double(X[i * d + j]) * double(X[i * d + j]);
      const double wi = (w.empty() ? 1.0 : w[i]) * (cosine ? (norm > 0 ? 1 / std::sqrt(norm) : 0.0) : 1.0);
      for (std::size_t j = 0; j < d; ++j) sums[ref.labels[i] * d + j] += wi * double(X[i * d + j]);
      ws[ref.labels[i]] += wi;
    }
    for (std::size_t r = 0; r < k; ++r) {
      if (ws[r] > 0) {
        for (std::size_t j = 0; j < d; ++j) c[r * d + j] = sums[r * d + j] / ws[r];
      }
    }
    if (cosine) normalise(c);
  }
  assign(c, ref.labels, &ref.inertia);
  ref.centroids = c;
  return ref;
}

// Blobs around random directions at different radii, far from the origin in places, plus
// all-zero rows for cosine.
std::vector<float> directional(std::size_t n, std::size_t d, std::size_t k, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> radius(0.5, 40.0);
  std::vector<double> dirs(k * d);
  for (double& v : dirs) v = g(rng);
  std::vector<float> X(n * d);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t c = rng() % k;
    const double r = radius(rng);
    for (std::size_t j = 0; j < d; ++j) X[i * d + j] = static_cast<float>(r * (dirs[c * d + j] + 0.3 * g(rng)));
  }
  return X;
}

void check(Metric metric, bool weighted, std::size_t n, std::size_t d, std::size_t k) {
  const std::vector<float> X = directional(n, d, k, 17 + k);
  const std::vector<double> c0 = testing::pick_rows(X, d, testing::distinct_ids(n, k, 5));
  std::vector<double> w;
  if (weighted) {
    for (std::size_t i = 0; i < n; ++i) w.push_back(0.25 + double(i % 4));
  }
  KMeansOptions o = testing::explicit_init(c0, k, d);
  o.metric = metric;
  o.tol = 0;
  o.max_iter = 6;
  o.sample_weight = w;
  const KMeansResult<float> r = fit(MatrixView<float>(X.data(), n, d), o);
  const Ref ref = reference(X, n, d, c0, k, 6, metric, w);
  for (const auto& h : r.history) ASSERT_EQ(h.empty_relocated, 0u) << "iteration " << h.iteration;
  EXPECT_EQ(r.n_iter, ref.n_iter);
  EXPECT_EQ(r.labels, ref.labels);
  for (std::size_t i = 0; i < k * d; ++i) {
    EXPECT_NEAR(r.centroids[i], ref.centroids[i], 1e-5 * (1 + std::abs(ref.centroids[i]))) << i;
  }
  EXPECT_NEAR(r.inertia, ref.inertia, 1e-9 * std::abs(ref.inertia) + 1e-6);
  if (metric == Metric::kCosine) {
    for (std::size_t r0 = 0; r0 < k; ++r0) {
      double s = 0;
      for (std::size_t j = 0; j < d; ++j) s += double(r.centroids[r0 * d + j]) * r.centroids[r0 * d + j];
      EXPECT_NEAR(s, 1.0, 1e-6) << "centroid " << r0 << " is not unit";
    }
  }
  // predict, score and transform speak the same metric.
  PredictOptions p;
  p.metric = metric;
  p.sample_weight = w;
  EXPECT_EQ(predict(MatrixView<float>(X.data(), n, d), r.centroids_view(), p), r.labels);
  // (score sees the centroids rounded to float32; fit's inertia used them in float64)
  EXPECT_NEAR(score(MatrixView<float>(X.data(), n, d), r.centroids_view(), p), -r.inertia,
              1e-6 * std::abs(r.inertia) + 1e-6);
  const std::vector<float> t = transform(MatrixView<float>(X.data(), n, d), r.centroids_view(), p);
  for (std::size_t i = 0; i < n; i += 97) {
    const auto row = t.begin() + static_cast<std::ptrdiff_t>(i * k);
    EXPECT_EQ(std::min_element(row, row + static_cast<std::ptrdiff_t>(k)) - row, r.labels[i]) << "row " << i;
  }
}

TEST(Metrics, CosineMatchesSphericalReference) { check(Metric::kCosine, false, 3000, 12, 7); }
TEST(Metrics, CosineWeightedWideK) { check(Metric::kCosine, true, 2500, 33, 40); }
TEST(Metrics, DotMatchesReference) { check(Metric::kDot, false, 3000, 12, 7); }
TEST(Metrics, DotWeightedWideK) { check(Metric::kDot, true, 2500, 33, 40); }

TEST(Metrics, CosineZeroRowsGetLabelZeroAndDoNotPull) {
  const std::size_t n = 2000, d = 8, k = 5, zeros = 37;
  const std::vector<float> X = directional(n, d, k, 3);
  std::vector<float> Xz = X;
  Xz.insert(Xz.end(), zeros * d, 0.0f);
  const std::vector<double> c0 = testing::pick_rows(X, d, testing::distinct_ids(n, k, 9));
  KMeansOptions o = testing::explicit_init(c0, k, d);
  o.metric = Metric::kCosine;
  o.max_iter = 10;
  const auto a = fit(MatrixView<float>(X.data(), n, d), o);
  const auto b = fit(MatrixView<float>(Xz.data(), n + zeros, d), o);
  EXPECT_EQ(a.centroids, b.centroids);
  for (std::size_t i = n; i < n + zeros; ++i) EXPECT_EQ(b.labels[i], 0);
  EXPECT_NEAR(b.inertia - a.inertia, double(zeros), 1e-6);
}

TEST(Metrics, EuclideanIsUntouched) {
  const std::size_t n = 3000, d = 10, k = 6;
  const auto X = testing::blobs<float>(n, d, k, 4, 3.0, 50.0);
  KMeansOptions o;
  o.n_clusters = k;
  const auto a = fit(MatrixView<float>(X.data(), n, d), o);
  o.metric = Metric::kEuclidean;
  const auto b = fit(MatrixView<float>(X.data(), n, d), o);
  EXPECT_EQ(a.centroids, b.centroids);
}

// The metric is fixed when the engine is made (core/engine.hpp), with no call that switches it
// later: the inner-product metrics' engines take the rows uncentred (shift zero) but keep the
// column means for mean_variance (tol's scale), a Euclidean engine centres on them, and the fit
// driver refuses an engine made for another metric than the options'.
TEST(Metrics, EngineIsMadeForItsMetric) {
  const std::size_t n = 300, d = 5;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<double> X(n * d);
  for (std::size_t i = 0; i < X.size(); ++i) X[i] = 50.0 + 3.0 * g(rng);
  const MatrixView<double> view(X.data(), n, d);
  auto euclid = detail::make_engine<double>(view, {}, 2, "");
  EXPECT_EQ(euclid->metric(), Metric::kEuclidean);
  for (Metric m : {Metric::kCosine, Metric::kDot}) {
    auto e = detail::make_engine<double>(view, {}, 2, "", 0, m);
    EXPECT_EQ(e->metric(), m);
    for (std::size_t j = 0; j < d; ++j) {
      EXPECT_EQ(e->shift()[j], 0.0);
      EXPECT_GT(euclid->shift()[j], 40.0);
      EXPECT_EQ(e->mean()[j], euclid->mean()[j]);
    }
    EXPECT_EQ(e->mean_variance(), euclid->mean_variance());
  }
  // Cosine: seeding and total_weight() take the sample weights w, a run's Lloyd steps w / ||x||.
  std::vector<double> w(n);
  for (std::size_t i = 0; i < n; ++i) w[i] = 0.5 + static_cast<double>(i % 5);
  auto cos = detail::make_engine<double>(view, w, 2, "", 0, Metric::kCosine);
  EXPECT_EQ(cos->weights(), w.data());
  double total = 0, normalised = 0, potential = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double sq = 0, dc = 0;
    for (std::size_t j = 0; j < d; ++j) {
      sq += X[i * d + j] * X[i * d + j];
      dc += (X[i * d + j] - X[j]) * (X[i * d + j] - X[j]);  // to row 0, the centre below
    }
    total += w[i];
    normalised += w[i] / std::sqrt(sq);
    potential += w[i] * dc;
  }
  EXPECT_EQ(cos->total_weight(), total);
  const double seeded = cos->seed_start(X.data(), 2);  // row 0 (the shift is zero)
  EXPECT_NEAR(seeded, potential, 1e-9 * potential);
  cos->seed_end();
  const std::size_t k = 2;
  std::vector<double> c = {1, 0, 0, 0, 0, 0, 1, 0, 0, 0}, sums(k * d), wsums(k);
  std::size_t changed = 0;
  cos->begin_run(Prune::kOff, k);
  cos->assign_update(c.data(), k, sums.data(), wsums.data(), &changed);
  EXPECT_NEAR(wsums[0] + wsums[1], normalised, 1e-12 * normalised);
  EXPECT_EQ(cos->total_weight(), total);
  KMeansOptions o;
  o.n_clusters = 3;
  o.metric = Metric::kCosine;
  EXPECT_THROW(detail::fit_engine<double>(detail::make_engine<double>(view, {}, 2, ""), o), std::logic_error);
  const auto fit = detail::fit_engine<double>(detail::make_engine<double>(view, {}, 2, "", 0, Metric::kCosine), o);
  EXPECT_EQ(fit.labels.size(), n);
}

}  // namespace
}  // namespace flashkm
