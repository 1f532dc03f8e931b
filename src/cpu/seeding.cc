// Bounded greedy k-means++ (see seeding.hpp).
#include "cpu/seeding.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "cpu/bounds.hpp"
#include "cpu/groups.hpp"
#include "cpu/prefetch.hpp"

namespace flashkm::detail {
namespace {

// A squared distance d^ that the kernels compute from differences of rows and centres held in
// T (sqdist_one, sqdist_few, the reference's scalar loop) satisfies
//   (1 - g) d - tau <= d^ <= (1 + g) d + tau
// for the exact squared distance d between the rounded row y = x - shift (the same y for every
// centre: the first subtraction does not depend on it) and the centre: each difference rounds
// once, each square and addition once (twice without fused multiply-adds), so g = gamma_{2D+8}
// covers it with room; tau covers products and sums in the subnormal range.
template <class T>
struct DistanceSlack {
  double g;
  double tau;
  double e;  // relative error of a norm taken by norms() (float64 sum of squares, square root)
  explicit DistanceSlack(std::size_t dim)
      : g(bounds::gamma<T>(2 * dim + 8)),
        tau(static_cast<double>(2 * dim + 8) * static_cast<double>(std::numeric_limits<T>::denorm_min())),
        e(2 * bounds::gamma<double>(dim + 4)) {}

  // The exact squared distance below which a computed one could fall under cl:
  // computed >= (1 - g) exact - tau >= cl whenever exact >= (cl + tau) / (1 - g).
  double safe(double cl) const { return (cl + tau) * over; }
  double over = 1 / (1 - g) * (1 + std::ldexp(1.0, -40));

  // A computed norm widened to an interval holding the exact one.
  double lo(double norm) const { return norm * (1 - e); }
  double hi(double norm) const { return norm * (1 + e); }
};

// Covers the float64 rounding of a test's own arithmetic.
const double kShave = 1 - std::ldexp(1.0, -40);

// The norm filter (Rodriguez Corominas et al. 2024): ‖y - c‖ >= |‖y‖ - ‖c‖|, from the norms'
// intervals [ylo, yhi] and [clo, chi]; true when that proves ‖y - c‖^2 >= safe.
bool far_by_norms(double ylo, double yhi, double clo, double chi, double safe) {
  const double gap = std::max({0.0, ylo - chi, clo - yhi});
  return gap * gap * kShave >= safe;
}

// Centres per call of sqdist_few when taking thresholds (a buffer of this many x m).
constexpr std::size_t kThresholdRows = 256;

// Rows per sub-block of the bounded passes: scored in one kernel call when the bounds exclude
// few of its pairs (as the plain passes score every pair), else row by row, each row against its
// surviving candidates alone.
constexpr std::size_t kSeedRows = 256;
bool dense(std::size_t live_pairs, std::size_t pairs) { return live_pairs * 8 > pairs * 7; }

}  // namespace

template <class T>
void seed_thresholds(const KernelTable<T>& table, std::size_t dim, const T* centres, std::size_t count,
                     const T* cands, std::size_t m, std::vector<double>& thr) {
  thr.resize(count * m);
  const std::vector<T> zero(dim, T(0));
  const PointsRef<T> ref{centres, dim, dim, zero.data()};
  std::vector<T> d(kThresholdRows * kMaxFew);
  const DistanceSlack<T> s(dim);
  for (std::size_t a0 = 0; a0 < count; a0 += kThresholdRows) {
    const std::size_t a1 = std::min(count, a0 + kThresholdRows);
    for (std::size_t t0 = 0; t0 < m; t0 += kMaxFew) {
     const std::size_t mm = std::min(kMaxFew, m - t0);
     table.sqdist_few(ref, cands + t0 * dim, mm, a0, a1, d.data());
     for (std::size_t i = 0; i < (a1 - a0) * mm; ++i) {
      // Exact ||c - a||^2 >= (d^ - tau) / (1 + g) =: A; exact ||y - a||^2 <= (cl + tau) / (1 - g)
      // =: B. If A >= 4B then ||y - c|| >= sqrt(A) - sqrt(B) >= sqrt(B), so the candidate's
      // computed distance is >= (1 - g) B - tau = cl. Hence cl <= (1 - g) A / 4 - tau suffices;
      // the double arithmetic here is covered by a relative 2^-40.
      const double dh = static_cast<double>(d[i]);
      double t = 0;
      if (std::isfinite(dh)) {
        const double a = (dh - s.tau) / (1 + s.g);
        t = ((1 - s.g) * a * 0.25 - s.tau) * (1 - std::ldexp(1.0, -40));
      }
      // cl = 0 is never lowered (distances are >= 0, and min keeps cl on equality).
      thr[(a0 + i / mm) * m + t0 + i % mm] = std::max(t, 0.0);
     }
    }
  }
}

// p[u] += w_i * min(cl_i, d_i,t+u) over rows i in order, for u < W (a pair the bounds skipped
// holds +inf, so min() gives cl_i as the plain potentials' min does). Unweighted rows add
// min() itself: w_i = 1 multiplies exactly.
template <class T, std::size_t W, bool Weighted>
void add_terms(const SeedRows<T>& rs, std::size_t s, std::size_t rows, const T* d, std::size_t mm, std::size_t t,
               double* p) {
  double acc[W];
  for (std::size_t u = 0; u < W; ++u) acc[u] = p[u];
  for (std::size_t i = 0; i < rows; ++i) {
    const T cl = rs.closest[s + i];
    const T* di = d + i * mm + t;
    if constexpr (Weighted) {
      const double wi = rs.w[s + i];
      for (std::size_t u = 0; u < W; ++u) acc[u] += wi * static_cast<double>(std::min(cl, di[u]));
    } else {
      for (std::size_t u = 0; u < W; ++u) acc[u] += static_cast<double>(std::min(cl, di[u]));
    }
  }
  for (std::size_t u = 0; u < W; ++u) p[u] = acc[u];
}

template <class T, std::size_t... W>
void add_terms_w(std::index_sequence<W...>, std::size_t w, const SeedRows<T>& rs, std::size_t s, std::size_t rows,
                 const T* d, std::size_t mm, std::size_t t, double* p) {
  if (rs.w) {
    ((w == W + 1 ? add_terms<T, W + 1, true>(rs, s, rows, d, mm, t, p) : void()), ...);
  } else {
    ((w == W + 1 ? add_terms<T, W + 1, false>(rs, s, rows, d, mm, t, p) : void()), ...);
  }
}

template <class T>
void add_terms_of(std::size_t w, const SeedRows<T>& rs, std::size_t s, std::size_t rows, const T* d, std::size_t mm,
                  std::size_t t, double* p) {
  add_terms_w<T>(std::make_index_sequence<8>(), w, rs, s, rows, d, mm, t, p);
}

// Sub-blocks filtered (and their kept rows prefetched) ahead of the one scored.
constexpr std::size_t kFilterAhead = 2;

// Sketch blocks prefetched ahead of the filter.
constexpr std::size_t kSketchAhead = 8;

// The sketch filter's masks of rows [s, s + rows) for candidates [t0, t0 + mm): the blocks of
// kSketchRows rows that cover them (pts numbers the whole data set, as the sketch does).
template <class T>
void sketch_rows(const KernelTable<T>& table, const RowSketch& sk, const CandSketch& cs, const T* closest,
                 std::size_t s, std::size_t rows, std::size_t t0, std::size_t mm, float tau, float over,
                 std::uint32_t* mask) {
  SketchArgs g{};
  cs.point_at(g, sk.quads, t0, mm);
  g.tau = tau;
  g.over = over;
  std::uint32_t got[kSketchRows];
  float cl[kSketchRows];
  const std::size_t nblocks = (sk.rows + kSketchRows - 1) / kSketchRows;
  const std::size_t qbytes = sk.quads * kSketchRows * 4;
  for (std::size_t b = s / kSketchRows; b * kSketchRows < s + rows; ++b) {
    const std::size_t b0 = b * kSketchRows;
    // The sketch is read once per step from DRAM; the hardware prefetcher alone left the filter
    // waiting on it (the scattered rows scored between sub-blocks break its streams).
    if (b + kSketchAhead < nblocks) {
      prefetch_lines<3>(sk.block_q(b + kSketchAhead), qbytes);
      prefetch_lines<3>(sk.a.data() + (b + kSketchAhead) * kSketchRows, kSketchRows * 4);
      prefetch_lines<3>(sk.s.data() + (b + kSketchAhead) * kSketchRows, kSketchRows * 4);
      prefetch_lines<3>(sk.delta.data() + (b + kSketchAhead) * kSketchRows, kSketchRows * 4);
    }
    // The block's closest distances as float, rounded up (exact for float rows; zero past the
    // last row, whose masks are not used).
    for (std::size_t i = 0; i < kSketchRows; ++i) {
      const std::size_t r = b0 + i;
      if constexpr (std::is_same_v<T, float>) {
        cl[i] = r < sk.rows ? closest[r] : 0.0f;
      } else {
        cl[i] = r < sk.rows ? bounds::up(static_cast<double>(closest[r])) : 0.0f;
      }
    }
    sk.point_at(g, b);
    g.cl = cl;
    table.sketch_mask(g, got);
    const std::size_t i0 = std::max(b0, s), i1 = std::min(b0 + kSketchRows, s + rows);
    for (std::size_t r = i0; r < i1; ++r) mask[r - s] = got[r - b0];
  }
}

// Row r's distances to the candidates c[t] (t < mm) that bit t of mask (non-zero) keeps, into
// out[t], bitwise sqdist_one's; +inf for the others (their computed distance would be >= the
// row's closest one, so min() keeps that). Returns the distances computed.
template <class T>
std::size_t score_kept(const KernelTable<T>& table, const PointsRef<T>& pts, const T* c, std::uint32_t mask,
                       std::size_t mm, std::size_t r, T* out) {
  const std::size_t k = bits_set64(mask);
  if (k == mm) {
    table.sqdist_few(pts, c, mm, r, r + 1, out);
    return mm;
  }
  // Only the kept candidates, by pointer (sqdist_listed: the same bits as sqdist_few).
  const T* ptrs[kMaxFew];
  std::size_t slot[kMaxFew];
  std::size_t n = 0;
  for (std::uint32_t b = mask; b; b &= b - 1) {
    slot[n] = static_cast<std::size_t>(std::countr_zero(b));
    ptrs[n] = c + slot[n] * pts.dim;
    ++n;
  }
  T got[kMaxFew];
  table.sqdist_listed(pts, ptrs, k, r, r + 1, got);
  std::fill_n(out, mm, std::numeric_limits<T>::infinity());
  for (std::size_t u = 0; u < k; ++u) out[slot[u]] = got[u];
  return k;
}

// Records the pairs of one row (row, from the block's first row) whose distance d[t] to
// candidate t0 + t lowers its closest distance cl: sqdist_few's distance is bitwise
// sqdist_one's (kernel_table.hpp), so keeping a candidate needs no pass over X. The
// comparisons are taken without branches (few rows are lowered).
template <class T>
void record_lowerings(SeedRecords<T>& rec, std::size_t row, std::size_t t0, T cl, const T* d, std::size_t mm) {
  std::uint32_t low = 0;
  for (std::size_t t = 0; t < mm; ++t) low |= static_cast<std::uint32_t>(d[t] < cl) << t;
  for (; low; low &= low - 1) {
    const std::size_t t = static_cast<std::size_t>(std::countr_zero(low));
    if (rec.out->size() == rec.cap) {
      rec.overflow = true;
      rec.out->clear();
      return;
    }
    rec.out->push_back({static_cast<std::uint32_t>(row), static_cast<std::uint32_t>(t0 + t), d[t]});
  }
}

// p[u] += w_i * min(cl_i, d_i,t+u) over rows i in order, for u < W, where only the rows in
// surv (ascending, their distances at d + j * mm) may have a candidate below cl_i: every other
// row adds w_i * cl_i, as min() would give it.
template <class T, std::size_t W, bool Weighted>
void add_terms_sparse(const SeedRows<T>& rs, std::size_t s, std::size_t rows, const std::uint32_t* surv,
                      std::size_t ns, const T* d, std::size_t mm, std::size_t t, double* p) {
  double acc[W];
  for (std::size_t u = 0; u < W; ++u) acc[u] = p[u];
  std::size_t j = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    const T cl = rs.closest[s + i];
    const double wi = Weighted ? rs.w[s + i] : 1.0;
    if (j < ns && surv[j] == i) {
      const T* di = d + j * mm + t;
      for (std::size_t u = 0; u < W; ++u) {
        const double v = static_cast<double>(std::min(cl, di[u]));
        acc[u] += Weighted ? wi * v : v;
      }
      ++j;
    } else {
      const double v = Weighted ? wi * static_cast<double>(cl) : static_cast<double>(cl);
      for (std::size_t u = 0; u < W; ++u) acc[u] += v;
    }
  }
  for (std::size_t u = 0; u < W; ++u) p[u] = acc[u];
}

template <class T, std::size_t... W>
void add_terms_sparse_of(std::index_sequence<W...>, std::size_t w, const SeedRows<T>& rs, std::size_t s,
                         std::size_t rows, const std::uint32_t* surv, std::size_t ns, const T* d, std::size_t mm,
                         std::size_t t, double* p) {
  if (rs.w) {
    ((w == W + 1 ? add_terms_sparse<T, W + 1, true>(rs, s, rows, surv, ns, d, mm, t, p) : void()), ...);
  } else {
    ((w == W + 1 ? add_terms_sparse<T, W + 1, false>(rs, s, rows, surv, ns, d, mm, t, p) : void()), ...);
  }
}

// One sub-block's filter results (sketch_block_potentials).
struct SketchSub {
  std::uint32_t mask[kSeedRows];
  std::uint32_t surv[kSeedRows];  // the rows with a surviving pair, ascending
  std::size_t ns = 0;
};

// seed_block_potentials for a step with the sketch: the filter's masks for a sub-block, then
// only the rows it keeps are read and scored against the candidates it keeps; every other row
// adds its closest distance. The kept rows are scattered, so the next sub-block is filtered
// and its kept rows prefetched before this one's are scored (their DRAM latency overlaps the
// filter's arithmetic).
template <class T>
std::uint64_t sketch_block_potentials(const KernelTable<T>& table, const PointsRef<T>& pts, std::size_t r0,
                                      std::size_t r1, const SeedRows<T>& rs, const SeedStep<T>& step, double* p,
                                      SeedRecords<T>* rec) {
  std::uint64_t computed = 0;
  const std::size_t dim = pts.dim;
  const std::size_t m = step.m;
  const DistanceSlack<T> sl(dim);
  // The filter's slack, rounded up to float (a larger slack only keeps more pairs).
  const float tau_f = bounds::up(std::max(sl.tau, 0x1p-126));
  const float over_f = bounds::up(sl.over);
  T d[kSeedRows * kMaxFew];
  SketchSub buf[kFilterAhead + 1];

  auto filter = [&](std::size_t s, std::size_t t0, SketchSub& u) {
    const std::size_t rows = std::min(kSeedRows, r1 - s), mm = std::min(kMaxFew, m - t0);
    sketch_rows(table, *step.sketch, *step.cand_sketch, rs.closest, s, rows, t0, mm, tau_f, over_f, u.mask);
    u.ns = 0;
    for (std::size_t i = 0; i < rows; ++i) {
      u.surv[u.ns] = static_cast<std::uint32_t>(i);
      u.ns += u.mask[i] != 0;
    }
    if (!dense(u.ns * mm, rows * mm)) {
      for (std::size_t j = 0; j < u.ns; ++j) prefetch_lines<3>(pts.x + (s + u.surv[j]) * pts.stride, dim * sizeof(T));
    }
  };

  auto score = [&](std::size_t s, std::size_t t0, SketchSub& u) {
    const std::size_t rows = std::min(kSeedRows, r1 - s), mm = std::min(kMaxFew, m - t0);
    const T* c = step.cands + t0 * dim;
    std::size_t ns = u.ns;
    // The surviving pairs are counted only where they could be dense (at most ns * mm).
    std::size_t live = 0;
    if (dense(ns * mm, rows * mm)) {
      for (std::size_t j = 0; j < ns; ++j) live += bits_set64(u.mask[u.surv[j]]);
    }
    if (dense(live, rows * mm)) {
      // Nearly every pair survives (the first steps): one call for the sub-block.
      table.sqdist_few(pts, c, mm, s, s + rows, d);
      computed += rows * mm;
      ns = rows;
      for (std::size_t i = 0; i < rows; ++i) u.surv[i] = static_cast<std::uint32_t>(i);
    } else {
      for (std::size_t j = 0; j < ns; ++j) {
        computed += score_kept(table, pts, c, u.mask[u.surv[j]], mm, s + u.surv[j], d + j * mm);
      }
    }
    for (std::size_t t = 0; t < mm; t += 8) {
      add_terms_sparse_of<T>(std::make_index_sequence<8>(), std::min<std::size_t>(8, mm - t), rs, s, rows, u.surv, ns,
                             d, mm, t, p + t0 + t);
    }
    if (!rec || rec->overflow) return;
    // The pairs that lower a row's closest distance are among the survivors.
    for (std::size_t j = 0; j < ns && !rec->overflow; ++j) {
      const std::size_t i = u.surv[j];
      record_lowerings(*rec, s + i - rec->first, t0, rs.closest[s + i], d + j * mm, mm);
    }
  };

  if (m <= kMaxFew) {
    // One candidate chunk (2 + ln K <= 16 for any K below a million): filtered kFilterAhead sub-blocks ahead.
    constexpr std::size_t kB = kFilterAhead + 1;
    for (std::size_t a = 0; a < kFilterAhead && r0 + a * kSeedRows < r1; ++a) filter(r0 + a * kSeedRows, 0, buf[a]);
    std::size_t k = 0;
    for (std::size_t s = r0; s < r1; s += kSeedRows, ++k) {
      const std::size_t next = s + kFilterAhead * kSeedRows;
      if (next < r1) filter(next, 0, buf[(k + kFilterAhead) % kB]);
      score(s, 0, buf[k % kB]);
    }
  } else {
    for (std::size_t s = r0; s < r1; s += kSeedRows) {
      for (std::size_t t0 = 0; t0 < m; t0 += kMaxFew) {
        filter(s, t0, buf[0]);
        score(s, t0, buf[0]);
      }
    }
  }
  return computed;
}

template <class T>
std::uint64_t seed_block_potentials(const KernelTable<T>& table, const PointsRef<T>& pts, std::size_t r0,
                                    std::size_t r1, const SeedRows<T>& rs, const SeedStep<T>& step, double* p,
                                    SeedRecords<T>* rec) {
  if (step.sketch) return sketch_block_potentials(table, pts, r0, r1, rs, step, p, rec);
  std::uint64_t computed = 0;
  const std::size_t dim = pts.dim;
  const std::size_t m = step.m;
  const DistanceSlack<T> sl(dim);
  constexpr T kInf = std::numeric_limits<T>::infinity();
  T d[kSeedRows * kMaxFew];
  std::uint32_t mask[kSeedRows];  // bit t: candidate t may lower the row's closest distance
  // The candidates' norms, widened by their rounding (the norm filter).
  double nlo[kMaxFew], nhi[kMaxFew];
  for (std::size_t s = r0; s < r1; s += kSeedRows) {
    const std::size_t rows = std::min(kSeedRows, r1 - s);
    for (std::size_t t0 = 0; t0 < m; t0 += kMaxFew) {
      const std::size_t mm = std::min(kMaxFew, m - t0);
      for (std::size_t t = 0; t < mm && step.bounded; ++t) {
        nlo[t] = sl.lo(step.cand_norm[t0 + t]);
        nhi[t] = sl.hi(step.cand_norm[t0 + t]);
      }
      std::size_t live = rows * mm;  // surviving pairs
      if (step.bounded) live = 0;
      for (std::size_t i = 0; i < rows && step.bounded; ++i) {
        const double cl = static_cast<double>(rs.closest[s + i]);
        const double* th = step.thr + static_cast<std::size_t>(rs.owner[s + i]) * m + t0;
        std::uint32_t bits = 0;
        for (std::size_t t = 0; t < mm; ++t) bits |= static_cast<std::uint32_t>(cl > th[t]) << t;
        if (bits) {
          const double safe = sl.safe(cl);
          const double ylo = sl.lo(rs.norm[s + i]), yhi = sl.hi(rs.norm[s + i]);
          for (std::size_t t = 0; t < mm; ++t) {
            if (far_by_norms(ylo, yhi, nlo[t], nhi[t], safe)) bits &= ~(std::uint32_t{1} << t);
          }
        }
        mask[i] = bits;
        live += bits_set64(bits);
      }
      const T* c = step.cands + t0 * dim;
      if (!step.bounded || dense(live, rows * mm)) {
        // Nearly every pair survives: score them all in one call, as the plain potentials
        // do (a skipped pair's distance is >= the closest one, so min() keeps the closest).
        table.sqdist_few(pts, c, mm, s, s + rows, d);
        computed += rows * mm;
      } else {
        // A skipped pair holds +inf: its computed distance would be >= cl, so min() keeps cl.
        for (std::size_t i = 0; i < rows; ++i) {
          if (mask[i] == 0) {
            std::fill_n(d + i * mm, mm, kInf);
          } else {
            computed += score_kept(table, pts, c, mask[i], mm, s + i, d + i * mm);
          }
        }
      }
      // Each candidate's sum runs over the rows in order (as the plain potentials add them);
      // up to eight candidates' sums at a time stay in registers, their chains side by side.
      for (std::size_t t = 0; t < mm; t += 8) add_terms_of<T>(std::min<std::size_t>(8, mm - t), rs, s, rows, d, mm, t, p + t0 + t);
      if (!rec || rec->overflow) continue;
      for (std::size_t i = 0; i < rows && !rec->overflow; ++i) {
        record_lowerings(*rec, s + i - rec->first, t0, rs.closest[s + i], d + i * mm, mm);
      }
    }
  }
  return computed;
}

template <class T>
std::uint64_t seed_lower_rows(const KernelTable<T>& table, const PointsRef<T>& pts, std::size_t r0,
                              std::size_t r1, const double* row_norm, const T* centre, double centre_norm,
                              const double* thr, std::int32_t index, T* closest, std::int32_t* owner) {
  std::uint64_t computed = 0;
  const DistanceSlack<T> sl(pts.dim);
  T d[kSeedRows];
  bool live[kSeedRows];
  for (std::size_t s = r0; s < r1; s += kSeedRows) {
    const std::size_t rows = std::min(kSeedRows, r1 - s);
    std::size_t survivors = 0;
    for (std::size_t i = 0; i < rows; ++i) {
      const double cl = static_cast<double>(closest[s + i]);
      live[i] = cl > thr[owner[s + i]] &&
                (centre_norm < 0 || !far_by_norms(sl.lo(row_norm[s + i]), sl.hi(row_norm[s + i]),
                                                  sl.lo(centre_norm), sl.hi(centre_norm), sl.safe(cl)));
      survivors += live[i];
    }
    if (survivors == 0) continue;
    const bool all = dense(survivors, rows);
    if (all) {
      table.sqdist_one(pts, centre, s, s + rows, d);
      computed += rows;
    }
    for (std::size_t i = 0; i < rows; ++i) {
      const T cl = closest[s + i];
      if (!all) {
        if (!live[i]) continue;
        table.sqdist_one(pts, centre, s + i, s + i + 1, d + i);
        ++computed;
      }
      if (d[i] < cl) {  // as min(cl, d): a skipped row's d is >= cl
        closest[s + i] = d[i];
        owner[s + i] = index;
      }
    }
  }
  return computed;
}

template <class T>
void seed_norms(const PointsRef<T>& pts, std::size_t r0, std::size_t r1, double* out) {
  for (std::size_t r = r0; r < r1; ++r) {
    double sq = 0;
    const T* row = pts.x + r * pts.stride;
    for (std::size_t j = 0; j < pts.dim; ++j) {
      const double y = static_cast<double>(static_cast<T>(row[j] - pts.shift[j]));  // as the kernels centre
      sq += y * y;
    }
    out[r - r0] = std::sqrt(sq);
  }
}

template void seed_norms<float>(const PointsRef<float>&, std::size_t, std::size_t, double*);
template void seed_norms<double>(const PointsRef<double>&, std::size_t, std::size_t, double*);
template void seed_thresholds<float>(const KernelTable<float>&, std::size_t, const float*, std::size_t,
                                     const float*, std::size_t, std::vector<double>&);
template void seed_thresholds<double>(const KernelTable<double>&, std::size_t, const double*, std::size_t,
                                      const double*, std::size_t, std::vector<double>&);
template std::uint64_t seed_block_potentials<float>(const KernelTable<float>&, const PointsRef<float>&,
                                                    std::size_t, std::size_t, const SeedRows<float>&,
                                                    const SeedStep<float>&, double*, SeedRecords<float>*);
template std::uint64_t seed_block_potentials<double>(const KernelTable<double>&, const PointsRef<double>&,
                                                     std::size_t, std::size_t, const SeedRows<double>&,
                                                     const SeedStep<double>&, double*, SeedRecords<double>*);
template std::uint64_t seed_lower_rows<float>(const KernelTable<float>&, const PointsRef<float>&, std::size_t,
                                              std::size_t, const double*, const float*, double, const double*,
                                              std::int32_t, float*, std::int32_t*);
template std::uint64_t seed_lower_rows<double>(const KernelTable<double>&, const PointsRef<double>&, std::size_t,
                                               std::size_t, const double*, const double*, double, const double*,
                                               std::int32_t, double*, std::int32_t*);

}  // namespace flashkm::detail
