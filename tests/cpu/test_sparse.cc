// Sparse CSR input: every compiled sparse kernel against the scalar reference, and the sparse
// fit / predict / transform / score against the dense path on the densified rows and against
// the float64 textbook Lloyd; thread-count determinism; malformed views.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "cpu/aligned_buffer.hpp"
#include "cpu/sparse_kernels.hpp"
#include "testlib.hpp"

namespace flashkm {
namespace {

// A CSR matrix with its dense copy (row-major n x d).
template <class T>
struct Csr {
  std::size_t n = 0, d = 0;
  std::vector<T> values;
  std::vector<std::int32_t> cols;
  std::vector<std::int64_t> offsets;
  std::vector<T> dense;

  CsrView<T> view() const { return {values.data(), cols.data(), offsets.data(), n, d}; }
  MatrixView<T> dense_view() const { return {dense.data(), n, d}; }
};

// Random sparse rows: each entry non-zero with probability `density`; values small integers
// in [-range, range] \ {0} (exact products and sums in float32) or, when range = 0,
// TF-IDF-like positives (each row then scaled to unit norm). Rows listed in `empty` hold
// nothing; column indices are stored in a shuffled order (CSR does not require them sorted).
template <class T>
Csr<T> random_csr(std::size_t n, std::size_t d, double density, std::uint64_t seed, int range = 0,
                  const std::vector<std::size_t>& empty = {}) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Csr<T> m;
  m.n = n;
  m.d = d;
  m.dense.assign(n * d, T(0));
  m.offsets.push_back(0);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::int32_t> cols;
    if (std::find(empty.begin(), empty.end(), i) == empty.end()) {
      for (std::size_t j = 0; j < d; ++j) {
        if (u(rng) < density) cols.push_back(static_cast<std::int32_t>(j));
      }
    }
    std::shuffle(cols.begin(), cols.end(), rng);
    std::vector<double> v(cols.size());
    double sq = 0;
    for (double& x : v) {
      if (range > 0) {
        const int r = static_cast<int>(rng() % static_cast<std::uint64_t>(2 * range)) - range;
        x = r >= 0 ? r + 1 : r;
      } else {
        x = -std::log(u(rng) + 1e-12) + 0.1;
      }
      sq += x * x;
    }
    for (std::size_t t = 0; t < cols.size(); ++t) {
      const T x = static_cast<T>(range > 0 ? v[t] : v[t] / std::sqrt(sq));
      m.values.push_back(x);
      m.cols.push_back(cols[t]);
      m.dense[i * d + static_cast<std::size_t>(cols[t])] = x;
    }
    m.offsets.push_back(static_cast<std::int64_t>(m.values.size()));
  }
  return m;
}

template <class T>
class SparseTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(SparseTest, Types);

constexpr std::size_t kDims[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 127, 128, 129, 1000};
// K around the panel widths (1, 2, 4 and 8 vectors; several panels).
constexpr std::size_t kKs[] = {1, 3, 8, 15, 16, 17, 33, 64, 100, 129, 300};

// The kernels' inputs for one matrix: the rows' squared norms as the engine takes them.
template <class T>
struct Rows {
  std::vector<T> xnorm;
  detail::CsrRef<T> ref;
  explicit Rows(const Csr<T>& m) : xnorm(m.n) {
    for (std::size_t i = 0; i < m.n; ++i) {
      T s = T(0);
      for (auto p = m.offsets[i]; p < m.offsets[i + 1]; ++p) s += m.values[p] * m.values[p];
      xnorm[i] = s;
    }
    ref = {m.values.data(), m.cols.data(), m.offsets.data(), xnorm.data()};
  }
};

template <class T>
const T* pack(const detail::SparseKernels<T>& t, const std::vector<double>& c, std::size_t k, std::size_t d,
              detail::AlignedBuffer<T>& buf) {
  T* p = buf.reserve(t.packed_size(k, d));
  t.pack(c.data(), k, d, p);
  return p;
}

// Small-integer rows and centroids: every product, sum and norm is exact, so each target must
// reproduce the reference bit for bit (labels, the lowest-index tie rule included, distances).
TYPED_TEST(SparseTest, KernelsMatchReferenceExactly) {
  using T = TypeParam;
  const auto& ref = detail::sparse_reference_table<T>();
  std::uint64_t seed = 1;
  for (const auto* table : detail::sparse_kernel_tables<T>()) {
    for (std::size_t d : kDims) {
      for (std::size_t k : kKs) {
        const std::size_t n = 37;
        SCOPED_TRACE(::testing::Message() << table->name << " d=" << d << " k=" << k);
        const Csr<T> m = random_csr<T>(n, d, 0.3, seed++, 5, {0, 20});
        const Rows<T> rows(m);
        const auto cint = testing::small_ints<double>(k, d, seed++, 4);
        detail::AlignedBuffer<T> br, bt;
        const T* pr = pack(ref, cint, k, d, br);
        const T* pt = pack(*table, cint, k, d, bt);

        std::vector<std::int32_t> lr(n, -1), lt(n, 7);
        std::vector<T> dr(n), dt(n);
        ref.assign_rows(rows.ref, pr, k, d, 0, n, lr.data(), dr.data());
        const std::size_t changed = table->assign_rows(rows.ref, pt, k, d, 0, n, lt.data(), dt.data());
        std::size_t expect_changed = 0;
        for (auto l : lr) expect_changed += l != 7;
        EXPECT_EQ(changed, expect_changed);
        EXPECT_EQ(lt, lr);
        EXPECT_EQ(dt, dr);
        // The labels are the float64 nearest centroids (exact data: ties go to the lowest index).
        EXPECT_EQ(lr, testing::nearest(m.dense, n, d, cint, k));

        // A sub-range leaves the rest untouched.
        std::vector<std::int32_t> ls(n, -5);
        std::vector<T> ds(n, T(-1));
        table->assign_rows(rows.ref, pt, k, d, 2, n - 1, ls.data(), ds.data());
        EXPECT_EQ(ls[0], -5);
        EXPECT_EQ(ls[n - 1], -5);
        for (std::size_t i = 2; i + 1 < n; ++i) EXPECT_EQ(ls[i], lr[i]);

        std::vector<T> sr(n * (k + 1), T(-3)), st(n * (k + 1), T(-3));
        ref.sqdist_rows(rows.ref, pr, k, d, 0, n, sr.data(), k + 1);
        table->sqdist_rows(rows.ref, pt, k, d, 0, n, st.data(), k + 1);
        EXPECT_EQ(st, sr);  // the padding column (k) untouched in both
        for (std::size_t i = 0; i < n; ++i) {
          for (std::size_t c = 0; c < k; ++c) {
            ASSERT_EQ(sr[i * (k + 1) + c], static_cast<T>(testing::sqdist(m.dense.data() + i * d, cint.data() + c * d, d)));
          }
        }
      }
    }
  }
}

// Real-valued TF-IDF-like rows: targets agree with the reference on labels up to genuine
// ties and on distances to the rounding of a dot product of nnz terms.
TYPED_TEST(SparseTest, KernelsMatchReferenceOnRealData) {
  using T = TypeParam;
  const auto& ref = detail::sparse_reference_table<T>();
  for (const auto* table : detail::sparse_kernel_tables<T>()) {
    for (std::size_t k : {5, 40, 130}) {
      SCOPED_TRACE(::testing::Message() << table->name << " k=" << k);
      const std::size_t n = 300, d = 500;
      const Csr<T> m = random_csr<T>(n, d, 0.02, 7 + k);
      const Rows<T> rows(m);
      std::vector<double> c(k * d);
      std::mt19937_64 rng(k);
      std::uniform_real_distribution<double> u(0, 0.1);
      for (double& v : c) v = u(rng);
      detail::AlignedBuffer<T> br, bt;
      const T* pr = pack(ref, c, k, d, br);
      const T* pt = pack(*table, c, k, d, bt);
      std::vector<std::int32_t> lr(n, -1), lt(n, -1);
      std::vector<T> dr(n), dt(n);
      ref.assign_rows(rows.ref, pr, k, d, 0, n, lr.data(), dr.data());
      table->assign_rows(rows.ref, pt, k, d, 0, n, lt.data(), dt.data());
      // Distances of unit rows to centroids of norm ~1: a few float ulps of 1 apart at most.
      const double tol = 64 * std::numeric_limits<T>::epsilon();
      for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(dt[i], dr[i], tol);
      testing::expect_labels_match(m.dense, d, c, lt, lr, 0, tol);
    }
  }
}

// Options that start from explicit centroids (float64, k x d).
KMeansOptions from(const std::vector<double>& c0, std::size_t k, std::size_t d, int threads = 2) {
  KMeansOptions o = testing::explicit_init(c0, k, d);
  o.n_threads = threads;
  o.max_iter = 50;
  return o;
}

template <class T>
void expect_near_centroids(const std::vector<T>& got, const std::vector<T>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "at " << i;
}

// The sparse fit against the dense fit of the densified rows and the float64 textbook Lloyd,
// from the same explicit start, on several densities and awkward shapes. The start is rows of X
// plus a dense positive offset: from rows alone, a row sharing no column with any of them is
// at exactly the same distance from all (an exact tie that rounding breaks differently in each
// path, after which the runs need not meet again).
TYPED_TEST(SparseTest, FitMatchesDenseAndTextbookLloyd) {
  using T = TypeParam;
  struct Case {
    std::size_t n, d, k;
    double density;
  };
  const Case cases[] = {{500, 200, 10, 0.05}, {300, 1000, 40, 0.01}, {200, 30, 7, 0.5}, {1, 5, 1, 0.5},
                        {50, 1, 3, 0.7},      {40, 20, 40, 0.2},     {60, 50, 1, 0.1}};
  std::uint64_t seed = 11;
  for (const Case& cs : cases) {
    SCOPED_TRACE(::testing::Message() << "n=" << cs.n << " d=" << cs.d << " k=" << cs.k << " density=" << cs.density);
    Csr<T> m = random_csr<T>(cs.n, cs.d, cs.density, seed++, 0, {cs.n / 2});
    const auto ids = testing::distinct_ids(cs.n, cs.k, seed++);
    std::vector<double> c0 = testing::pick_rows(m.dense, cs.d, ids);
    std::mt19937_64 rng(seed++);
    std::uniform_real_distribution<double> u(0, 0.05);
    for (double& v : c0) v += u(rng);
    const KMeansOptions o = from(c0, cs.k, cs.d);
    const KMeansResult<T> s = fit(m.view(), o);
    const KMeansResult<T> dn = fit(m.dense_view(), o);
    EXPECT_EQ(s.target, dn.target);
    const double tol_abs = o.tol * testing::mean_variance(m.dense, cs.n, cs.d);
    const testing::RefLloyd want = testing::reference_lloyd(m.dense, cs.n, cs.d, c0, cs.k, o.max_iter, tol_abs);
    // A tie here means two centroids at the same float64 distance to the type's precision.
    const double tie = std::is_same_v<T, float> ? 1e-5 : 1e-12;
    const std::size_t ties = testing::expect_labels_match(m.dense, cs.d, want.centroids, s.labels, want.labels, tie);
    testing::expect_labels_match(m.dense, cs.d, want.centroids, s.labels, dn.labels, tie);
    EXPECT_LE(ties, cs.n / 1000 + 1) << "too many ties to be genuine";
    EXPECT_NEAR(s.inertia, want.inertia, 1e-5 * want.inertia + 1e-9);
    if (ties == 0) {
      EXPECT_EQ(s.n_iter, want.n_iter);
      EXPECT_EQ(s.n_iter, dn.n_iter);
      // float64 sums of float rows: the centroids are the reference's rounded to T (float:
      // within a few ulps of values below 1).
      const double ctol = std::is_same_v<T, float> ? 1e-6 : 1e-13;
      std::vector<T> wc(want.centroids.begin(), want.centroids.end());
      expect_near_centroids(s.centroids, wc, ctol);
      expect_near_centroids(s.centroids, dn.centroids, ctol);
    }
  }
}

// Duplicate rows, K = N (every row its own cluster, empty clusters relocated) and weights.
TYPED_TEST(SparseTest, DuplicatesWeightsAndKEqualsN) {
  using T = TypeParam;
  Csr<T> m = random_csr<T>(30, 40, 0.2, 5);
  // Rows 1..5 copies of row 0.
  Csr<T> dup;
  dup.n = m.n;
  dup.d = m.d;
  dup.offsets.push_back(0);
  for (std::size_t i = 0; i < m.n; ++i) {
    const std::size_t src = i <= 5 ? 0 : i;
    for (auto p = m.offsets[src]; p < m.offsets[src + 1]; ++p) {
      dup.values.push_back(m.values[p]);
      dup.cols.push_back(m.cols[p]);
    }
    dup.offsets.push_back(static_cast<std::int64_t>(dup.values.size()));
  }
  dup.dense.assign(dup.n * dup.d, T(0));
  for (std::size_t i = 0; i < dup.n; ++i) {
    for (auto p = dup.offsets[i]; p < dup.offsets[i + 1]; ++p) dup.dense[i * dup.d + dup.cols[p]] = dup.values[p];
  }
  std::vector<double> w(dup.n);
  for (std::size_t i = 0; i < dup.n; ++i) w[i] = 0.5 + static_cast<double>(i % 4);
  for (std::size_t k : {std::size_t{4}, dup.n}) {
    for (auto init : {InitMethod::kMeansPlusPlus, InitMethod::kRandom}) {
      KMeansOptions o;
      o.n_clusters = k;
      o.init = init;
      o.seed = 3;
      o.sample_weight = w;
      const KMeansResult<T> s = fit(dup.view(), o);
      ASSERT_EQ(s.labels.size(), dup.n);
      // Started from the sparse fit's centres, the dense fit stays there.
      std::vector<double> c0(s.centroids.begin(), s.centroids.end());
      KMeansOptions od = from(c0, k, dup.d);
      od.sample_weight = w;
      const KMeansResult<T> dn = fit(dup.dense_view(), od);
      // Relocated clusters may start on copies of one row: exact ties, which rounding breaks.
      testing::expect_labels_match(dup.dense, dup.d, s.centroids, dn.labels, s.labels, 1e-5, 1e-6);
      EXPECT_NEAR(dn.inertia, s.inertia, 1e-5 * std::max(1.0, s.inertia));
    }
  }
}

// Bitwise the same result for 1, 2 and 3 threads, for every init, weighted or not.
TYPED_TEST(SparseTest, ThreadCountDoesNotChangeTheBits) {
  using T = TypeParam;
  const Csr<T> m = random_csr<T>(1200, 300, 0.03, 21, 0, {7, 8, 9});
  std::vector<double> w(m.n);
  for (std::size_t i = 0; i < m.n; ++i) w[i] = 1.0 + static_cast<double>(i % 7) / 3;
  for (auto init : {InitMethod::kMeansPlusPlus, InitMethod::kRandom, InitMethod::kMeansParallel}) {
    for (bool weighted : {false, true}) {
      for (auto metric : {Metric::kEuclidean, Metric::kCosine, Metric::kDot}) {
        SCOPED_TRACE(::testing::Message() << "init=" << static_cast<int>(init) << " weighted=" << weighted
                                          << " metric=" << static_cast<int>(metric));
        KMeansOptions o;
        o.n_clusters = 37;
        o.init = init;
        o.seed = 5;
        o.metric = metric;
        o.max_iter = 20;
        if (weighted) o.sample_weight = w;
        o.n_threads = 1;
        const KMeansResult<T> a = fit(m.view(), o);
        for (int t : {2, 3}) {
          o.n_threads = t;
          const KMeansResult<T> b = fit(m.view(), o);
          EXPECT_EQ(a.labels, b.labels);
          EXPECT_EQ(a.centroids, b.centroids);
          EXPECT_EQ(a.inertia, b.inertia);
          EXPECT_EQ(a.n_iter, b.n_iter);
        }
      }
    }
  }
}

// k-means++ on sparse rows picks rows (its centers are those rows, densified) and is
// deterministic across thread counts.
TYPED_TEST(SparseTest, KmeansPlusPlusPicksRows) {
  using T = TypeParam;
  const Csr<T> m = random_csr<T>(800, 100, 0.05, 31);
  KMeansOptions o;
  o.seed = 9;
  o.n_threads = 1;
  const SeedResult<T> a = kmeans_plusplus(m.view(), 20, o);
  o.n_threads = 3;
  const SeedResult<T> b = kmeans_plusplus(m.view(), 20, o);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.centers, b.centers);
  for (std::size_t c = 0; c < 20; ++c) {
    const auto i = static_cast<std::size_t>(a.indices[c]);
    for (std::size_t j = 0; j < m.d; ++j) ASSERT_EQ(a.centers[c * m.d + j], m.dense[i * m.d + j]);
  }
}

// predict, transform and score on sparse rows equal the dense calls (labels up to ties; values
// to rounding), in every metric.
TYPED_TEST(SparseTest, PredictTransformScoreMatchDense) {
  using T = TypeParam;
  const Csr<T> m = random_csr<T>(400, 300, 0.03, 41, 0, {3});
  const Csr<T> cm = random_csr<T>(25, 300, 0.5, 42);
  const MatrixView<T> C(cm.dense.data(), 25, 300);
  std::vector<double> w(m.n, 2.0);
  for (auto metric : {Metric::kEuclidean, Metric::kCosine, Metric::kDot}) {
    SCOPED_TRACE(static_cast<int>(metric));
    PredictOptions o;
    o.metric = metric;
    o.n_threads = 2;
    const auto ls = predict(m.view(), C, o);
    const auto ld = predict(m.dense_view(), C, o);
    if (metric == Metric::kEuclidean) {
      const std::vector<double> c64(cm.dense.begin(), cm.dense.end());
      testing::expect_labels_match(m.dense, m.d, c64, ls, ld, 1e-5, 1e-5);
    } else {
      std::size_t same = 0;
      for (std::size_t i = 0; i < m.n; ++i) same += ls[i] == ld[i];
      EXPECT_GE(same, m.n - 2);
    }
    const auto ts = transform(m.view(), C, o);
    const auto td = transform(m.dense_view(), C, o);
    ASSERT_EQ(ts.size(), td.size());
    for (std::size_t i = 0; i < ts.size(); ++i) ASSERT_NEAR(ts[i], td[i], 2e-3) << i;
    o.sample_weight = w;
    const double ss = score(m.view(), C, o), sd = score(m.dense_view(), C, o);
    EXPECT_NEAR(ss, sd, 1e-5 * std::abs(sd));
  }
}

// Malformed views and bad values are refused with messages naming the place.
TEST(SparseErrors, MalformedViewsAreRefused) {
  std::vector<float> v{1, 2, 3};
  std::vector<std::int32_t> cols{0, 2, 1};
  std::vector<std::int64_t> off{0, 2, 3};
  KMeansOptions o;
  o.n_clusters = 1;
  auto expect = [&](auto fn, const char* what) {
    try {
      fn();
      ADD_FAILURE() << "no error; expected " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  EXPECT_NO_THROW(fit(CsrView<float>{v.data(), cols.data(), off.data(), 2, 3}, o));
  expect([&] { fit(CsrView<float>{v.data(), cols.data(), off.data(), 2, 2}, o); }, "out of range");
  std::vector<std::int32_t> dupcols{1, 1, 0};
  expect([&] { fit(CsrView<float>{v.data(), dupcols.data(), off.data(), 2, 3}, o); }, "appears twice in row 0");
  std::vector<std::int64_t> bad_off{0, 3, 2};
  expect([&] { fit(CsrView<float>{v.data(), cols.data(), bad_off.data(), 2, 3}, o); }, "decrease at row 1");
  std::vector<float> nan{1, std::nanf(""), 3};
  expect([&] { fit(CsrView<float>{nan.data(), cols.data(), off.data(), 2, 3}, o); }, "NaN at row 0, column 2");
  expect([&] { fit(CsrView<float>{v.data(), cols.data(), off.data(), 0, 3}, o); }, "0 rows");
  o.n_clusters = 3;
  expect([&] { fit(CsrView<float>{v.data(), cols.data(), off.data(), 2, 3}, o); }, "n_clusters");
  std::vector<float> c(2 * 4);
  expect([&] { predict(CsrView<float>{v.data(), cols.data(), off.data(), 2, 3}, MatrixView<float>(c.data(), 2, 4)); },
         "columns");
}

// ---- Bounded assignment over sparse rows (prune): the speed changes, never the answer ----

// Clustered sparse rows: `topics` groups of columns; each row draws most of its non-zeros from
// its topic's columns and a few anywhere, then is scaled to unit norm (TF-IDF-like). Rows
// `dups` copy row 0; a far row with large values is added when `far` is set.
template <class T>
Csr<T> topic_csr(std::size_t n, std::size_t d, std::size_t topics, std::size_t per_row, std::uint64_t seed,
                 std::size_t dups = 0, bool far = false) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  const std::size_t width = std::max<std::size_t>(1, d / topics);
  Csr<T> m;
  m.n = n;
  m.d = d;
  m.dense.assign(n * d, T(0));
  m.offsets.push_back(0);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::int32_t> cols;
    std::vector<double> v;
    if (i > 0 && i <= dups) {
      for (auto p = m.offsets[0]; p < m.offsets[1]; ++p) {
        cols.push_back(m.cols[p]);
        v.push_back(static_cast<double>(m.values[p]));
      }
    } else {
      const std::size_t t = rng() % topics;
      std::vector<char> used(d, 0);
      for (std::size_t q = 0; q < per_row; ++q) {
        const std::size_t j = u(rng) < 0.85 ? std::min(d - 1, t * width + rng() % width) : rng() % d;
        if (used[j]) continue;
        used[j] = 1;
        cols.push_back(static_cast<std::int32_t>(j));
        v.push_back(-std::log(u(rng) + 1e-12) + 0.1);
      }
      double sq = 0;
      for (double x : v) sq += x * x;
      const double scale = far && i == n - 1 ? 1e3 : 1.0;
      for (double& x : v) x = x / std::sqrt(sq) * scale;
    }
    for (std::size_t q = 0; q < cols.size(); ++q) {
      const T x = static_cast<T>(v[q]);
      m.values.push_back(x);
      m.cols.push_back(cols[q]);
      m.dense[i * d + static_cast<std::size_t>(cols[q])] = x;
    }
    m.offsets.push_back(static_cast<std::int64_t>(m.values.size()));
  }
  return m;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Fits with prune off and on; everything but the distance counts is bitwise equal. Returns the
// pruned fit.
template <class T>
KMeansResult<T> check_pruned(const Csr<T>& m, KMeansOptions o) {
  o.prune = Prune::kOff;
  const KMeansResult<T> off = fit(m.view(), o);
  for (const auto& h : off.history) EXPECT_EQ(h.distances, static_cast<std::uint64_t>(m.n) * o.n_clusters);
  o.prune = Prune::kOn;
  KMeansResult<T> on = fit(m.view(), o);
  EXPECT_TRUE(same_bits(off.centroids, on.centroids));
  EXPECT_EQ(off.labels, on.labels);
  EXPECT_EQ(std::memcmp(&off.inertia, &on.inertia, sizeof(double)), 0) << off.inertia << " vs " << on.inertia;
  EXPECT_EQ(off.n_iter, on.n_iter);
  EXPECT_EQ(off.stop_reason, on.stop_reason);
  EXPECT_EQ(off.history.size(), on.history.size());
  for (std::size_t i = 0; i < std::min(off.history.size(), on.history.size()); ++i) {
    SCOPED_TRACE(::testing::Message() << "iteration " << i);
    EXPECT_EQ(std::memcmp(&off.history[i].inertia, &on.history[i].inertia, sizeof(double)), 0);
    EXPECT_EQ(std::memcmp(&off.history[i].center_shift, &on.history[i].center_shift, sizeof(double)), 0);
    EXPECT_EQ(off.history[i].labels_changed, on.history[i].labels_changed);
    EXPECT_EQ(off.history[i].empty_relocated, on.history[i].empty_relocated);
    EXPECT_LE(on.history[i].distances, off.history[i].distances);
  }
  return on;
}

std::uint64_t total_distances(const std::vector<IterationStats>& h) {
  std::uint64_t t = 0;
  for (const auto& s : h) t += s.distances;
  return t;
}

// group_min on every target against the reference, and the groups' merged minimum against
// assign_rows (label and distance bit for bit), for every panel width and a shuffled order.
TYPED_TEST(SparseTest, GroupKernelsMatchAssign) {
  using T = TypeParam;
  const auto& ref = detail::sparse_reference_table<T>();
  std::uint64_t seed = 100;
  for (const auto* table : detail::sparse_kernel_tables<T>()) {
    for (std::size_t d : {1, 7, 33, 300}) {
      for (std::size_t k : {1, 5, 16, 17, 100, 129}) {
        for (std::size_t mult : {1, 2, 4, 8}) {
          const std::size_t nr = table->lanes * mult;
          SCOPED_TRACE(::testing::Message() << table->name << " d=" << d << " k=" << k << " nr=" << nr);
          const std::size_t n = 23;
          // Small integers (exact, with many ties) for half the cases, real values otherwise.
          const bool exact = (seed % 2) == 0;
          const Csr<T> m = exact ? random_csr<T>(n, d, 0.3, seed++, 3, {4}) : random_csr<T>(n, d, 0.3, seed++, 0, {4});
          const Rows<T> rows(m);
          std::vector<double> c = testing::small_ints<double>(k, d, seed++, 2);
          if (!exact) {
            std::mt19937_64 rng(seed);
            std::uniform_real_distribution<double> u(0, 0.3);
            for (double& v : c) v = u(rng);
          }
          std::vector<std::uint32_t> order(k);
          for (std::size_t i = 0; i < k; ++i) order[i] = static_cast<std::uint32_t>(i);
          std::shuffle(order.begin(), order.end(), std::mt19937_64(seed++));
          const std::size_t kpad = (k + nr - 1) / nr * nr;
          detail::AlignedBuffer<T> bg, bp;
          T* pg = bg.reserve(kpad * d + kpad);
          table->pack_width(c.data(), order.data(), k, d, nr, pg);
          std::vector<T> ids(kpad, std::numeric_limits<T>::infinity());
          for (std::size_t p = 0; p < k; ++p) ids[p] = static_cast<T>(order[p]);
          const T* pa = pack(*table, c, k, d, bp);
          std::vector<std::int32_t> la(n, -1);
          std::vector<T> da(n);
          table->assign_rows(rows.ref, pa, k, d, 0, n, la.data(), da.data());
          for (std::size_t r = 0; r < n; ++r) {
            T best = std::numeric_limits<T>::infinity();
            std::int32_t arg = std::numeric_limits<std::int32_t>::max();
            for (std::size_t g = 0; g < kpad / nr; ++g) {
              T m1, m2, r1, r2;
              std::int32_t i1, j1;
              table->group_min(rows.ref, r, pg, nr, k, d, ids.data(), g, &m1, &i1, &m2);
              // Bit for bit as the reference where both round alike: exact data, or a target with
              // fused multiply-adds (SSE4 rounds each product and sum apart).
              if (table != &ref && (exact || std::string(table->name).rfind("AVX", 0) == 0)) {
                // The reference on a reference packing of the same width and order.
                detail::AlignedBuffer<T> br;
                T* pr = br.reserve(kpad * d + kpad);
                ref.pack_width(c.data(), order.data(), k, d, nr, pr);
                ref.group_min(rows.ref, r, pr, nr, k, d, ids.data(), g, &r1, &j1, &r2);
                ASSERT_EQ(m1, r1);
                ASSERT_EQ(i1, j1);
                ASSERT_EQ(m2, r2);
              }
              // The second smallest is no smaller than the smallest, and the group's winner is
              // one of its centroids.
              ASSERT_LE(m1, m2);
              const auto pos = std::find(order.begin(), order.end(), static_cast<std::uint32_t>(i1)) - order.begin();
              ASSERT_EQ(static_cast<std::size_t>(pos) / nr, g);
              if (m1 < best || (m1 == best && i1 < arg)) {
                best = m1;
                arg = i1;
              }
            }
            ASSERT_EQ(arg, la[r]) << "row " << r;
            const T dist = std::max(T(0), rows.xnorm[r] + best);
            ASSERT_EQ(std::memcmp(&dist, &da[r], sizeof(T)), 0) << "row " << r;
          }
        }
      }
    }
  }
}

// Pruned fits bitwise the unpruned ones: random shapes, K = 1, K = N, duplicates, a far row,
// weights, cosine, every init and every target.
TYPED_TEST(SparseTest, PrunedFitIsBitwiseUnpruned) {
  using T = TypeParam;
  struct Case {
    std::size_t n, d, topics, per_row, k, dups;
    bool far;
  };
  const Case cases[] = {{1, 5, 1, 3, 1, 0, false},       {40, 20, 4, 5, 40, 0, false},   {300, 1, 1, 1, 3, 0, false},
                        {600, 50, 8, 6, 1, 0, false},    {1500, 300, 20, 12, 37, 5, true}, {2000, 400, 30, 10, 130, 0, false},
                        {1200, 2000, 12, 40, 17, 30, false}};
  std::uint64_t seed = 300;
  for (const Case& cs : cases) {
    for (bool weighted : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "n=" << cs.n << " d=" << cs.d << " k=" << cs.k << " weighted=" << weighted);
      const Csr<T> m = topic_csr<T>(cs.n, cs.d, cs.topics, cs.per_row, seed++, cs.dups, cs.far);
      KMeansOptions o;
      o.n_clusters = cs.k;
      o.seed = seed++;
      o.tol = 0;
      o.max_iter = 40;
      o.n_threads = 2;
      std::vector<double> w(m.n);
      for (std::size_t i = 0; i < m.n; ++i) w[i] = 0.25 + static_cast<double>(i % 5);
      if (weighted) o.sample_weight = w;
      check_pruned(m, o);
    }
  }
  const Csr<T> m = topic_csr<T>(1500, 500, 16, 10, 9, 3);
  for (const auto* table : detail::sparse_kernel_tables<T>()) {
    for (auto metric : {Metric::kEuclidean, Metric::kCosine}) {
      for (auto init : {InitMethod::kMeansPlusPlus, InitMethod::kRandom}) {
        SCOPED_TRACE(::testing::Message() << table->name << " metric=" << static_cast<int>(metric)
                                          << " init=" << static_cast<int>(init));
        KMeansOptions o;
        o.n_clusters = 50;
        o.seed = 4;
        o.tol = 0;
        o.max_iter = 30;
        o.metric = metric;
        o.init = init;
        o.target = table->name;
        check_pruned(m, o);
      }
    }
  }
}

// On clustered rows the bounds skip most distances after the first iterations; the counts,
// like the results, do not depend on the thread count.
TYPED_TEST(SparseTest, PruningSkipsWorkAndIsThreadIndependent) {
  using T = TypeParam;
  const Csr<T> m = topic_csr<T>(4000, 1000, 40, 20, 17);
  KMeansOptions o;
  o.n_clusters = 40;
  o.seed = 2;
  o.tol = 0;
  o.max_iter = 25;
  o.n_threads = 1;
  const KMeansResult<T> on = check_pruned(m, o);
  ASSERT_GE(on.history.size(), 4u);
  const std::uint64_t full = static_cast<std::uint64_t>(m.n) * o.n_clusters;
  EXPECT_EQ(on.history[0].distances, full);  // no bounds yet
  // Measured: float 160000, 160000, 159936, 70560, 21176, ... 8072 over 10 iterations; double
  // converges in 4 (the last 70064).
  EXPECT_LT(on.history.back().distances, full / 2);
  EXPECT_LT(total_distances(on.history), full * on.history.size() * 9 / 10);
  o.prune = Prune::kOn;
  for (int t : {2, 3}) {
    o.n_threads = t;
    const KMeansResult<T> b = fit(m.view(), o);
    EXPECT_EQ(b.labels, on.labels);
    EXPECT_TRUE(same_bits(b.centroids, on.centroids));
    ASSERT_EQ(b.history.size(), on.history.size());
    for (std::size_t i = 0; i < b.history.size(); ++i) EXPECT_EQ(b.history[i].distances, on.history[i].distances);
  }
  // The dot metric never prunes, and refuses prune = on.
  o.metric = Metric::kDot;
  EXPECT_THROW(fit(m.view(), o), InvalidArgument);
  o.prune = Prune::kAuto;
  const KMeansResult<T> dot = fit(m.view(), o);
  for (const auto& h : dot.history) EXPECT_EQ(h.distances, full);
}

// An empty cluster after a pruned iteration: relocation sees fresh distances (the rows whose
// distances the bounds skipped are recomputed), as without pruning.
TYPED_TEST(SparseTest, PrunedRelocationMatches) {
  using T = TypeParam;
  const Csr<T> m = topic_csr<T>(800, 200, 10, 8, 23, 20);
  // Start with several centroids on the same duplicated row: clusters empty repeatedly.
  std::vector<double> c0;
  for (std::size_t c = 0; c < 12; ++c) {
    const std::size_t row = c < 4 ? 0 : c * 60;
    for (std::size_t j = 0; j < m.d; ++j) c0.push_back(static_cast<double>(m.dense[row * m.d + j]));
  }
  KMeansOptions o = from(c0, 12, m.d);
  o.tol = 0;
  const KMeansResult<T> on = check_pruned(m, o);
  std::size_t relocated = 0;
  for (const auto& h : on.history) relocated += h.empty_relocated;
  EXPECT_GT(relocated, 0u);
}

// prune = auto leaves sparse rows unpruned (the bounds did not pay on the data measured;
// docs/KERNELS.md, "Sparse rows"): every distance computed, bitwise the unpruned fit, even where
// prune = on skips distances.
TYPED_TEST(SparseTest, AutoLeavesSparseRowsUnpruned) {
  using T = TypeParam;
  const Csr<T> m = topic_csr<T>(4000, 1000, 40, 20, 17);
  KMeansOptions o;
  o.n_clusters = 40;
  o.seed = 2;
  o.tol = 0;
  o.max_iter = 25;
  const KMeansResult<T> on = check_pruned(m, o);
  o.prune = Prune::kAuto;
  const KMeansResult<T> a = fit(m.view(), o);
  o.prune = Prune::kOff;
  const KMeansResult<T> off = fit(m.view(), o);
  EXPECT_EQ(a.labels, off.labels);
  EXPECT_TRUE(same_bits(a.centroids, off.centroids));
  ASSERT_EQ(a.history.size(), off.history.size());
  const std::uint64_t full = static_cast<std::uint64_t>(m.n) * o.n_clusters;
  EXPECT_LT(total_distances(on.history), full * on.history.size());
  for (std::size_t i = 0; i < a.history.size(); ++i) {
    EXPECT_EQ(std::memcmp(&a.history[i].inertia, &off.history[i].inertia, sizeof(double)), 0) << i;
    EXPECT_EQ(a.history[i].distances, full) << i;
  }
}

}  // namespace
}  // namespace flashkm
