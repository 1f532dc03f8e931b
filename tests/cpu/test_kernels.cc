// Every compiled SIMD kernel against the scalar reference, on shapes around the vector widths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "cpu/bounds.hpp"
#include "cpu/kernel_table.hpp"
#include "cpu/sketch.hpp"
#include "testlib.hpp"

namespace flashkm {
namespace {

using detail::KernelTable;
using detail::PointsRef;

constexpr std::size_t kDims[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 127, 128, 129, 1000};
// (N, K): 1, primes, K = N, K > N, none a multiple of any tile.
constexpr std::pair<std::size_t, std::size_t> kShapes[] = {{1, 1}, {37, 5}, {101, 67}, {13, 13}, {50, 130}};

template <class T>
class KernelTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(KernelTest, Types);

// Aligned scratch for packed centroids.
template <class T>
struct Packed {
  std::vector<T> storage;
  T* data = nullptr;
  Packed(const detail::PanelKernels<T>& t, const std::vector<double>& c, std::size_t k, std::size_t d)
      : storage(t.packed_size(k, d) + 64 / sizeof(T)) {
    auto addr = reinterpret_cast<std::uintptr_t>(storage.data());
    data = reinterpret_cast<T*>((addr + 63) / 64 * 64);
    t.pack_centroids(c.data(), k, d, data);
  }
};

// Small-integer data: every product, sum and norm is exact, so each target must reproduce the
// reference bit for bit -- labels (including the lowest-index tie rule; integer data has many
// exact ties) and distances.
TYPED_TEST(KernelTest, AssignAndDistancesMatchReferenceExactly) {
  using T = TypeParam;
  const auto& ref_table = detail::reference_table<T>();
  const auto& ref = ref_table.wide;
  std::uint64_t seed = 1;
  for (const auto* tab : detail::kernel_tables<T>()) {
   for (const auto* table : {&tab->wide, &tab->narrow}) {
    for (std::size_t d : kDims) {
      for (auto [n, k] : kShapes) {
        SCOPED_TRACE(::testing::Message() << tab->name << " nr=" << table->nr << " d=" << d << " n=" << n << " k=" << k);
        const std::size_t stride = d + (seed % 3);  // misaligned rows too
        auto raw = testing::small_ints<T>(n, stride, seed++);
        auto shift = testing::small_ints<T>(1, d, seed++, 3);
        auto cint = testing::small_ints<double>(k, d, seed++, 6);
        const PointsRef<T> pts{raw.data(), stride, d, shift.data()};
        Packed<T> pr(ref, cint, k, d), pt(*table, cint, k, d);

        std::vector<std::int32_t> lr(n, -1), lt(n, 7);
        std::vector<T> dr(n), dt(n);
        ref.assign_rows(pts, pr.data, k, 0, n, lr.data(), dr.data());
        const std::size_t changed = table->assign_rows(pts, pt.data, k, 0, n, lt.data(), dt.data());
        std::size_t expect_changed = 0;
        for (auto l : lr) expect_changed += l != 7;
        EXPECT_EQ(changed, expect_changed);
        EXPECT_EQ(lt, lr);
        EXPECT_EQ(dt, dr);

        // A sub-range starting mid-way must leave the rest untouched.
        if (n > 3) {
          std::vector<std::int32_t> ls(n, -5);
          std::vector<T> ds(n, T(-1));
          table->assign_rows(pts, pt.data, k, 2, n - 1, ls.data(), ds.data());
          EXPECT_EQ(ls[0], -5);
          EXPECT_EQ(ls[n - 1], -5);
          for (std::size_t i = 2; i + 1 < n; ++i) EXPECT_EQ(ls[i], lr[i]);
        }

        std::vector<T> sr(n * (k + 1), T(-3)), st(n * (k + 1), T(-3));
        ref.sqdist_rows(pts, pr.data, k, 0, n, sr.data(), k + 1);
        table->sqdist_rows(pts, pt.data, k, 0, n, st.data(), k + 1);
        EXPECT_EQ(st, sr);
        // Distances are the true squared distances (exact for integers).
        for (std::size_t i = 0; i < n; ++i) {
          for (std::size_t c = 0; c < k; ++c) {
            double e = 0;
            for (std::size_t j = 0; j < d; ++j) {
              const double v = double(raw[i * stride + j]) - double(shift[j]) - cint[c * d + j];
              e += v * v;
            }
            ASSERT_EQ(double(sr[i * (k + 1) + c]), e);
          }
          ASSERT_EQ(sr[i * (k + 1) + k], T(-3));  // the padding column is not written
        }
        // One centroid, from differences: exact too.
        std::vector<T> c0(cint.begin(), cint.begin() + static_cast<std::ptrdiff_t>(d));
        std::vector<T> o1(n), o2(n);
        ref_table.sqdist_one(pts, c0.data(), 0, n, o1.data());
        tab->sqdist_one(pts, c0.data(), 0, n, o2.data());
        EXPECT_EQ(o1, o2);
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(o1[i], sr[i * (k + 1)]);
        // Up to kMaxFew centroids at once, from differences.
        const std::size_t m = std::min(k, detail::kMaxFew);
        std::vector<T> cf(cint.begin(), cint.begin() + static_cast<std::ptrdiff_t>(m * d));
        std::vector<T> f1(n * m), f2(n * m);
        ref_table.sqdist_few(pts, cf.data(), m, 0, n, f1.data());
        tab->sqdist_few(pts, cf.data(), m, 0, n, f2.data());
        EXPECT_EQ(f1, f2);
        for (std::size_t i = 0; i < n; ++i) {
          for (std::size_t t = 0; t < m; ++t) ASSERT_EQ(f1[i * m + t], sr[i * (k + 1) + t]);
        }
      }
    }
   }
  }
}

// group_min (the bounded assignment's group scoring) on every target and panel width, against
// exact scores: small-integer rows and centroids (every score exact; many exact ties, some from
// duplicated centroids), the centroids packed in a shuffled panel order with ascending ids
// within each panel, as the engine packs its groups; groups of one panel (the kernel's
// register path) and of several, row counts around the sliver height; every score as well
// where asked for (the per-centroid bounds).
TYPED_TEST(KernelTest, GroupMinExactOnEveryTarget) {
  using T = TypeParam;
  std::uint64_t seed = 77;
  for (const auto* tab : detail::kernel_tables<T>()) {
    for (const auto* table : {&tab->wide, &tab->narrow}) {
      const std::size_t nr = table->nr, P = tab->center_pad;
      // D = 300 and 777: the blocked path (feature slices, batches of slivers; more rows than
      // one batch holds).
      for (std::size_t d : {1, 5, 16, 33, 64, 300, 777}) {
        for (std::size_t k : {nr - 1, nr, 3 * nr + 2}) {
          if (k == 0) continue;
          SCOPED_TRACE(::testing::Message() << tab->name << " nr=" << nr << " d=" << d << " k=" << k);
          const std::size_t n = d > 256 ? 9 * P + 5 : 2 * P + 3;
          auto raw = testing::small_ints<T>(n, d, seed++);
          auto shift = testing::small_ints<T>(1, d, seed++, 3);
          auto cint = testing::small_ints<double>(k, d, seed++, 3);
          // Duplicates: centroid k - 1 repeats centroid 0 (different panels when k > nr).
          std::copy_n(cint.begin(), d, cint.begin() + static_cast<std::ptrdiff_t>((k - 1) * d));
          // Full panels in reverse order, the short one (if any) last, as the packing requires;
          // within each, ascending ids.
          const std::size_t np = (k + nr - 1) / nr, full = k / nr;
          std::vector<std::uint32_t> order;
          for (std::size_t q = full; q-- > 0;) {
            for (std::size_t c = q * nr; c < (q + 1) * nr; ++c) order.push_back(static_cast<std::uint32_t>(c));
          }
          for (std::size_t c = full * nr; c < k; ++c) order.push_back(static_cast<std::uint32_t>(c));
          std::vector<double> permuted(k * d);
          for (std::size_t p = 0; p < k; ++p) std::copy_n(cint.begin() + static_cast<std::ptrdiff_t>(order[p] * d), d, permuted.begin() + static_cast<std::ptrdiff_t>(p * d));
          Packed<T> pk(*table, permuted, k, d);
          std::vector<T> ids(np * nr, std::numeric_limits<T>::infinity());
          for (std::size_t p = 0; p < k; ++p) ids[p] = static_cast<T>(order[p]);
          const PointsRef<T> pts{raw.data(), d, d, shift.data()};
          // Rows packed by sliver, held by pointer in a scrambled order.
          const std::size_t ns = (n + P - 1) / P * P;
          std::vector<T> xp(ns * d), xn(ns);
          std::vector<std::uint32_t> rows(n);
          for (std::size_t i = 0; i < n; ++i) rows[i] = static_cast<std::uint32_t>((i * 7) % n);
          for (std::size_t s0 = 0; s0 < n; s0 += P) tab->pack_rows(pts, rows.data() + s0, std::min(P, n - s0), xp.data() + s0 * d, xn.data() + s0);
          for (std::size_t m : {std::size_t{1}, P - 1, P, n}) {
            if (m == 0 || m > n) continue;
            std::vector<const T*> xr((m + P - 1) / P * P);
            for (std::size_t i = 0; i < xr.size(); ++i) xr[i] = xp.data() + (n - 1 - std::min(i, m - 1)) * d;
            // Groups of one panel and of all panels.
            std::vector<std::pair<std::size_t, std::size_t>> groups;
            for (std::size_t q = 0; q < np; ++q) groups.emplace_back(q * nr, std::min(k, (q + 1) * nr));
            groups.emplace_back(0, k);
            for (auto [c0, c1] : groups) {
              std::vector<T> m1(m), m2(m);
              std::vector<std::int32_t> i1(m, -1);
              // Every score too, every other call (the per-centroid bounds' variant).
              const bool with_scores = (c0 / nr + m) % 2 == 0;
              const std::size_t lds = (c1 - c0 + nr - 1) / nr * nr + 3;
              std::vector<T> scores(with_scores ? m * lds : 0, T(-1));
              table->group_min(xr.data(), d, pk.data, ids.data(), k, c0, c1, m, m1.data(), i1.data(), m2.data(),
                               with_scores ? scores.data() : nullptr, lds);
              for (std::size_t i = 0; i < m; ++i) {
                const std::size_t r = rows[n - 1 - std::min(i, m - 1)];
                double b1 = std::numeric_limits<double>::infinity(), b2 = b1;
                std::int32_t j1 = -1;
                for (std::size_t p = c0; p < c1; ++p) {
                  const std::size_t c = order[p];
                  double nc = 0, dot = 0;
                  for (std::size_t j = 0; j < d; ++j) {
                    nc += cint[c * d + j] * cint[c * d + j];
                    dot += (double(raw[r * d + j]) - double(shift[j])) * cint[c * d + j];
                  }
                  const double sc = nc - 2 * dot;
                  if (with_scores) {
                    ASSERT_EQ(double(scores[i * lds + (p - c0)]), sc) << "score, row " << i << " position " << p;
                  }
                  if (sc < b1 || (sc == b1 && static_cast<std::int32_t>(c) < j1)) {
                    b2 = std::min(b2, b1);
                    b1 = sc;
                    j1 = static_cast<std::int32_t>(c);
                  } else {
                    b2 = std::min(b2, sc);
                  }
                }
                ASSERT_EQ(double(m1[i]), b1) << "row " << i << " group [" << c0 << ", " << c1 << ")";
                ASSERT_EQ(i1[i], j1) << "row " << i << " group [" << c0 << ", " << c1 << ")";
                ASSERT_EQ(double(m2[i]), b2) << "row " << i << " group [" << c0 << ", " << c1 << ")";
              }
            }
          }
        }
      }
    }
  }
}

// The per-centroid bounds' kernels on every target against the reference, bit for bit:
// lower_step_groups (bounds after a move, each group's smallest, the smallest of all; +inf and
// zero kept, groups of one or several vectors and a short last group), and bounds_from_scores,
// which must also be a true lower bound: lb <= sqrt(exact score + base), computed in long
// double, for scores far apart in magnitude and sums near zero.
TYPED_TEST(KernelTest, PerCentroidBoundKernelsBitwiseAndSound) {
  using T = TypeParam;
  std::mt19937_64 rng(91);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const auto& ref = detail::reference_table<T>();
  for (const auto* tab : detail::kernel_tables<T>()) {
    SCOPED_TRACE(tab->name);
    for (std::size_t n : {1, 7, 16, 37, 256, 301}) {
      for (std::size_t gs : {1, 8, 16, 48}) {
        std::vector<float> lb(n), cdf(n);
        for (std::size_t c = 0; c < n; ++c) {
          const double r = u(rng);
          lb[c] = r < 0.1 ? std::numeric_limits<float>::infinity() : r < 0.15 ? 0.0f : static_cast<float>(std::ldexp(u(rng), static_cast<int>(c % 40) - 20));
          cdf[c] = c % 5 == 0 ? lb[c] : static_cast<float>(std::ldexp(u(rng), static_cast<int>(c % 40) - 24));
        }
        std::vector<float> a = lb, b = lb;
        const std::size_t G = (n + gs - 1) / gs;
        std::vector<float> ga(G, -1.0f), gb(G, -1.0f);
        const float ma = tab->lower_step_groups(a.data(), cdf.data(), n, gs, ga.data());
        const float mb = ref.lower_step_groups(b.data(), cdf.data(), n, gs, gb.data());
        ASSERT_EQ(0, std::memcmp(a.data(), b.data(), n * sizeof(float))) << "n=" << n << " gs=" << gs;
        ASSERT_EQ(0, std::memcmp(ga.data(), gb.data(), G * sizeof(float))) << "n=" << n << " gs=" << gs;
        ASSERT_EQ(ma, mb);
        for (std::size_t c = 0; c < n; ++c) {
          // A lower bound after the move: at most l - drift (exactly), +inf kept.
          if (lb[c] == std::numeric_limits<float>::infinity()) {
            ASSERT_EQ(a[c], lb[c]);
          } else {
            // (0 where l - drift is not positive: distances are never negative.)
            ASSERT_LE(static_cast<long double>(a[c]),
                      std::max(0.0L, static_cast<long double>(lb[c]) - static_cast<long double>(cdf[c]))) << c;
            ASSERT_GE(a[c], 0.0f);
          }
        }
      }
      std::vector<T> sc(n);
      for (double base : {0.0, 1e-3, 7.25, 1e6, -3.0}) {
        for (std::size_t c = 0; c < n; ++c) {
          const double mag = std::ldexp(1.0, static_cast<int>(c % 30) - 10);
          // Scores near -base (sums near zero) and of every magnitude, both signs.
          sc[c] = static_cast<T>(c % 3 == 0 ? -base + mag * (u(rng) - 0.3) : mag * (2 * u(rng) - 1));
        }
        std::vector<float> a(n, -1.0f), b(n, -1.0f);
        tab->bounds_from_scores(sc.data(), n, base, a.data());
        ref.bounds_from_scores(sc.data(), n, base, b.data());
        ASSERT_EQ(0, std::memcmp(a.data(), b.data(), n * sizeof(float))) << "n=" << n << " base=" << base;
        for (std::size_t c = 0; c < n; ++c) {
          long double e = static_cast<long double>(sc[c]) + static_cast<long double>(base);
          // Double scores: the double sum's own rounding is the caller's to cover (its eps), so
          // soundness is checked up to it; float scores are sound in their arithmetic alone.
          if (!std::is_same_v<T, float>) e += 0x1p-51L * (std::fabs(static_cast<long double>(sc[c])) + std::fabs(static_cast<long double>(base)));
          ASSERT_GE(a[c], 0.0f);
          if (e <= 0) {
            ASSERT_EQ(a[c], 0.0f) << c;
          } else {
            ASSERT_LE(static_cast<long double>(a[c]), std::sqrt(e)) << "score " << sc[c] << " base " << base;
          }
        }
      }
    }
  }
}

// pair_scores on every target: each score within the bounded assignment's delta of the
// reference's (whose arithmetic is group_min's, pair for pair), and within its own rounding
// bound of the exact score computed in long double: ||c||^2 (the given norm) - 2 x.c. Rows and
// centroids far from and near the origin, D from 1 to wider than a slice, listed positions
// repeated and out of order, m not a multiple of any batch.
TYPED_TEST(KernelTest, PairScoresWithinTheirBound) {
  using T = TypeParam;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> nd(0.0, 1.0);
  const auto& ref = detail::reference_table<T>();
  const double u = std::ldexp(1.0, -std::numeric_limits<T>::digits);
  for (std::size_t dim : {1, 3, 4, 15, 16, 17, 33, 64, 100, 257, 777}) {
    const std::size_t k = 37;
    for (double offset : {0.0, 30.0}) {
      std::vector<T> x(dim), c(k * dim), norms(k);
      for (auto& v : x) v = static_cast<T>(nd(rng) + offset);
      for (std::size_t i = 0; i < k; ++i) {
        T nrm = T(0);
        for (std::size_t j = 0; j < dim; ++j) {
          c[i * dim + j] = static_cast<T>(nd(rng) * (i % 3 == 0 ? 1e-3 : 1.0) + (i % 2 ? offset : 0.0));
          nrm += c[i * dim + j] * c[i * dim + j];
        }
        norms[i] = nrm;
      }
      std::vector<std::uint32_t> pos;
      for (std::size_t q = 0; q < 23; ++q) pos.push_back(static_cast<std::uint32_t>((q * 11 + q / 5) % k));
      for (const auto* tab : detail::kernel_tables<T>()) {
        SCOPED_TRACE(::testing::Message() << tab->name << " dim=" << dim << " offset=" << offset);
        for (std::size_t m : {std::size_t{1}, std::size_t{2}, std::size_t{5}, pos.size()}) {
          std::vector<T> a(m, T(-1)), b(m, T(-1));
          tab->pair_scores(x.data(), dim, c.data(), norms.data(), pos.data(), m, a.data());
          ref.pair_scores(x.data(), dim, c.data(), norms.data(), pos.data(), m, b.data());
          long double xn = 0;
          for (std::size_t j = 0; j < dim; ++j) xn += static_cast<long double>(x[j]) * x[j];
          for (std::size_t q = 0; q < m; ++q) {
            const T* cq = c.data() + pos[q] * dim;
            long double dot = 0, cn = 0;
            for (std::size_t j = 0; j < dim; ++j) {
              dot += static_cast<long double>(x[j]) * cq[j];
              cn += static_cast<long double>(cq[j]) * cq[j];
            }
            const long double xc = std::sqrt(xn) * std::sqrt(cn);
            const long double g = detail::bounds::gamma<T>(2 * dim + 8);
            const long double exact = static_cast<long double>(norms[pos[q]]) - 2 * dot;
            // One score: its dot product within gamma |x||c|, then one rounding.
            ASSERT_LE(std::fabs(static_cast<long double>(a[q]) - exact), (2 * g * xc + u * std::fabs(exact)) * (1 + 1e-6L) + 1e-300L) << q;
            // Against group_min's arithmetic (the reference's): the engine's delta.
            const long double delta = (4 * g * xc + 2.0001L * u * std::fabs(static_cast<long double>(a[q]))) * (1 + 0x1p-20L);
            ASSERT_LE(std::fabs(static_cast<long double>(a[q]) - static_cast<long double>(b[q])), delta) << q;
          }
          if (tab == &ref) ASSERT_EQ(0, std::memcmp(a.data(), b.data(), m * sizeof(T)));
        }
      }
    }
  }
}

// group_min with scores beyond float range: a centroid and a row so large that the dot product
// and the norm overflow score NaN (inf - inf) and must never win; a row where every score is
// NaN gets +inf and the group's first index. One-panel groups (the register path) and a group
// of several panels, every target.
TYPED_TEST(KernelTest, GroupMinNeverTakesNaN) {
  using T = TypeParam;
  const T huge = std::sqrt(std::numeric_limits<T>::max()) * T(4);
  for (const auto* tab : detail::kernel_tables<T>()) {
    for (const auto* table : {&tab->wide, &tab->narrow}) {
      const std::size_t nr = table->nr, P = tab->center_pad, d = 3;
      for (std::size_t k : {nr, 2 * nr + 1}) {
        SCOPED_TRACE(::testing::Message() << tab->name << " nr=" << nr << " k=" << k);
        // Centroid 0 huge (NaN for the huge row, +inf for the small one), the rest small integers.
        std::vector<double> c(k * d);
        for (std::size_t i = 0; i < k * d; ++i) c[i] = static_cast<double>(static_cast<int>(i % 7) - 3);
        for (std::size_t j = 0; j < d; ++j) c[j] = static_cast<double>(huge);
        Packed<T> pk(*table, c, k, d);
        const std::size_t np = (k + nr - 1) / nr;
        std::vector<T> ids(np * nr, std::numeric_limits<T>::infinity());
        for (std::size_t p = 0; p < k; ++p) ids[p] = static_cast<T>(p);
        std::vector<T> raw = {T(1), T(2), T(-1), huge, huge, huge};
        std::vector<T> shift(d, T(0));
        const PointsRef<T> pts{raw.data(), d, d, shift.data()};
        // Two rows in slivers of at most center_pad rows (the reference's is one row).
        const std::size_t ns = (2 + P - 1) / P * P;
        std::vector<T> xp(ns * d), xn(ns);
        const std::uint32_t rows[2] = {0, 1};
        for (std::size_t s0 = 0; s0 < 2; s0 += P) tab->pack_rows(pts, rows + s0, std::min<std::size_t>(P, 2 - s0), xp.data() + s0 * d, xn.data() + s0);
        std::vector<const T*> xr(ns, xp.data());
        xr[1] = xp.data() + d;
        for (auto [c0, c1] : {std::pair<std::size_t, std::size_t>{0, nr}, {0, k}}) {
          std::vector<T> m1(2), m2(2);
          std::vector<std::int32_t> i1(2, -1);
          table->group_min(xr.data(), d, pk.data, ids.data(), k, c0, c1, 2, m1.data(), i1.data(), m2.data(), nullptr, 0);
          for (int r = 0; r < 2; ++r) {
            EXPECT_FALSE(std::isnan(m1[static_cast<std::size_t>(r)])) << "row " << r << " [" << c0 << ", " << c1 << ")";
            EXPECT_GE(i1[static_cast<std::size_t>(r)], 0);
          }
          // The small row: centroid 0 scores +inf, so a small centroid wins with a finite score
          // (where the group holds one), else +inf and index 0.
          if (c1 - c0 > 1) {
            EXPECT_TRUE(std::isfinite(m1[0]));
            EXPECT_NE(i1[0], 0);
          } else {
            EXPECT_EQ(m1[0], std::numeric_limits<T>::infinity());
            EXPECT_EQ(i1[0], 0);
          }
          // The huge row scores NaN against centroid 0 (inf - inf); with no other centroid it gets
          // +inf.
          if (c1 - c0 == 1) EXPECT_EQ(m1[1], std::numeric_limits<T>::infinity());
        }
      }
    }
  }
}

// assign_rows with scores that are not finite, on every target and panel, against the reference:
// infinite features in some rows and centroids make scores +inf, -inf and NaN (inf - inf,
// 0 x inf), which are the same whatever the order of the arithmetic (the finite scores are small
// integers, exact). NaN never wins; a row with no score below +inf gets index 0. Enough rows for
// the one-panel path's chunks and their tails (rows finished several at a time), K in one panel
// and in several; labels and distances bitwise the reference's.
TYPED_TEST(KernelTest, AssignRowsWithInfiniteScoresMatchesReference) {
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity();
  const auto& ref = detail::reference_table<T>().wide;
  const std::size_t d = 5, n = 203;
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int> small(-4, 4), pick(0, 9);
  std::vector<T> raw(n * d), shift(d, T(0));
  for (std::size_t i = 0; i < n; ++i) {
    const int kind = pick(rng);  // 1 in 10 rows +inf in one feature, 1 in 10 -inf in one
    for (std::size_t j = 0; j < d; ++j) {
      raw[i * d + j] = kind == 0 && j == 1 ? inf : kind == 1 && j == 3 ? -inf : static_cast<T>(small(rng));
    }
  }
  const PointsRef<T> pts{raw.data(), d, d, shift.data()};
  std::size_t nonfinite = 0;
  for (const auto* tab : detail::kernel_tables<T>()) {
    for (const auto* table : {&tab->wide, &tab->narrow}) {
      const std::size_t nr = table->nr;
      for (std::size_t k : {std::size_t{1}, std::size_t{3}, nr, 2 * nr + 1}) {
        SCOPED_TRACE(::testing::Message() << tab->name << " nr=" << nr << " k=" << k);
        std::vector<double> c(k * d);
        for (std::size_t i = 0; i < k * d; ++i) c[i] = static_cast<double>(small(rng));
        // Centroid 0 +inf in one feature; where there are three or more, the last -inf in one.
        c[2] = std::numeric_limits<double>::infinity();
        if (k >= 3) c[(k - 1) * d + 4] = -std::numeric_limits<double>::infinity();
        Packed<T> pr(ref, c, k, d), pt(*table, c, k, d);
        std::vector<std::int32_t> lr(n, -1), lt(n, -1);
        std::vector<T> dr(n), dt(n);
        ref.assign_rows(pts, pr.data, k, 0, n, lr.data(), dr.data());
        EXPECT_EQ(table->assign_rows(pts, pt.data, k, 0, n, lt.data(), dt.data()), n);
        EXPECT_EQ(lt, lr);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_GE(lt[i], 0);
          ASSERT_LT(static_cast<std::size_t>(lt[i]), k);
          ASSERT_EQ(std::memcmp(&dt[i], &dr[i], sizeof(T)), 0) << "row " << i << ": " << dt[i] << " against " << dr[i];
          nonfinite += !std::isfinite(dr[i]);
        }
      }
    }
  }
  EXPECT_GT(nonfinite, 0u);  // the data reached the cases it is for
}

// Random real-valued data: labels agree with the reference except at genuine near-ties.
TYPED_TEST(KernelTest, AssignOnRealDataMatchesReferenceUpToTies) {
  using T = TypeParam;
  const auto& ref = detail::reference_table<T>().wide;
  std::uint64_t seed = 100;
  for (const auto* tab : detail::kernel_tables<T>()) {
   for (const auto* table : {&tab->wide, &tab->narrow}) {
    for (std::size_t d : kDims) {
      const std::size_t n = 301, k = 43;
      SCOPED_TRACE(::testing::Message() << tab->name << " nr=" << table->nr << " d=" << d);
      auto X = testing::blobs<T>(n, d, 7, seed++, 1.0, 0.0);
      std::vector<T> shift(d, T(0));
      auto C = testing::pick_rows(X, d, testing::distinct_ids(n, k, seed++));
      const PointsRef<T> pts{X.data(), d, d, shift.data()};
      Packed<T> pr(ref, C, k, d), pt(*table, C, k, d);
      std::vector<std::int32_t> lr(n, -1), lt(n, -1);
      std::vector<T> dr(n), dt(n);
      ref.assign_rows(pts, pr.data, k, 0, n, lr.data(), dr.data());
      table->assign_rows(pts, pt.data, k, 0, n, lt.data(), dt.data());
      // float32 rounding of a d-term dot product: relative error well below 1e-4.
      testing::expect_labels_match(X, d, C, lt, lr, sizeof(T) == 4 ? 1e-4 : 1e-12);
      for (std::size_t i = 0; i < n; ++i) {
        const double exact = testing::sqdist(&X[i * d], &C[lr[i] * d], d);
        EXPECT_NEAR(double(dt[i]), exact, (sizeof(T) == 4 ? 1e-4 : 1e-10) * (exact + d));
      }
    }
   }
  }
}

// The update inner loop sums in a fixed order without FMAs: bitwise equal on every target.
// k-means++'s distances on real-valued data, far from the origin too: every candidate's value
// from sqdist_few, and from sqdist_listed (candidates by pointer), is bitwise sqdist_one's,
// whatever m and its slot (the bounded seeding keeps them as closest distances), and within
// float rounding of the float64 distance.
TYPED_TEST(KernelTest, SqDistFewIsBitwiseSqDistOneForEveryM) {
  using T = TypeParam;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> g(0.0, 1.0);
  for (const auto* tab : detail::kernel_tables<T>()) {
    for (std::size_t d : kDims) {
      for (double offset : {0.0, 1000.0}) {
        const std::size_t n = 37;
        const std::size_t stride = d + 3;  // rows not contiguous
        std::vector<T> x(n * stride), shift(d), c(detail::kMaxFew * d);
        for (auto& v : x) v = static_cast<T>(offset + g(rng));
        for (auto& v : shift) v = static_cast<T>(offset + 0.1 * g(rng));
        for (auto& v : c) v = static_cast<T>(g(rng));
        const PointsRef<T> pts{x.data(), stride, d, shift.data()};
        std::vector<T> one(detail::kMaxFew * n);
        for (std::size_t t = 0; t < detail::kMaxFew; ++t) tab->sqdist_one(pts, c.data() + t * d, 0, n, one.data() + t * n);
        for (std::size_t m = 1; m <= detail::kMaxFew; ++m) {
          for (std::size_t first : {std::size_t{0}, detail::kMaxFew - m}) {
            std::vector<T> few(n * m, T(-1));
            tab->sqdist_few(pts, c.data() + first * d, m, 0, n, few.data());
            for (std::size_t i = 0; i < n; ++i) {
              for (std::size_t t = 0; t < m; ++t) {
                ASSERT_EQ(few[i * m + t], one[(first + t) * n + i])
                    << tab->name << " d=" << d << " m=" << m << " slot " << t << " row " << i;
              }
            }
          }
          // sqdist_listed: m of the candidates in a shuffled order, given by pointers.
          std::vector<std::size_t> ids(detail::kMaxFew);
          for (std::size_t t = 0; t < ids.size(); ++t) ids[t] = t;
          std::shuffle(ids.begin(), ids.end(), rng);
          std::vector<const T*> ptrs(m);
          for (std::size_t t = 0; t < m; ++t) ptrs[t] = c.data() + ids[t] * d;
          std::vector<T> listed(n * m, T(-1));
          tab->sqdist_listed(pts, ptrs.data(), m, 0, n, listed.data());
          for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t t = 0; t < m; ++t) {
              ASSERT_EQ(listed[i * m + t], one[ids[t] * n + i])
                  << tab->name << " listed d=" << d << " m=" << m << " slot " << t << " row " << i;
            }
          }
        }
        for (std::size_t t = 0; t < detail::kMaxFew; ++t) {
          for (std::size_t i = 0; i < n; ++i) {
            double e = 0;
            for (std::size_t j = 0; j < d; ++j) {
              const double y = static_cast<double>(static_cast<T>(x[i * stride + j] - shift[j])) - double(c[t * d + j]);
              e += y * y;
            }
            const double got = one[t * n + i];
            ASSERT_NEAR(got, e, 4.0 * (2 * d + 8) * std::numeric_limits<T>::epsilon() * e + 1e-30)
                << tab->name << " d=" << d;
          }
        }
      }
    }
  }
}

// k-means++'s sketch filter (and k-means||'s separable form of it) is sound on every target: a cleared bit means the kernels' own
// computed distance is >= the row's closest distance, tested with closest distances placed
// just below, at and just above the computed distances (and far below and above), for every
// candidate count, odd D, data far from the origin, zero rows and candidates equal to rows. It
// also proves something: with the closest distance at half the computed one, the bit clears.
// Float64 rows too: their closest distances enter the filter rounded up to float.
TYPED_TEST(KernelTest, SketchFilterSoundOnEveryTargetAndUseful) {
  using T = TypeParam;
  std::mt19937_64 rng(11);
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_int_distribution<int> pick(0, 6);
  const double factors[] = {0.5, 1 - 1e-3, 1 - 1e-6, 1.0, 1 + 1e-6, 1 + 1e-3, 2.0};
  std::size_t cleared_at_half[2] = {}, at_half[2] = {};
  // Rounded down to float.
  auto down = [](double v) {
    float f = static_cast<float>(v);
    if (static_cast<double>(f) > v) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
    return f;
  };
  for (std::size_t d : {16, 17, 31, 64, 129, 784}) {
    for (double offset : {0.0, 1000.0}) {
      const std::size_t n = 45;  // three blocks, the last partial
      std::vector<T> x(n * d), shift(d), c(detail::kMaxFew * d);
      for (auto& v : x) v = static_cast<T>(offset + g(rng));
      for (auto& v : shift) v = static_cast<T>(offset + 0.1 * g(rng));
      for (std::size_t j = 0; j < d; ++j) x[5 * d + j] = shift[j];  // a row that centres to zero
      for (std::size_t j = 0; j < d; ++j) x[7 * d + j] = x[8 * d + j];  // duplicate rows
      const PointsRef<T> pts{x.data(), d, d, shift.data()};
      for (auto& v : c) v = static_cast<T>(g(rng));
      // Candidate 1 is row 3 centred exactly as the kernels centre it (distance 0).
      for (std::size_t j = 0; j < d; ++j) c[d + j] = x[3 * d + j] - shift[j];
      detail::RowSketch sk;
      sk.reset(n, d);
      ASSERT_TRUE(sk.build(pts, 0, n));
      const auto& ref = detail::reference_table<T>();
      std::vector<T> dist(detail::kMaxFew * n);
      for (std::size_t t = 0; t < detail::kMaxFew; ++t) ref.sqdist_one(pts, c.data() + t * d, 0, n, dist.data() + t * n);
      const double gam = detail::bounds::gamma<T>(2 * d + 8);
      const float over = detail::bounds::up(1 / (1 - gam) * (1 + 0x1p-40));
      const float tau = detail::bounds::up(
          std::max(static_cast<double>(2 * d + 8) * static_cast<double>(std::numeric_limits<T>::denorm_min()), 0x1p-126));
      for (std::size_t m = 1; m <= detail::kMaxFew; ++m) {
        detail::CandSketch cs;
        ASSERT_TRUE(cs.build(c.data(), m, d));
        for (std::size_t b = 0; b < (n + detail::kSketchRows - 1) / detail::kSketchRows; ++b) {
          // Each row's closest distance: a factor of its computed distance to one candidate.
          float cl[detail::kSketchRows] = {};
          std::vector<double> f(detail::kSketchRows);
          std::vector<std::size_t> to(detail::kSketchRows);
          for (std::size_t i = 0; i < detail::kSketchRows; ++i) {
            const std::size_t r = b * detail::kSketchRows + i;
            if (r >= n) continue;
            to[i] = rng() % m;
            f[i] = factors[pick(rng)];
            const double v = f[i] * static_cast<double>(dist[to[i] * n + r]);
            cl[i] = static_cast<float>(v);  // rounded up where float cannot hold it (as the engine does)
            if (static_cast<double>(cl[i]) < v) cl[i] = std::nextafter(cl[i], std::numeric_limits<float>::infinity());
            if (r == 3 && m > 1) cl[i] = 0x1p-140f;  // a subnormal cl above a zero distance
          }
          detail::SketchArgs ga{sk.block_q(b), sk.quads, sk.a.data() + b * detail::kSketchRows,
                                sk.s.data() + b * detail::kSketchRows, sk.delta.data() + b * detail::kSketchRows,
                                cl, cs.cq.data(), cs.cw.data(), cs.cfix.data(), cs.cb.data(), cs.cs.data(),
                                cs.cdelta.data(), m, tau, over};
          // The separable test's inputs (SketchArgs::rr) for the same X = (cl + tau) * over.
          const double lambda = 0x1p-6;
          float rr[detail::kSketchRows], cc[detail::kMaxFew];
          for (std::size_t i = 0; i < detail::kSketchRows; ++i) {
            const double R = std::sqrt((static_cast<double>(cl[i]) + tau) * over) * (1 + 0x1p-50) + ga.delta[i];
            rr[i] = down(static_cast<double>(ga.a[i]) * (1 - 0x1p-18) - (1 + lambda) * R * R * (1 + 0x1p-20));
          }
          for (std::size_t t = 0; t < m; ++t) {
            const double cd = cs.cdelta[t];
            cc[t] = down(static_cast<double>(cs.cb[t]) * (1 - 0x1p-18) - (1 + 1 / lambda) * cd * cd * (1 + 0x1p-20));
          }
          for (const bool sep : {false, true}) {
          ga.rr = sep ? rr : nullptr;
          ga.cc = sep ? cc : nullptr;
          std::uint32_t want[detail::kSketchRows];
          detail::ref_sketch_mask(ga, want);
          for (const auto* tab : detail::kernel_tables<T>()) {
            std::uint32_t mask[detail::kSketchRows];
            tab->sketch_mask(ga, mask);
            if (detail::sketch_vnni_usable()) {
              // The VNNI kernel (the AVX3 table's on this CPU) gives the reference's masks too.
              std::uint32_t vnni[detail::kSketchRows];
              detail::sketch_mask_vnni(ga, vnni);
              ASSERT_TRUE(std::equal(vnni, vnni + detail::kSketchRows, want)) << "VNNI sep=" << sep << " d=" << d << " m=" << m;
            }
            if (detail::sketch_avx2_usable()) {
              // So does AVX2's byte-product kernel (the AVX2 table's).
              std::uint32_t avx2[detail::kSketchRows];
              detail::sketch_mask_avx2(ga, avx2);
              ASSERT_TRUE(std::equal(avx2, avx2 + detail::kSketchRows, want)) << "AVX2 sep=" << sep << " d=" << d << " m=" << m;
            }
            // And the target's portable kernel, which VNNI replaces where the CPU has it.
            std::uint32_t portable[detail::kSketchRows];
            tab->sketch_mask_portable(ga, portable);
            ASSERT_TRUE(std::equal(portable, portable + detail::kSketchRows, want))
                << tab->name << " portable sep=" << sep << " d=" << d << " m=" << m;
            for (std::size_t i = 0; i < detail::kSketchRows; ++i) {
              const std::size_t r = b * detail::kSketchRows + i;
              if (r >= n) continue;
              // Exact integer sums and the same float steps: every target's mask is the reference's.
              ASSERT_EQ(mask[i], want[i]) << tab->name << " sep=" << sep << " d=" << d << " m=" << m << " row " << r;
              ASSERT_EQ(mask[i] >> m, 0u) << tab->name;
              for (std::size_t t = 0; t < m; ++t) {
                if (mask[i] >> t & 1) continue;
                ASSERT_GE(static_cast<double>(dist[t * n + r]), static_cast<double>(cl[i])) << tab->name << " d=" << d << " m=" << m << " row " << r << " cand " << t;
              }
              if (f[i] == 0.5 && r != 3 && r != 5) {
                ++at_half[sep];
                cleared_at_half[sep] += !(mask[i] >> to[i] & 1);
              }
            }
          }
          }
        }
      }
    }
  }
  for (int sep : {0, 1}) {
    ASSERT_GT(at_half[sep], 100u);
    EXPECT_GE(cleared_at_half[sep], at_half[sep] * 99 / 100) << cleared_at_half[sep] << " of " << at_half[sep] << " sep=" << sep;
  }
}

// The sketch's integer sums at the largest D it takes (65536) and the largest bytes: a row
// equal to a candidate (every feature at +-127 in the row's sketch, +-kCandLevels = 31 in the
// candidate's) keeps the pair, on every target; a row of opposite sign is proved far; row 2,
// all +1 like candidate 1, makes the biased sum 255 * 31 * 65536 = 518,062,080, the largest
// there is, and every two quads' byte products sum to 4 * 255 * 31 = 31620 in each int16 lane
// of AVX2's kernel, just within int16.
TEST(SketchFilter, LargestSumsDoNotOverflow) {
  const std::size_t d = 65536, n = detail::kSketchRows;
  std::vector<float> x(n * d), shift(d, 0.0f), c(2 * d);
  std::mt19937_64 rng(5);
  for (std::size_t j = 0; j < d; ++j) {
    const float v = (rng() & 1) ? 1.0f : -1.0f;
    c[j] = v;           // candidate 0
    c[d + j] = 1.0f;    // candidate 1: all +1
    for (std::size_t i = 0; i < n; ++i) x[i * d + j] = i % 2 ? -v : v;
    x[2 * d + j] = 1.0f;
  }
  const PointsRef<float> pts{x.data(), d, d, shift.data()};
  detail::RowSketch sk;
  sk.reset(n, d);
  ASSERT_TRUE(sk.build(pts, 0, n));
  detail::CandSketch cs;
  ASSERT_TRUE(cs.build(c.data(), 2, d));
  float cl[detail::kSketchRows];
  for (auto& v : cl) v = 1.0f;  // the even rows are at distance 0 from candidate 0
  const detail::SketchArgs ga{sk.block_q(0), sk.quads, sk.a.data(), sk.s.data(), sk.delta.data(), cl,
                              cs.cq.data(), cs.cw.data(), cs.cfix.data(), cs.cb.data(), cs.cs.data(),
                              cs.cdelta.data(), 2, 0x1p-126f, 1.001f};
  std::uint32_t want[detail::kSketchRows];
  detail::ref_sketch_mask(ga, want);
  std::vector<void (*)(const detail::SketchArgs&, std::uint32_t*)> fns;
  for (const auto* tab : detail::kernel_tables<float>()) {
    fns.push_back(tab->sketch_mask);
    fns.push_back(tab->sketch_mask_portable);
  }
  if (detail::sketch_vnni_usable()) fns.push_back(&detail::sketch_mask_vnni);
  if (detail::sketch_avx2_usable()) fns.push_back(&detail::sketch_mask_avx2);
  for (auto* fn : fns) {
    std::uint32_t mask[detail::kSketchRows];
    fn(ga, mask);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(mask[i], want[i]) << "row " << i;
      if (i == 2) {
        EXPECT_TRUE(mask[i] >> 1 & 1) << "row 2 equals candidate 1";
      } else if (i % 2 == 0) {
        EXPECT_TRUE(mask[i] & 1) << "row " << i << " equals candidate 0";
      } else {
        EXPECT_FALSE(mask[i] & 1) << "row " << i << " is candidate 0 negated (distance 4 D)";
      }
    }
  }
}

// The bounded assignment's float bound steps: every lowered bound is at most the exact
// difference (a double holds the difference of two floats exactly), never negative, +inf kept;
// the vector lanes give the scalar tail's bits (each G from 1 to 64, so every split); and
// not_above / root_up exclude a group only where l^2 > thr holds exactly.
TEST(Bounds, FloatStepsAreRigorous) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-140, 60);
  auto draw = [&] { return std::ldexp(mant(rng), ex(rng)); };
  for (int trial = 0; trial < 2000; ++trial) {
    const std::size_t G = 1 + static_cast<std::size_t>(trial % 64);
    std::vector<float> lb(G), gd(G);
    for (std::size_t g = 0; g < G; ++g) {
      lb[g] = trial % 7 == 0 && g % 5 == 1 ? std::numeric_limits<float>::infinity() : draw();
      // Drifts near the bound too (cancellation), and zero.
      gd[g] = g % 3 == 0 ? lb[g] * mant(rng) * 0.5f : (g % 3 == 1 ? 0.0f : draw());
      if (std::isinf(gd[g])) gd[g] = 1.0f;
    }
    std::vector<float> got = lb;
    const float lmin = detail::bounds::lower_step(got.data(), gd.data(), G);
    float want_min = std::numeric_limits<float>::infinity();
    for (std::size_t g = 0; g < G; ++g) {
      // One element at a time: the scalar path (a tail of length 1).
      float one = lb[g];
      EXPECT_EQ(detail::bounds::lower_step(&one, &gd[g], 1), one);
      EXPECT_EQ(std::memcmp(&one, &got[g], 4), 0) << "G " << G << " g " << g;
      if (std::isinf(lb[g])) {
        EXPECT_TRUE(std::isinf(got[g]));
      } else {
        EXPECT_GE(got[g], 0.0f);
        // At most the exact difference (0, the weakest bound, where that is not positive).
        EXPECT_LE(static_cast<double>(got[g]), std::max(0.0, static_cast<double>(lb[g]) - static_cast<double>(gd[g])))
            << lb[g] << " - " << gd[g];
        // Not needlessly weak: within two float steps of the exact difference (or 0).
        const double e = static_cast<double>(lb[g]) - static_cast<double>(gd[g]);
        if (e > 0x1p-120) {
          EXPECT_GE(static_cast<double>(got[g]), e * (1 - 0x1p-22)) << lb[g] << " - " << gd[g];
        }
      }
      want_min = std::min(want_min, got[g]);
    }
    EXPECT_EQ(lmin, want_min);
    // not_above against the exact test, for thresholds around each bound's square.
    for (std::size_t g = 0; g < G; ++g) {
      if (std::isinf(got[g])) continue;
      const double l = got[g];
      for (const double f : {0.5, 1 - 0x1p-30, 1.0, 1 + 0x1p-30, 2.0}) {
        const double thr = l * l * f;
        const float t = detail::bounds::root_up(thr);
        const std::uint64_t need = detail::bounds::not_above(got.data(), G, t);
        for (std::size_t h = 0; h < G; ++h) {
          const bool excluded = !((need >> h) & 1);
          EXPECT_EQ(excluded, got[h] > t);
          // Exclusion is a proof: l^2 > thr in exact arithmetic (long double has the room:
          // both sides are within its range and the products of floats are exact in it up to
          // 2^-64 relative, far inside the 2^-40 root_up keeps).
          if (excluded && !std::isinf(got[h])) {
            EXPECT_GT(static_cast<long double>(got[h]) * got[h], static_cast<long double>(thr));
          }
        }
      }
    }
  }
  EXPECT_EQ(detail::bounds::root_up(0.0), 0.0f);
  EXPECT_EQ(detail::bounds::root_up(-1.0), 0.0f);
  EXPECT_TRUE(std::isinf(detail::bounds::root_up(std::nan(""))));  // a NaN threshold keeps every group
}

// Rows and candidates whose values the filter's float arithmetic does not cover (largest |y_j|
// below 2^-50 or above 2^40) keep every pair; the other rows of their block still filter.
TEST(SketchFilter, OutOfRangeRowsKeepEveryPair) {
  const std::size_t d = 20, n = 16;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<float> x(n * d), shift(d, 0.0f), c(2 * d);
  for (auto& v : x) v = static_cast<float>(g(rng));
  for (std::size_t j = 0; j < d; ++j) {
    x[2 * d + j] = static_cast<float>(1e-20 * g(rng));  // tiny
    x[4 * d + j] = static_cast<float>(1e13 * g(rng));   // huge
  }
  for (auto& v : c) v = static_cast<float>(50 + g(rng));  // far from every row
  for (std::size_t j = 0; j < d; ++j) c[d + j] = static_cast<float>(1e-20 * g(rng));
  const PointsRef<float> pts{x.data(), d, d, shift.data()};
  detail::RowSketch sk;
  sk.reset(n, d);
  ASSERT_TRUE(sk.build(pts, 0, n));
  EXPECT_TRUE(std::isinf(sk.delta[2]));
  EXPECT_TRUE(std::isinf(sk.delta[4]));
  detail::CandSketch cs;
  ASSERT_TRUE(cs.build(c.data(), 2, d));
  EXPECT_TRUE(std::isinf(cs.cdelta[1]));
  float cl[detail::kSketchRows];
  for (auto& v : cl) v = 1.0f;  // far below the distance to candidate 0 for normal rows
  const detail::SketchArgs ga{sk.block_q(0), sk.quads, sk.a.data(), sk.s.data(), sk.delta.data(), cl,
                              cs.cq.data(), cs.cw.data(), cs.cfix.data(), cs.cb.data(), cs.cs.data(),
                              cs.cdelta.data(), 2, 0x1p-126f, 1.001f};
  for (const auto* tab : detail::kernel_tables<float>()) {
    std::uint32_t mask[detail::kSketchRows];
    tab->sketch_mask(ga, mask);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_TRUE(mask[i] >> 1 & 1) << tab->name << " row " << i << ": the tiny candidate keeps every pair";
      if (i == 2 || i == 4) {
        EXPECT_TRUE(mask[i] & 1) << tab->name << " row " << i << " is out of range: its pairs are kept";
      } else {
        EXPECT_FALSE(mask[i] & 1) << tab->name << " row " << i << " is far from candidate 0";
      }
    }
  }
  // A value that is not finite is refused.
  x[7 * d + 3] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(sk.build(pts, 0, n));
}

TYPED_TEST(KernelTest, AccumulateRunMatchesReferenceBitwise) {
  using T = TypeParam;
  const auto& ref = detail::reference_table<T>();
  std::uint64_t seed = 500;
  for (const auto* table : detail::kernel_tables<T>()) {
    for (std::size_t d : kDims) {
      SCOPED_TRACE(::testing::Message() << table->name << " d=" << d);
      const std::size_t n = 97;
      const std::size_t stride = d + 1;
      auto X = testing::blobs<T>(n, stride, 3, seed++, 2.0, 50.0);
      std::vector<T> shift_t(d, T(50.25));
      const PointsRef<T> pts{X.data(), stride, d, shift_t.data()};
      std::vector<std::uint32_t> idx;
      std::mt19937 rng{static_cast<unsigned>(seed)};
      for (std::uint32_t i = 0; i < n; ++i) {
        if (rng() % 3) idx.push_back(i);
      }
      std::vector<double> w(n);
      for (double& v : w) v = double(rng() % 1000) / 100.0;
      std::vector<double> centroid(d);
      for (double& v : centroid) v = 45.0 + double(rng() % 100) / 7.0;
      for (const double* weights : {static_cast<const double*>(nullptr), static_cast<const double*>(w.data())}) {
        std::vector<double> s1(d, 0.5), s2(d, 0.5), q1(d, 0.25), q2(d, 0.25);
        double w1 = 1, w2 = 1;
        ref.accumulate_run(pts, idx.data(), idx.size(), idx.size(), weights, centroid.data(), s1.data(), &w1, q1.data());
        table->accumulate_run(pts, idx.data(), idx.size(), idx.size(), weights, centroid.data(), s2.data(), &w2, q2.data());
        EXPECT_EQ(0, std::memcmp(s1.data(), s2.data(), d * sizeof(double)));
        EXPECT_EQ(0, std::memcmp(q1.data(), q2.data(), d * sizeof(double)));
        EXPECT_EQ(w1, w2);
      }
    }
  }
}

}  // namespace
}  // namespace flashkm
