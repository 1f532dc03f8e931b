// FlashAssign and the Sort-Inverse Update inner loop, written once with Highway and compiled for
// every SIMD target (AVX-512, AVX2, SSE4, scalar); kernel_tables() lists those the CPU supports
// through Highway's dispatch tables (cpu/dispatch.hpp).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "cpu/bounds.hpp"
#include "cpu/dispatch.hpp"
#include "cpu/kernel_table.hpp"
#include "cpu/prefetch.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels_simd.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/aligned_allocator.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace flashkm::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Register tile of the FlashAssign micro-kernel: kMR points x NV vectors of centroids, NV =
// kWideNV, or 1 for the narrow panel used when K fits one vector (K = 8 or 10 would leave most
// of a wide panel as padding).
// The accumulators (kMR * NV), NV centroid loads and one broadcast must fit the register file
// without spilling, as in a BLIS sgemm micro-kernel: AVX-512 has 32 registers -> 12 x 2 (24
// accumulators, 27 live); AVX2/SSE4 have 16 -> 6 x 2 (12 accumulators, 15 live).
#if HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128
constexpr std::size_t kMR = 4;
constexpr std::size_t kWideNV = 4;
#elif HWY_TARGET <= HWY_AVX3
constexpr std::size_t kMR = 12;
constexpr std::size_t kWideNV = 2;
#else
constexpr std::size_t kMR = 6;
constexpr std::size_t kWideNV = 2;
#endif

// Points packed per block: the block (rows x dim) stays in L2 while every centroid panel
// streams through L1 once per block.
constexpr std::size_t kBlockBytes = 192 * 1024;

template <class T>
using Tag = hn::ScalableTag<T>;

template <class T, std::size_t NV>
std::size_t PanelWidth() {
  return NV * hn::Lanes(Tag<T>());
}

template <class T, std::size_t NV>
std::size_t PackedSize(std::size_t k, std::size_t dim) {
  const std::size_t nr = PanelWidth<T, NV>();
  const std::size_t kpad = (k + nr - 1) / nr * nr;
  return kpad * dim + kpad;
}

template <class T, std::size_t NV>
void PackCentroids(const double* c, std::size_t k, std::size_t dim, T* packed) {
  const std::size_t nr = PanelWidth<T, NV>();
  const std::size_t npanels = (k + nr - 1) / nr;
  T* norms = packed + npanels * nr * dim;
  for (std::size_t p = 0; p < npanels; ++p) {
    T* panel = packed + p * nr * dim;
    for (std::size_t l = 0; l < nr; ++l) {
      const std::size_t ci = p * nr + l;
      if (ci >= k) {
        for (std::size_t j = 0; j < dim; ++j) panel[j * nr + l] = T(0);
        norms[ci] = std::numeric_limits<T>::infinity();
        continue;
      }
      // The norm is taken of the rounded values that the kernel multiplies with, so that
      // ||x||^2 + ||c||^2 - 2x.c is the expansion of one and the same pair of vectors.
      T norm = T(0);
      for (std::size_t j = 0; j < dim; ++j) {
        const T v = static_cast<T>(c[ci * dim + j]);
        panel[j * nr + l] = v;
        norm += v * v;
      }
      norms[ci] = norm;
    }
  }
}

// Copies the rows src[0..m) centred on the shift into `xp` (kMR rows of dim, zero beyond m) and
// writes their squared norms. Centring here, while the rows are packed anyway, is what keeps
// data with a large common offset exact without a centred copy of X. One out-of-line function
// serves every caller (contiguous slivers, gathered survivors of the bounded assignment, AMX's
// re-scoring), so each row's packed values and norm are the same bits whoever packs it.
template <class T>
HWY_NOINLINE void PackRowPtrs(const T* const* src_rows, const T* shift, std::size_t dim, std::size_t m,
                              T* HWY_RESTRICT xp, T* HWY_RESTRICT xnorm) {
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  for (std::size_t i = 0; i < kMR; ++i) {
    T* dst = xp + i * dim;
    if (i >= m) {
      std::fill(dst, dst + dim, T(0));
      xnorm[i] = T(0);
      continue;
    }
    const T* src = src_rows[i];
    auto acc = hn::Zero(d);
    std::size_t j = 0;
    for (; j + L <= dim; j += L) {
      const auto v = hn::Sub(hn::LoadU(d, src + j), hn::LoadU(d, shift + j));
      hn::StoreU(v, d, dst + j);
      acc = hn::MulAdd(v, v, acc);
    }
    T norm = hn::GetLane(hn::SumOfLanes(d, acc));
    for (; j < dim; ++j) {
      const T v = src[j] - shift[j];
      dst[j] = v;
      norm += v * v;
    }
    xnorm[i] = norm;
  }
}

// Rows [r, r + m) of pts as one sliver.
template <class T>
void PackSliver(const PointsRef<T>& pts, std::size_t r, std::size_t m, T* HWY_RESTRICT xp,
                T* HWY_RESTRICT xnorm) {
  const T* rows[kMR];
  for (std::size_t i = 0; i < m; ++i) rows[i] = pts.x + (r + i) * pts.stride;
  PackRowPtrs(rows, pts.shift, pts.dim, m, xp, xnorm);
}

// Rows idx[0..m) of pts as one sliver (the bounded assignment's survivors).
template <class T>
void PackRows(const PointsRef<T>& pts, const std::uint32_t* idx, std::size_t m, T* xp, T* xnorm) {
  const T* rows[kMR];
  for (std::size_t i = 0; i < m; ++i) rows[i] = pts.x + static_cast<std::size_t>(idx[i]) * pts.stride;
  PackRowPtrs(rows, pts.shift, pts.dim, m, xp, xnorm);
}

// The register-blocked micro-kernel: acc[i][v] = sum_j xp[i][j] * panel[j][v*L + lane].
template <std::size_t NV, class T, class V>
HWY_INLINE void DotTile(const T* HWY_RESTRICT xp, std::size_t dim, const T* HWY_RESTRICT panel,
                        V (&acc)[kMR][NV]) {
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  const std::size_t nr = NV * L;
#pragma GCC unroll 16
  for (std::size_t i = 0; i < kMR; ++i) {
#pragma GCC unroll 16
    for (std::size_t v = 0; v < NV; ++v) acc[i][v] = hn::Zero(d);
  }
  for (std::size_t j = 0; j < dim; ++j) {
    V c[NV];
#pragma GCC unroll 16
    for (std::size_t v = 0; v < NV; ++v) c[v] = hn::Load(d, panel + j * nr + v * L);
#pragma GCC unroll 16
    for (std::size_t i = 0; i < kMR; ++i) {
      const V xb = hn::Set(d, xp[i * dim + j]);
#pragma GCC unroll 16
      for (std::size_t v = 0; v < NV; ++v) acc[i][v] = hn::MulAdd(xb, c[v], acc[i][v]);
    }
  }
}

// The multiply-adds of features [j0, j1) into acc (DotTileRows, and its sliced form).
template <std::size_t NV, class T, class V>
HWY_INLINE void DotRowsRange(const T* const (&x)[kMR], std::size_t j0, std::size_t j1, const T* HWY_RESTRICT panel,
                             V (&acc)[kMR][NV]) {
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  const std::size_t nr = NV * L;
  for (std::size_t j = j0; j < j1; ++j) {
    V c[NV];
#pragma GCC unroll 16
    for (std::size_t v = 0; v < NV; ++v) c[v] = hn::Load(d, panel + j * nr + v * L);
#pragma GCC unroll 16
    for (std::size_t i = 0; i < kMR; ++i) {
      const V xb = hn::Set(d, x[i][j]);
#pragma GCC unroll 16
      for (std::size_t v = 0; v < NV; ++v) acc[i][v] = hn::MulAdd(xb, c[v], acc[i][v]);
    }
  }
}

// DotTile over kMR packed rows held by pointer (the bounded assignment scores a group's
// survivors where they were packed, without copying them into a sliver): the same
// multiply-adds in the same order, so the same bits as DotTile on those rows.
template <std::size_t NV, class T, class V>
HWY_INLINE void DotTileRows(const T* const* HWY_RESTRICT xr, std::size_t dim, const T* HWY_RESTRICT panel,
                            V (&acc)[kMR][NV]) {
  const Tag<T> d;
  const T* x[kMR];
#pragma GCC unroll 16
  for (std::size_t i = 0; i < kMR; ++i) {
    x[i] = xr[i];
#pragma GCC unroll 16
    for (std::size_t v = 0; v < NV; ++v) acc[i][v] = hn::Zero(d);
  }
  DotRowsRange<NV>(x, 0, dim, panel, acc);
}

// Rows per packed block: a multiple of kMR whose packed copy fits kBlockBytes.
template <class T>
std::size_t BlockRows(std::size_t dim) {
  const std::size_t slivers = std::max<std::size_t>(1, kBlockBytes / (kMR * dim * sizeof(T)));
  return slivers * kMR;
}

// One tile row's scores on a panel (d - ||x||^2 = ||c||^2 - 2 x.c, from its accumulators and the
// panel's norms pn) merged into its per-lane running minima and their centroid indices (best,
// bidx; idx: each vector's indices): a score replaces the minimum only where strictly smaller,
// so a NaN score never does (it would otherwise hide the next vectors' scores in its lane), and
// the lowest index stays on ties because indices grow along v and along panels. Per lane, the
// reference's rule (start at +inf and index 0, take strictly smaller scores).
template <std::size_t NV, class D, class V>
HWY_INLINE void PanelBest(D d, const V (&acc)[NV], const hn::TFromD<D>* pn, const V (&idx)[NV], V minus2, V& best,
                          V& bidx) {
  const std::size_t L = hn::Lanes(d);
  for (std::size_t v = 0; v < NV; ++v) {
    const V sv = hn::MulAdd(acc[v], minus2, hn::Load(d, pn + v * L));
    const auto lt = hn::Lt(sv, best);
    best = hn::IfThenElse(lt, sv, best);
    bidx = hn::IfThenElse(lt, idx[v], bidx);
  }
}

// A row's label from its running minima and their indices: across lanes the smallest value
// (into mn), then the smallest index among the lanes holding it; 0 where no lane matches
// (every score NaN: products overflowed).
template <class D, class V>
HWY_INLINE std::int32_t RowLabel(D d, V vmin, V vidx, std::size_t k, V& mn) {
  using T = hn::TFromD<D>;
  mn = hn::MinOfLanes(d, vmin);
  const V cand = hn::IfThenElse(hn::Eq(vmin, mn), vidx, hn::Set(d, std::numeric_limits<T>::infinity()));
  const T best_idx = hn::GetLane(hn::MinOfLanes(d, cand));
  return best_idx < static_cast<T>(k) ? static_cast<std::int32_t>(best_idx) : 0;
}

// Whether RowMins below serves T's vectors on this target: 128- and 256-bit vectors (SSE4, AVX2,
// EMU128) and AVX-512's 512-bit ones; HWY_SCALAR finishes rows one at a time (RowLabel).
#if HWY_TARGET == HWY_SCALAR
template <class T>
constexpr bool kRowTree = false;
#else
template <class T>
constexpr bool kRowTree = hn::MaxLanes(Tag<T>()) >= 2 &&
                          (hn::MaxLanes(Tag<T>()) * sizeof(T) == 16 || hn::MaxLanes(Tag<T>()) * sizeof(T) == 32
#if HWY_TARGET <= HWY_AVX3
                           || hn::MaxLanes(Tag<T>()) * sizeof(T) == 64
#endif
                          );
#endif

// L rows' minima at once (L lanes a vector, kRowTree): lane r of the result is the smallest lane
// of v[r] (v is overwritten). A tree of shuffles and vertical minima instead of L horizontal
// reductions: pairs of rows interleaved within 128-bit blocks (T lanes, then 64-bit lanes), then
// the two halves of 256-bit vectors, then (512-bit vectors) the 128-bit blocks of two vectors.
// The minimum of values with no NaN does not depend on the
// order they meet in, so each lane is MinOfLanes of its row (a zero's sign aside, which the
// callers' max(0, ||x||^2 + min) does not see).
#if HWY_TARGET != HWY_SCALAR
template <class D, class V>
HWY_INLINE V RowMins(D d, V* v) {
  using T = hn::TFromD<D>;
  constexpr std::size_t L = hn::MaxLanes(D());
  std::size_t n = L;
  if constexpr (sizeof(T) == 4) {
    // [a0 a1 a2 a3], [b0 b1 b2 b3] -> [min(a0, a2) min(b0, b2) min(a1, a3) min(b1, b3)] a block.
    for (std::size_t i = 0; i < n / 2; ++i) {
      v[i] = hn::Min(hn::InterleaveLower(d, v[2 * i], v[2 * i + 1]), hn::InterleaveUpper(d, v[2 * i], v[2 * i + 1]));
    }
    n /= 2;
  }
  // The same on 64-bit lanes: each block then holds one partial minimum of each of its rows.
  const hn::Repartition<std::uint64_t, D> d64;
  for (std::size_t i = 0; i < n / 2; ++i) {
    const auto a = hn::BitCast(d64, v[2 * i]), b = hn::BitCast(d64, v[2 * i + 1]);
    v[i] = hn::Min(hn::BitCast(d, hn::InterleaveLower(d64, a, b)), hn::BitCast(d, hn::InterleaveUpper(d64, a, b)));
  }
  n /= 2;
  if constexpr (L * sizeof(T) == 32) {
    // Two 256-bit vectors of partial minima: the lower halves against the upper halves.
    v[0] = hn::Min(hn::ConcatLowerLower(d, v[1], v[0]), hn::ConcatUpperUpper(d, v[1], v[0]));
  }
#if HWY_TARGET <= HWY_AVX3
  if constexpr (L * sizeof(T) == 64) {
    // Four 512-bit vectors, vector i holding rows 4i..4i+3 (float; 2i, 2i+1 for double) in each
    // of its four blocks: halves against halves, so that each of two vectors holds a pair of
    // blocks per row group, [g0 g0 g1 g1] and [g2 g2 g3 g3]; then the even blocks of both
    // against the odd ones, [g0 g1 g2 g3] (lane r: row r).
    for (std::size_t i = 0; i < 2; ++i) {
      v[i] = hn::Min(hn::ConcatLowerLower(d, v[2 * i + 1], v[2 * i]), hn::ConcatUpperUpper(d, v[2 * i + 1], v[2 * i]));
    }
    const hn::Repartition<float, D> df;
    const __m512 a = hn::BitCast(df, v[0]).raw, b = hn::BitCast(df, v[1]).raw;
    const hn::Vec<decltype(df)> even{_mm512_shuffle_f32x4(a, b, 0x88)}, odd{_mm512_shuffle_f32x4(a, b, 0xDD)};
    v[0] = hn::Min(hn::BitCast(d, even), hn::BitCast(d, odd));
  }
#endif
  return v[0];
}
#endif

// Rows whose lanes the one-panel paths (AssignRows, GroupMin) buffer on the stack before
// finishing them L at a time: whole slivers, and a multiple of L on every target.
constexpr std::size_t kFinishChunk = 48;
static_assert(kFinishChunk % kMR == 0, "chunks of whole slivers");

// AssignRows' last step for rows [0, m) of a block: each row's per-lane running minima and
// their indices (run_min, run_idx: L values a row, no NaN among the minima) to its label (the
// lowest index among the lanes holding the smallest value, RowLabel's rule) and distance.
// Returns the labels changed. L rows at a time by RowMins where kRowTree, else row by row:
// the same labels and distances either way.
template <class T>
HWY_INLINE std::size_t FinishRows(const T* run_min, const T* run_idx, std::size_t m, std::size_t k, const T* xnorm,
                                  std::int32_t* labels, T* dist) {
  using V = hn::Vec<Tag<T>>;
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  std::size_t changed = 0, i = 0;
  if constexpr (kRowTree<T>) {
#if HWY_TARGET != HWY_SCALAR
    constexpr std::size_t kL = hn::MaxLanes(Tag<T>());
    const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
    HWY_ALIGN T mn[kL];
    HWY_ALIGN T best[kL];
    for (; i + kL <= m; i += kL) {
      V t[kL];
#pragma GCC unroll 16
      for (std::size_t r = 0; r < kL; ++r) t[r] = hn::Load(d, run_min + (i + r) * L);
      hn::Store(RowMins(d, t), d, mn);
#pragma GCC unroll 16
      for (std::size_t r = 0; r < kL; ++r) {
        const V vr = hn::Load(d, run_min + (i + r) * L);
        t[r] = hn::IfThenElse(hn::Eq(vr, hn::Set(d, mn[r])), hn::Load(d, run_idx + (i + r) * L), inf);
      }
      hn::Store(RowMins(d, t), d, best);
      for (std::size_t r = 0; r < kL; ++r) {
        const std::int32_t label = best[r] < static_cast<T>(k) ? static_cast<std::int32_t>(best[r]) : 0;
        changed += labels[i + r] != label;
        labels[i + r] = label;
        dist[i + r] = std::max(T(0), xnorm[i + r] + mn[r]);
      }
    }
#endif
  }
  for (; i < m; ++i) {
    V mn;
    const auto label = RowLabel(d, hn::Load(d, run_min + i * L), hn::Load(d, run_idx + i * L), k, mn);
    changed += labels[i] != label;
    labels[i] = label;
    dist[i] = std::max(T(0), xnorm[i] + hn::GetLane(mn));
  }
  return changed;
}

// One sliver of AssignRows' one-panel path: its rows' per-lane minima over the panel and their
// indices (NaN scores as +inf at index 0, as the running minima below start) into run_min and
// run_idx. A function of its own, so that the dot loop's registers hold the tile alone (inlined
// into AssignRows, GCC 12 spilled an accumulator in it on AVX2).
template <class T, std::size_t NV>
HWY_NOINLINE void OnePanelSliver(const T* xp, std::size_t dim, const T* packed, const T* norms, std::size_t rows,
                                 T* run_min, T* run_idx) {
  using V = hn::Vec<Tag<T>>;
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  V acc[kMR][NV];
  DotTile<NV>(xp, dim, packed, acc);
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  const V minus2 = hn::Set(d, T(-2));
  V idx[NV];
#pragma GCC unroll 16
  for (std::size_t v = 0; v < NV; ++v) idx[v] = hn::Iota(d, static_cast<T>(v * L));
#pragma GCC unroll 16
  for (std::size_t i = 0; i < kMR; ++i) {
    if (i >= rows) break;  // (a constant bound, so that acc stays in registers)
    V best = inf, bidx = hn::Zero(d);
    PanelBest<NV>(d, acc[i], norms, idx, minus2, best, bidx);
    hn::Store(best, d, run_min + i * L);
    hn::Store(bidx, d, run_idx + i * L);
  }
}

template <class T, std::size_t NV>
std::size_t AssignRows(const PointsRef<T>& pts, const T* packed, std::size_t k, std::size_t r0,
                       std::size_t r1, std::int32_t* labels, T* dist) {
  using V = hn::Vec<Tag<T>>;
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  const std::size_t nr = NV * L;
  const std::size_t dim = pts.dim;
  const std::size_t npanels = (k + nr - 1) / nr;
  const T* norms = packed + npanels * nr * dim;
  const std::size_t block = std::min(BlockRows<T>(dim), (r1 - r0 + kMR - 1) / kMR * kMR);

  // L1/L2-resident scratch: the packed block, its norms, and per point one vector of running
  // minima and one of their centroid indices (an online argmin per lane).
  auto xp = hwy::AllocateAligned<T>(block * dim);
  auto xnorm = hwy::AllocateAligned<T>(block);
  auto run_min = hwy::AllocateAligned<T>(block * L);
  auto run_idx = hwy::AllocateAligned<T>(block * L);
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  const V minus2 = hn::Set(d, T(-2));

  std::size_t changed = 0;
  for (std::size_t rb = r0; rb < r1; rb += block) {
    const std::size_t m = std::min(block, r1 - rb);
    const std::size_t nsl = (m + kMR - 1) / kMR;
    for (std::size_t s = 0; s < nsl; ++s) {
      PackSliver(pts, rb + s * kMR, std::min(kMR, m - s * kMR), xp.get() + s * kMR * dim,
                 xnorm.get() + s * kMR);
    }
    if (npanels == 1) {
      // One panel (K <= nr): each row's lanes are reduced over the panel from its tile's
      // registers (no running minima to merge), with the same operations as below (the running
      // minimum starts at +inf and index 0), then kFinishChunk rows are finished together from
      // a buffer on the stack (L1-resident; the block's run_min is not touched).
      HWY_ALIGN T cmin[kFinishChunk * hn::MaxLanes(Tag<T>())];
      HWY_ALIGN T cidx[kFinishChunk * hn::MaxLanes(Tag<T>())];
      for (std::size_t c0 = 0; c0 < m; c0 += kFinishChunk) {
        const std::size_t rows = std::min(kFinishChunk, m - c0);
        for (std::size_t q = 0; q < rows; q += kMR) {
          OnePanelSliver<T, NV>(xp.get() + (c0 + q) * dim, dim, packed, norms, std::min(kMR, rows - q), cmin + q * L,
                                cidx + q * L);
        }
        changed += FinishRows(cmin, cidx, rows, k, xnorm.get() + c0, labels + rb + c0, dist + rb + c0);
      }
      continue;
    }
    // Index 0 until a smaller score is seen: if every score overflows to +inf (centroid norms
    // beyond float range), the label is still a valid index, the lowest, as for any tie.
    for (std::size_t i = 0; i < nsl * kMR; ++i) {
      hn::Store(inf, d, run_min.get() + i * L);
      hn::Store(hn::Zero(d), d, run_idx.get() + i * L);
    }
    for (std::size_t p = 0; p < npanels; ++p) {
      const T* panel = packed + p * nr * dim;
      const T* pn = norms + p * nr;
      V idx[NV];
      for (std::size_t v = 0; v < NV; ++v) idx[v] = hn::Iota(d, static_cast<T>(p * nr + v * L));
      for (std::size_t s = 0; s < nsl; ++s) {
        V acc[kMR][NV];
        DotTile<NV>(xp.get() + s * kMR * dim, dim, panel, acc);
#pragma GCC unroll 16
        for (std::size_t i = 0; i < kMR; ++i) {
          T* rm = run_min.get() + (s * kMR + i) * L;
          T* ri = run_idx.get() + (s * kMR + i) * L;
          V best = hn::Load(d, rm), bidx = hn::Load(d, ri);
          PanelBest<NV>(d, acc[i], pn, idx, minus2, best, bidx);
          hn::Store(best, d, rm);
          hn::Store(bidx, d, ri);
        }
      }
    }
    changed += FinishRows(run_min.get(), run_idx.get(), m, k, xnorm.get(), labels + rb, dist + rb);
  }
  return changed;
}

template <class T, std::size_t NV>
void SqDistRows(const PointsRef<T>& pts, const T* packed, std::size_t k, std::size_t r0,
                std::size_t r1, T* out, std::size_t ldo) {
  using V = hn::Vec<Tag<T>>;
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  const std::size_t nr = NV * L;
  const std::size_t dim = pts.dim;
  const std::size_t npanels = (k + nr - 1) / nr;
  const T* norms = packed + npanels * nr * dim;
  const V minus2 = hn::Set(d, T(-2));
  auto xp = hwy::AllocateAligned<T>(kMR * dim);
  auto tile = hwy::AllocateAligned<T>(nr);
  T xnorm[kMR];
  for (std::size_t r = r0; r < r1; r += kMR) {
    const std::size_t m = std::min(kMR, r1 - r);
    PackSliver(pts, r, m, xp.get(), xnorm);
    for (std::size_t p = 0; p < npanels; ++p) {
      V acc[kMR][NV];
      DotTile<NV>(xp.get(), dim, packed + p * nr * dim, acc);
      const std::size_t kv = std::min(nr, k - p * nr);
      for (std::size_t i = 0; i < m; ++i) {
        for (std::size_t v = 0; v < NV; ++v) {
          const V sv = hn::MulAdd(acc[i][v], minus2, hn::Load(d, norms + p * nr + v * L));
          hn::Store(hn::Add(sv, hn::Set(d, xnorm[i])), d, tile.get() + v * L);
        }
        T* o = out + (r - r0 + i) * ldo + p * nr;
        for (std::size_t c = 0; c < kv; ++c) o[c] = std::max(T(0), tile[c]);
      }
    }
  }
}

// The one-panel group's results from its register tile (GroupMinSliver, and the blocked path
// of GroupMin): per row the smallest score, its index (the panel's ids ascend with the
// position, so the first lane holding the smallest score holds the lowest index), the
// runner-up, and every score where asked for.
template <class T, std::size_t NV, class V>
HWY_INLINE void OnePanelResult(V (&acc)[kMR][NV], const T* packed, const T* ids, std::size_t k, std::size_t c0,
                               std::size_t m, std::size_t norms_at, T* min1, std::int32_t* idx1, T* min2, T* scores,
                               std::size_t lds) {
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  const std::size_t nr = NV * L;
  const T* norms = packed + norms_at;
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  const V minus2 = hn::Set(d, T(-2));
  const std::size_t p = c0 / nr;
  V nv[NV];
#pragma GCC unroll 16
  for (std::size_t v = 0; v < NV; ++v) nv[v] = hn::Load(d, norms + p * nr + v * L);
  const V iota = hn::Iota(d, T(0));
#pragma GCC unroll 16
  for (std::size_t i = 0; i < kMR; ++i) {
    if (i >= m) break;
    V sv[NV];
#pragma GCC unroll 16
    for (std::size_t v = 0; v < NV; ++v) sv[v] = hn::MulAdd(acc[i][v], minus2, nv[v]);
    if (scores != nullptr) {
#pragma GCC unroll 16
      for (std::size_t v = 0; v < NV; ++v) hn::StoreU(sv[v], d, scores + i * lds + v * L);
    }
    // From +inf, taking strictly smaller scores: a NaN score is never the minimum (as in the
    // general path below).
    V lo = inf;
#pragma GCC unroll 16
    for (std::size_t v = 0; v < NV; ++v) lo = hn::IfThenElse(hn::Lt(sv[v], lo), sv[v], lo);
    const V mn = hn::MinOfLanes(d, lo);
    // No score below +inf: position 0, ids[c0], as the general path (an infinite score that
    // follows a NaN must not be taken for the winner).
    std::size_t pos = 0;
    const std::size_t nsearch = hn::GetLane(mn) < std::numeric_limits<T>::infinity() ? NV : 0;
#pragma GCC unroll 16
    for (std::size_t v = 0; v < NV; ++v) {
      if (v >= nsearch) break;
      const intptr_t f = hn::FindFirstTrue(d, hn::Eq(sv[v], mn));
      if (f >= 0) {
        pos = v * L + static_cast<std::size_t>(f);
        sv[v] = hn::IfThenElse(hn::Eq(iota, hn::Set(d, static_cast<T>(f))), inf, sv[v]);
        break;
      }
    }
    // The others' smallest, NaN never taken (as FinishGroupRows).
    V rest = inf;
#pragma GCC unroll 16
    for (std::size_t v = 0; v < NV; ++v) rest = hn::IfThenElse(hn::Lt(sv[v], rest), sv[v], rest);
    min1[i] = hn::GetLane(mn);
    const T bi = ids[p * nr + pos];
    idx1[i] = bi < static_cast<T>(k) ? static_cast<std::int32_t>(bi) : static_cast<std::int32_t>(ids[c0]);
    min2[i] = hn::GetLane(hn::MinOfLanes(d, rest));
  }
}

// group_min's one-panel groups where kRowTree: a sliver's scores on the panel (the same
// arithmetic as OnePanelResult) into sb (NV vectors a row) and, where asked for, scores. A
// function of its own so that the dot loop's registers hold the tile alone.
template <class T, std::size_t NV>
HWY_NOINLINE void GroupSliverScores(const T* const* xr, std::size_t dim, const T* panel, const T* pnorms,
                                    std::size_t rows, T* sb, T* scores, std::size_t lds) {
  using V = hn::Vec<Tag<T>>;
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  V acc[kMR][NV];
  DotTileRows<NV>(xr, dim, panel, acc);
  const V minus2 = hn::Set(d, T(-2));
#pragma GCC unroll 16
  for (std::size_t i = 0; i < kMR; ++i) {
    if (i >= rows) break;
#pragma GCC unroll 16
    for (std::size_t v = 0; v < NV; ++v) {
      const V sv = hn::MulAdd(acc[i][v], minus2, hn::Load(d, pnorms + v * L));
      hn::Store(sv, d, sb + (i * NV + v) * L);
      if (scores != nullptr) hn::StoreU(sv, d, scores + i * lds + v * L);
    }
  }
}

// OnePanelResult's results for rows [0, rows) from their scores in sb (NV vectors a row), L rows
// at a time by RowMins where kRowTree (the rest row by row): min1 the smallest score (NaN never
// taken; +inf if none), idx1 the id of its first lane (ids of the panel's positions; ids[c0]
// where no score is below +inf or the lane is padding), min2 the smallest of the other lanes,
// NaN never taken. Each value is an exact minimum, so the results are OnePanelResult's.
template <class T, std::size_t NV>
HWY_INLINE void FinishGroupRows(const T* sb, std::size_t rows, const T* pids, T first_id, std::size_t k, T* min1,
                                std::int32_t* idx1, T* min2) {
  using V = hn::Vec<Tag<T>>;
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  const V iota = hn::Iota(d, T(0));
  // The row's first lane holding mn (pos; 0 where mn is +inf), and the smallest score of its
  // other lanes.
  auto row_rest = [&](const T* row, T mn, std::size_t& pos) {
    pos = 0;
    std::size_t vmask = NV;  // the vector whose lane pos is left out (none)
    if (mn < std::numeric_limits<T>::infinity()) {
      const V vm = hn::Set(d, mn);
      for (std::size_t v = 0; v < NV; ++v) {
        const intptr_t f = hn::FindFirstTrue(d, hn::Eq(hn::Load(d, row + v * L), vm));
        if (f >= 0) {
          pos = v * L + static_cast<std::size_t>(f);
          vmask = v;
          break;
        }
      }
    }
    V rest = inf;
    for (std::size_t v = 0; v < NV; ++v) {
      V sv = hn::Load(d, row + v * L);
      if (v == vmask) sv = hn::IfThenElse(hn::Eq(iota, hn::Set(d, static_cast<T>(pos - v * L))), inf, sv);
      rest = hn::IfThenElse(hn::Lt(sv, rest), sv, rest);
    }
    return rest;
  };
  auto row_lo = [&](const T* row) {
    V lo = inf;
    for (std::size_t v = 0; v < NV; ++v) {
      const V sv = hn::Load(d, row + v * L);
      lo = hn::IfThenElse(hn::Lt(sv, lo), sv, lo);
    }
    return lo;
  };
  auto put = [&](std::size_t q, T mn, std::size_t pos, T m2) {
    min1[q] = mn;
    const T bi = pids[pos];
    idx1[q] = bi < static_cast<T>(k) ? static_cast<std::int32_t>(bi) : static_cast<std::int32_t>(first_id);
    min2[q] = m2;
  };
  std::size_t q = 0;
  if constexpr (kRowTree<T>) {
#if HWY_TARGET != HWY_SCALAR
    constexpr std::size_t kL = hn::MaxLanes(Tag<T>());
    HWY_ALIGN T mn[kL];
    HWY_ALIGN T m2[kL];
    std::size_t pos[kL];
    for (; q + kL <= rows; q += kL) {
      V t[kL];
      for (std::size_t r = 0; r < kL; ++r) t[r] = row_lo(sb + (q + r) * NV * L);
      hn::Store(RowMins(d, t), d, mn);
      for (std::size_t r = 0; r < kL; ++r) t[r] = row_rest(sb + (q + r) * NV * L, mn[r], pos[r]);
      hn::Store(RowMins(d, t), d, m2);
      for (std::size_t r = 0; r < kL; ++r) put(q + r, mn[r], pos[r], m2[r]);
    }
#endif
  }
  for (; q < rows; ++q) {
    const T* row = sb + q * NV * L;
    const T mn = hn::GetLane(hn::MinOfLanes(d, row_lo(row)));
    std::size_t pos = 0;
    const V rest = row_rest(row, mn, pos);
    put(q, mn, pos, hn::GetLane(hn::MinOfLanes(d, rest)));
  }
}

// One centroid group of the bounded assignment (kernel_table.hpp, group_min): the panels of
// [c0, c1) against a sliver of kMR packed rows (by pointer; m in use), with AssignRows' DotTile and score arithmetic, so that
// every pair's score is bitwise the one AssignRows computes. Per row and lane it keeps the
// smallest score, its index (ids: each packed position's centroid index, as T) and the second
// smallest; the lanes are merged at the end.
template <class T, std::size_t NV>
HWY_INLINE void GroupMinSliver(const T* const* xr, std::size_t dim, const T* packed, const T* ids, std::size_t k,
                               std::size_t c0, std::size_t c1, std::size_t m, T* min1, std::int32_t* idx1, T* min2,
                               T* scores, std::size_t lds) {
  using V = hn::Vec<Tag<T>>;
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  const std::size_t nr = NV * L;
  const std::size_t npanels = (k + nr - 1) / nr;
  const T* norms = packed + npanels * nr * dim;
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  const V minus2 = hn::Set(d, T(-2));
  const std::size_t p1 = (c1 + nr - 1) / nr;
  if (p1 == c0 / nr + 1) {
    // One panel (the usual group): the scores stay in registers.
    V acc[kMR][NV];
    DotTileRows<NV>(xr, dim, packed + (c0 / nr) * nr * dim, acc);
    OnePanelResult<T, NV>(acc, packed, ids, k, c0, m, npanels * nr * dim, min1, idx1, min2, scores, lds);
    return;
  }
  HWY_ALIGN T m1s[kMR * (64 / sizeof(T))];
  HWY_ALIGN T i1s[kMR * (64 / sizeof(T))];
  HWY_ALIGN T m2s[kMR * (64 / sizeof(T))];
  for (std::size_t i = 0; i < kMR; ++i) {
    hn::Store(inf, d, m1s + i * L);
    hn::Store(inf, d, i1s + i * L);
    hn::Store(inf, d, m2s + i * L);
  }
  for (std::size_t p = c0 / nr; p < p1; ++p) {
    const T* panel = packed + p * nr * dim;
    const T* pn = norms + p * nr;
    V acc[kMR][NV];
    DotTileRows<NV>(xr, dim, panel, acc);
#pragma GCC unroll 16
    for (std::size_t i = 0; i < kMR; ++i) {
      V a1 = hn::Load(d, m1s + i * L), b1 = hn::Load(d, i1s + i * L), a2 = hn::Load(d, m2s + i * L);
      for (std::size_t v = 0; v < NV; ++v) {
        const V sv = hn::MulAdd(acc[i][v], minus2, hn::Load(d, pn + v * L));
        if (scores != nullptr && i < m) hn::StoreU(sv, d, scores + i * lds + (p * nr - c0) + v * L);
        const V idx = hn::LoadU(d, ids + p * nr + v * L);
        // The packed order need not be index order: equal scores go to the lower index.
        const auto lt = hn::Or(hn::Lt(sv, a1), hn::And(hn::Eq(sv, a1), hn::Lt(idx, b1)));
        a2 = hn::IfThenElse(lt, a1, hn::Min(a2, sv));
        b1 = hn::IfThenElse(lt, idx, b1);
        a1 = hn::IfThenElse(lt, sv, a1);
      }
      hn::Store(a1, d, m1s + i * L);
      hn::Store(b1, d, i1s + i * L);
      hn::Store(a2, d, m2s + i * L);
    }
  }
  for (std::size_t i = 0; i < m; ++i) {
    const V a1 = hn::Load(d, m1s + i * L), b1 = hn::Load(d, i1s + i * L), a2 = hn::Load(d, m2s + i * L);
    const V mn = hn::MinOfLanes(d, a1);
    const auto at_min = hn::Eq(a1, mn);
    const V best_idx = hn::MinOfLanes(d, hn::IfThenElse(at_min, b1, inf));
    // The winning lane's runner-up is in a2; every other lane's best is a runner-up too.
    const auto winner = hn::And(at_min, hn::Eq(b1, best_idx));
    const V rest = hn::Min(a2, hn::IfThenElse(winner, inf, a1));
    min1[i] = hn::GetLane(mn);
    const T bi = hn::GetLane(best_idx);
    idx1[i] = bi < static_cast<T>(k) ? static_cast<std::int32_t>(bi) : static_cast<std::int32_t>(ids[c0]);
    min2[i] = hn::GetLane(hn::MinOfLanes(d, rest));
  }
}

// Features per slice of the blocked one-panel path: a slice of the panel (nr x kKC) stays in
// L1 while the slivers of a batch stream their rows' slices past it.
constexpr std::size_t kKC = 128;
// Slivers per batch of the blocked path (their accumulators wait in a small buffer).
constexpr std::size_t kBatchSlivers = 8;

// DotTileRows over features [j0, j1) only, the accumulators carried in from and out to `buf`
// (kMR x NV vectors): storing and reloading a float is exact, so slice after slice gives the
// same multiply-adds in the same order, hence the same bits, as DotTileRows over all features.
template <std::size_t NV, class T>
HWY_INLINE void DotTileRowsSlice(const T* const* HWY_RESTRICT xr, std::size_t j0, std::size_t j1,
                                 const T* HWY_RESTRICT panel, T* HWY_RESTRICT buf) {
  using V = hn::Vec<Tag<T>>;
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  const T* x[kMR];
  V acc[kMR][NV];
#pragma GCC unroll 16
  for (std::size_t i = 0; i < kMR; ++i) {
    x[i] = xr[i];
#pragma GCC unroll 16
    for (std::size_t v = 0; v < NV; ++v) acc[i][v] = hn::Load(d, buf + (i * NV + v) * L);
  }
  DotRowsRange<NV>(x, j0, j1, panel, acc);
#pragma GCC unroll 16
  for (std::size_t i = 0; i < kMR; ++i) {
#pragma GCC unroll 16
    for (std::size_t v = 0; v < NV; ++v) hn::Store(acc[i][v], d, buf + (i * NV + v) * L);
  }
}

// group_min over any number of rows: kMR at a time (xr holds m pointers rounded up to kMR).
// A one-panel group of wide rows goes in batches of slivers, feature slice by feature slice
// (GEMM's K blocking): the panel's slice is read from L1 by every sliver of the batch instead
// of from L2 by each, where a panel and a sliver's rows no longer fit L1 together.
template <class T, std::size_t NV>
void GroupMin(const T* const* xr, std::size_t dim, const T* packed, const T* ids, std::size_t k, std::size_t c0,
              std::size_t c1, std::size_t m, T* min1, std::int32_t* idx1, T* min2, T* scores, std::size_t lds) {
  using V = hn::Vec<Tag<T>>;
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  const std::size_t nr = NV * L;
  if (dim > 2 * kKC && m > kMR && (c1 + nr - 1) / nr == c0 / nr + 1) {
    const std::size_t npanels = (k + nr - 1) / nr;
    const T* panel = packed + (c0 / nr) * nr * dim;
    HWY_ALIGN T buf[kBatchSlivers * kMR * NV * (64 / sizeof(T))];
    const std::size_t vec = kMR * NV * L;  // one sliver's accumulators
    for (std::size_t b0 = 0; b0 < m; b0 += kBatchSlivers * kMR) {
      const std::size_t nsl = std::min(kBatchSlivers, (m - b0 + kMR - 1) / kMR);
      std::fill_n(buf, nsl * vec, T(0));
      for (std::size_t j0 = 0; j0 < dim; j0 += kKC) {
        const std::size_t j1 = std::min(dim, j0 + kKC);
        for (std::size_t q = 0; q < nsl; ++q) DotTileRowsSlice<NV>(xr + b0 + q * kMR, j0, j1, panel, buf + q * vec);
      }
      for (std::size_t q = 0; q < nsl; ++q) {
        const std::size_t s0 = b0 + q * kMR;
        V acc[kMR][NV];
#pragma GCC unroll 16
        for (std::size_t i = 0; i < kMR; ++i) {
#pragma GCC unroll 16
          for (std::size_t v = 0; v < NV; ++v) acc[i][v] = hn::Load(d, buf + q * vec + (i * NV + v) * L);
        }
        OnePanelResult<T, NV>(acc, packed, ids, k, c0, std::min(kMR, m - s0), npanels * nr * dim, min1 + s0,
                              idx1 + s0, min2 + s0, scores != nullptr ? scores + s0 * lds : nullptr, lds);
      }
    }
    return;
  }
  if (kRowTree<T> && (c1 + nr - 1) / nr == c0 / nr + 1) {
    // One panel: kFinishChunk rows' scores at a time into an L1 buffer, then their results L
    // rows at a time (FinishGroupRows) instead of horizontal reductions row by row.
    HWY_ALIGN T sb[kFinishChunk * NV * hn::MaxLanes(Tag<T>())];
    const std::size_t npanels = (k + nr - 1) / nr, p = c0 / nr;
    const T* panel = packed + p * nr * dim;
    const T* pnorms = packed + npanels * nr * dim + p * nr;
    for (std::size_t r0 = 0; r0 < m; r0 += kFinishChunk) {
      const std::size_t rows = std::min(kFinishChunk, m - r0);
      for (std::size_t q = 0; q < rows; q += kMR) {
        GroupSliverScores<T, NV>(xr + r0 + q, dim, panel, pnorms, std::min(kMR, rows - q), sb + q * NV * L,
                                 scores != nullptr ? scores + (r0 + q) * lds : nullptr, lds);
      }
      FinishGroupRows<T, NV>(sb, rows, ids + p * nr, ids[c0], k, min1 + r0, idx1 + r0, min2 + r0);
    }
    return;
  }
  for (std::size_t s0 = 0; s0 < m; s0 += kMR) {
    GroupMinSliver<T, NV>(xr + s0, dim, packed, ids, k, c0, c1, std::min(kMR, m - s0), min1 + s0, idx1 + s0,
                          min2 + s0, scores != nullptr ? scores + s0 * lds : nullptr, lds);
  }
}

// ---- k-means++'s distances (sqdist_one, sqdist_few): one arithmetic for every candidate ----
//
// A candidate's squared distance to a row is the same bits whichever kernel computes it and
// however many candidates share the call: one accumulator per candidate, fused multiply-adds
// over the whole vectors in dimension order, then a fixed tree over the lanes (below), then the
// leftover dimensions one by one. So the bounded seeding can keep a distance it scored for the
// potentials as the row's closest distance, as the plain seeding's lower_closest computes it.

// Lanes per 128-bit block: the lane tree works on that many accumulators at once.
template <class T>
constexpr std::size_t kGroup = (HWY_TARGET == HWY_SCALAR) ? 1 : 16 / sizeof(T);

#if HWY_TARGET != HWY_SCALAR
// Halves a vector until it is one 128-bit block: v = lower half + upper half.
template <class D>
HWY_INLINE hn::Vec<hn::Full128<hn::TFromD<D>>> FoldToBlock(D d, hn::Vec<D> v) {
  if constexpr (D::kPrivateN * sizeof(hn::TFromD<D>) <= 16) {
    (void)d;
    return v;
  } else {
    const hn::Half<D> dh;
    return FoldToBlock(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)));
  }
}
#endif

// out[g] = the sum of acc[g]'s lanes, g < kGroup<T>: within each 128-bit block, lanes i and
// i + 2 (float) then i and i + 1 are added as a transpose of the group; then the blocks fold in
// halves. Each sum's tree is fixed by its own lanes alone, whatever the group's other vectors.
template <class T>
HWY_INLINE void ReduceGroup(const hn::Vec<Tag<T>>* acc, T* out) {
#if HWY_TARGET == HWY_SCALAR
  out[0] = hn::GetLane(acc[0]);
#else
  const Tag<T> d;
  hn::Vec<Tag<T>> r;
  if constexpr (sizeof(T) == 4) {
    const auto u = hn::Add(hn::InterleaveLower(d, acc[0], acc[1]), hn::InterleaveUpper(d, acc[0], acc[1]));
    const auto v = hn::Add(hn::InterleaveLower(d, acc[2], acc[3]), hn::InterleaveUpper(d, acc[2], acc[3]));
    const hn::Repartition<std::uint64_t, Tag<T>> du;
    r = hn::Add(hn::BitCast(d, hn::InterleaveLower(du, hn::BitCast(du, u), hn::BitCast(du, v))),
                hn::BitCast(d, hn::InterleaveUpper(du, hn::BitCast(du, u), hn::BitCast(du, v))));
  } else {
    r = hn::Add(hn::InterleaveLower(d, acc[0], acc[1]), hn::InterleaveUpper(d, acc[0], acc[1]));
  }
  hn::StoreU(FoldToBlock(d, r), hn::Full128<T>(), out);
#endif
}

// SqDistM prefetches the row kPrefetchRows ahead when a row is at most kPrefetchMaxRowBytes:
// such rows are scored in too few instructions for the load stream alone to keep the memory busy
// (Sapphire Rapids: the loop stalled on the row's first load; bounded k-means++ at 1M x 64 x 256
// 7.07 -> 5.46 s). Wider rows are left to the hardware prefetcher (prefetching them cost the plain
// seeding of Fashion-MNIST ~15% on AMD EPYC).
constexpr std::size_t kPrefetchRows = 4;
constexpr std::size_t kPrefetchMaxRowBytes = 1024;

// Candidate t's values: contiguous (m x dim) or from a list of pointers. Both give SqDistM the
// same arithmetic per candidate, so a candidate's distance is the same bits either way.
template <class T>
struct Contiguous {
  const T* c;
  std::size_t dim;
  HWY_INLINE const T* operator()(std::size_t t) const { return c + t * dim; }
};
template <class T>
struct Listed {
  const T* const* c;
  HWY_INLINE const T* operator()(std::size_t t) const { return c[t]; }
};

// M candidates (compile time) against rows [r0, r1); out[(r - r0) * stride + t].
template <class T, std::size_t M, class Cands = Contiguous<T>>
void SqDistMOf(const PointsRef<T>& pts, Cands cand, std::size_t r0, std::size_t r1, T* out, std::size_t stride) {
  using V = hn::Vec<Tag<T>>;
  const Tag<T> d;
  constexpr std::size_t G = kGroup<T>;
  constexpr std::size_t MG = (M + G - 1) / G * G;
  const std::size_t L = hn::Lanes(d);
  const std::size_t dim = pts.dim;
  const std::size_t vec_dims = dim / L * L;
  const std::size_t row_bytes = dim * sizeof(T);
  const bool prefetch = row_bytes <= kPrefetchMaxRowBytes;
  for (std::size_t r = r0; r < r1; ++r) {
    const T* row = pts.x + r * pts.stride;
    // Never past the block (r1), so never past the data.
    if (prefetch && r + kPrefetchRows < r1) {
      prefetch_lines<3>(row + kPrefetchRows * pts.stride, row_bytes);
    }
    V acc[MG];
#pragma GCC unroll 16
    for (std::size_t t = 0; t < MG; ++t) acc[t] = hn::Zero(d);
    for (std::size_t j = 0; j < vec_dims; j += L) {
      const V x = hn::Sub(hn::LoadU(d, row + j), hn::LoadU(d, pts.shift + j));
#pragma GCC unroll 16
      for (std::size_t t = 0; t < M; ++t) {
        const V e = hn::Sub(x, hn::LoadU(d, cand(t) + j));
        acc[t] = hn::MulAdd(e, e, acc[t]);
      }
    }
    HWY_ALIGN T s[MG];
#pragma GCC unroll 16
    for (std::size_t g = 0; g < MG; g += G) ReduceGroup<T>(acc + g, s + g);
    T* o = out + (r - r0) * stride;
    for (std::size_t t = 0; t < M; ++t) {
      T v = s[t];
      for (std::size_t j = vec_dims; j < dim; ++j) {
        const T e = (row[j] - pts.shift[j]) - cand(t)[j];
        v = std::fma(e, e, v);
      }
      o[t] = v;
    }
  }
}

template <class T, std::size_t M>
void SqDistM(const PointsRef<T>& pts, const T* centroids, std::size_t r0, std::size_t r1, T* out,
             std::size_t stride) {
  SqDistMOf<T, M>(pts, Contiguous<T>{centroids, pts.dim}, r0, r1, out, stride);
}

template <class T>
void SqDistOne(const PointsRef<T>& pts, const T* centroid, std::size_t r0, std::size_t r1, T* out) {
  SqDistM<T, 1>(pts, centroid, r0, r1, out, 1);
}

// m (at run time) candidates in either layout: SqDistMOf with M = m.
template <class T, class Cands, std::size_t... M>
void SqDistOf(std::index_sequence<M...>, const PointsRef<T>& pts, Cands cand, std::size_t m, std::size_t r0,
              std::size_t r1, T* out) {
  ((m == M + 1 ? SqDistMOf<T, M + 1>(pts, cand, r0, r1, out, m) : void()), ...);
}

// All m candidates in registers, each row loaded once for all of them.
template <class T>
void SqDistFew(const PointsRef<T>& pts, const T* centroids, std::size_t m, std::size_t r0,
               std::size_t r1, T* out) {
  SqDistOf<T>(std::make_index_sequence<kMaxFew>(), pts, Contiguous<T>{centroids, pts.dim}, m, r0, r1, out);
}

// sqdist_listed: the same over candidates given by pointers (a subset of a step's candidates).
template <class T>
void SqDistList(const PointsRef<T>& pts, const T* const* centroids, std::size_t m, std::size_t r0, std::size_t r1,
                T* out) {
  SqDistOf<T>(std::make_index_sequence<kMaxFew>(), pts, Listed<T>{centroids}, m, r0, r1, out);
}

template <class T, class DF>
HWY_INLINE hn::Vec<DF> LoadAsF64(DF df, const T* p) {
  if constexpr (sizeof(T) == sizeof(double)) {
    return hn::LoadU(df, p);
  } else {
    return hn::PromoteTo(df, hn::LoadU(hn::Rebind<T, DF>(), p));
  }
}

// Sums of one run of points over the feature range [j0, j0 + u*L), u <= kUpd vectors, with the
// accumulators in registers for the whole run (no load/store chains through memory).
constexpr std::size_t kUpd = 4;
// Bytes of rows per sub-run of the update: about half of L1.
constexpr std::size_t kSubRunBytes = 24 * 1024;

template <bool kWeighted, class T>
HWY_INLINE void AccumulateChunk(const PointsRef<T>& pts, const std::uint32_t* HWY_RESTRICT idx,
                                std::size_t n, const double* HWY_RESTRICT weights,
                                const double* HWY_RESTRICT centroid, std::size_t j0, std::size_t u,
                                double* HWY_RESTRICT sum, double* HWY_RESTRICT sq,
                                std::size_t prefetch_limit) {
  using DF = Tag<double>;
  using V = hn::Vec<DF>;
  const DF df;
  const std::size_t L = hn::Lanes(df);
  // Zeroed first: only the first u are used, which the compiler cannot see (it warned that the
  // others may be read uninitialised on the scalar target).
  V s[kUpd], q[kUpd], c[kUpd];
#pragma GCC unroll 4
  for (std::size_t v = 0; v < kUpd; ++v) s[v] = q[v] = c[v] = hn::Zero(df);
#pragma GCC unroll 4
  for (std::size_t v = 0; v < kUpd; ++v) {
    if (v >= u) break;
    s[v] = hn::LoadU(df, sum + j0 + v * L);
    q[v] = hn::LoadU(df, sq + j0 + v * L);
    c[v] = hn::LoadU(df, centroid + j0 + v * L);
  }
  // Rows are gathered in cluster order, which the hardware prefetcher cannot guess: on the
  // first pass over a run, prefetch whole rows ahead (also into the next run: idx is valid up to
  // prefetch_limit), about 64 cache lines in flight whatever the row length.
  // prefetcht2 rather than t0: it measured faster here (the lines are used once, soon).
  const std::size_t row_bytes = pts.dim * sizeof(T);
  const std::size_t ahead_rows = std::clamp<std::size_t>(64 * 64 / (row_bytes + 64), 2, 16);
  for (std::size_t t = 0; t < n; ++t) {
    if (t + ahead_rows < prefetch_limit) {
      prefetch_lines<1>(pts.x + idx[t + ahead_rows] * pts.stride, row_bytes);
    }
    const T* row = pts.x + idx[t] * pts.stride + j0;
    const V w = hn::Set(df, kWeighted ? weights[idx[t]] : 1.0);
#pragma GCC unroll 4
    for (std::size_t v = 0; v < kUpd; ++v) {
      if (v >= u) break;
      const V x = LoadAsF64(df, row + v * L);
      const V e = hn::Sub(x, c[v]);
      if constexpr (kWeighted) {
        s[v] = hn::Add(s[v], hn::Mul(w, x));
        q[v] = hn::Add(q[v], hn::Mul(w, hn::Mul(e, e)));
      } else {
        s[v] = hn::Add(s[v], x);
        q[v] = hn::Add(q[v], hn::Mul(e, e));
      }
    }
  }
#pragma GCC unroll 4
  for (std::size_t v = 0; v < kUpd; ++v) {
    if (v >= u) break;
    hn::StoreU(s[v], df, sum + j0 + v * L);
    hn::StoreU(q[v], df, sq + j0 + v * L);
  }
}

template <bool kWeighted, class T>
void AccumulateRunImpl(const PointsRef<T>& pts, const std::uint32_t* idx, std::size_t n,
                       std::size_t idx_valid, const double* weights, const double* centroid, double* sum, double* wsum,
                       double* sq) {
  const std::size_t L = hn::Lanes(Tag<double>());
  const std::size_t dim = pts.dim;
  const std::size_t vec_dims = dim / L * L;
  double ws = *wsum;
  for (std::size_t t = 0; t < n; ++t) ws += kWeighted ? weights[idx[t]] : 1.0;
  *wsum = ws;
  // Sub-runs whose rows fit in L1, each swept in feature chunks of kUpd vectors: the first
  // chunk brings the rows in, the others find them there. (A whole run of wide rows would not
  // stay in cache between chunks.) The additions per feature stay in point order.
  const std::size_t sub = std::max<std::size_t>(4, kSubRunBytes / (dim * sizeof(T)));
  for (std::size_t t0 = 0; t0 < n; t0 += sub) {
    const std::size_t m = std::min(sub, n - t0);
    for (std::size_t j0 = 0; j0 < vec_dims; j0 += kUpd * L) {
      const std::size_t u = std::min(kUpd, (vec_dims - j0) / L);
      AccumulateChunk<kWeighted>(pts, idx + t0, m, weights, centroid, j0, u, sum, sq,
                                 j0 == 0 ? idx_valid - t0 : 0);
    }
  }
  // The last dim % L features, point by point with the same arithmetic as the vector lanes.
  for (std::size_t t = 0; t < n; ++t) {
    const T* row = pts.x + idx[t] * pts.stride;
    for (std::size_t j = vec_dims; j < dim; ++j) {
      const double x = static_cast<double>(row[j]);
      const double e = x - centroid[j];
      if constexpr (kWeighted) {
        sum[j] += weights[idx[t]] * x;
        sq[j] += weights[idx[t]] * (e * e);
      } else {
        sum[j] += x;
        sq[j] += e * e;
      }
    }
  }
}

template <class T>
void AccumulateRun(const PointsRef<T>& pts, const std::uint32_t* idx, std::size_t n,
                   std::size_t idx_valid, const double* weights, const double* centroid,
                   double* sum, double* wsum, double* sq) {
  if (weights) {
    AccumulateRunImpl<true>(pts, idx, n, idx_valid, weights, centroid, sum, wsum, sq);
  } else {
    AccumulateRunImpl<false>(pts, idx, n, idx_valid, weights, centroid, sum, wsum, sq);
  }
}

template <class T>
void CenterRows(const PointsRef<T>& pts, std::size_t r, std::size_t m, T* out, T* xnorm) {
  for (std::size_t s = 0; s < m; s += kMR) {
    PackSliver(pts, r + s, std::min(kMR, m - s), out + s * pts.dim, xnorm + s);
  }
}

// k-means++'s sketch filter (kernel_table.hpp, SketchArgs): for each vector of rows of the block
// (a lane is a row), the exact integer dot products with M candidates at once, then the float
// test lane by lane. A quad holds four features of N / 2 rows in a vector of 2N int16 (the
// biased bytes widened); one widening multiply-add per quad and candidate gives each row's two
// pair sums side by side, and the two halves of the rows' vector are joined at the end (even
// plus odd lanes). Without VNNI this is as fast as the pair-by-pair kernel it replaced; with
// it, the AVX3 table takes sketch_mask_vnni instead, and the AVX2 table sketch_mask_avx2.
#if HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128
void SketchMask(const SketchArgs& g, std::uint32_t* mask) { ref_sketch_mask(g, mask); }
#else
template <std::size_t M>
void SketchMaskM(const SketchArgs& g, std::uint32_t* mask) {
  // At most kSketchRows lanes (a wider scalable vector would run past the block's arrays).
  using DI = hn::CappedTag<std::int32_t, kSketchRows>;
  const DI di;
  const hn::Repartition<std::int16_t, DI> d16;
  const hn::Rebind<std::uint8_t, decltype(d16)> d8;
  const hn::Repartition<std::int64_t, DI> d64;
  const hn::Rebind<float, DI> df;
  using VI = hn::Vec<DI>;
  using VF = hn::Vec<decltype(df)>;
  const std::size_t N = hn::Lanes(di);
  HWY_ALIGN std::int32_t half[2][M * kSketchRows];
  for (std::size_t h = 0; h < kSketchRows; h += N) {
    for (std::size_t part = 0; part < 2; ++part) {
      // Rows h + part * N / 2 ... : their quads, N / 2 rows x 4 bytes at a time.
      VI acc0[M], acc1[M];
#pragma GCC unroll 16
      for (std::size_t t = 0; t < M; ++t) acc0[t] = acc1[t] = hn::Zero(di);
      const std::uint8_t* q = g.q + (h + part * N / 2) * 4;
      for (std::size_t p = 0; p < g.quads; ++p) {
        const auto x = hn::PromoteTo(d16, hn::LoadU(d8, q + p * kSketchRows * 4));
#pragma GCC unroll 16
        for (std::size_t t = 0; t < M; ++t) {
          const auto c = hn::BitCast(d16, hn::Set(d64, g.cw[t * g.quads + p]));
          acc0[t] = hn::ReorderWidenMulAccumulate(di, x, c, acc0[t], acc1[t]);
        }
      }
#pragma GCC unroll 16
      for (std::size_t t = 0; t < M; ++t) hn::Store(hn::RearrangeToOddPlusEven(acc0[t], acc1[t]), di, half[part] + t * N);
    }
    const VF a = hn::LoadU(df, g.a + h), s = hn::LoadU(df, g.s + h);
    VI bits = hn::Zero(di);
    if (g.rr) {
      // The separable test (SketchArgs::rr).
      const VF rr = hn::LoadU(df, g.rr + h);
#pragma GCC unroll 16
      for (std::size_t t = 0; t < M; ++t) {
        const VI lo = hn::Load(di, half[0] + t * N), hi = hn::Load(di, half[1] + t * N);
        const VI dot = hn::Sub(hn::Add(hn::ConcatEven(di, hi, lo), hn::ConcatOdd(di, hi, lo)), hn::Set(di, g.cfix[t]));
        const VF lhs = hn::Mul(hn::Mul(s, hn::Set(df, g.cs[t])), hn::ConvertTo(df, dot));
        const auto skip = hn::RebindMask(di, hn::Le(lhs, hn::Add(rr, hn::Set(df, g.cc[t]))));
        bits = hn::Or(bits, hn::IfThenZeroElse(skip, hn::Set(di, static_cast<std::int32_t>(std::uint32_t{1} << t))));
      }
      hn::StoreU(bits, di, reinterpret_cast<std::int32_t*>(mask + h));
      continue;
    }
    const VF cl = hn::LoadU(df, g.cl + h);
    const VF up = hn::Set(df, kSketchUp);
    const VF r = hn::Mul(hn::Sqrt(hn::Mul(hn::Add(cl, hn::Set(df, g.tau)), hn::Set(df, g.over))), up);
    const VF rd = hn::Add(r, hn::LoadU(df, g.delta + h));
#pragma GCC unroll 16
    for (std::size_t t = 0; t < M; ++t) {
      // Lane 2j + e of a half: pair e of its row j. Row sums in row order, less the bias.
      const VI lo = hn::Load(di, half[0] + t * N), hi = hn::Load(di, half[1] + t * N);
      const VI dot = hn::Sub(hn::Add(hn::ConcatEven(di, hi, lo), hn::ConcatOdd(di, hi, lo)), hn::Set(di, g.cfix[t]));
      const VF p = hn::ConvertTo(df, dot);
      const VF ab = hn::Add(a, hn::Set(df, g.cb[t]));
      const VF e = hn::Sub(ab, hn::Mul(hn::Mul(s, hn::Set(df, g.cs[t])), p));
      const VF elo = hn::Sub(e, hn::Mul(ab, hn::Set(df, kSketchErr)));
      const VF gg = hn::Add(rd, hn::Set(df, g.cdelta[t]));
      const VF thr = hn::Mul(hn::Mul(gg, gg), up);
      const auto skip = hn::RebindMask(di, hn::Ge(elo, thr));
      bits = hn::Or(bits, hn::IfThenZeroElse(skip, hn::Set(di, static_cast<std::int32_t>(std::uint32_t{1} << t))));
    }
    hn::StoreU(bits, di, reinterpret_cast<std::int32_t*>(mask + h));
  }
}

template <std::size_t... M>
void SketchMaskOf(std::index_sequence<M...>, const SketchArgs& g, std::uint32_t* mask) {
  ((g.m == M + 1 ? SketchMaskM<M + 1>(g, mask) : void()), ...);
}

void SketchMask(const SketchArgs& g, std::uint32_t* mask) {
  SketchMaskOf(std::make_index_sequence<kMaxFew>(), g, mask);
}
#endif

// ---- The bounded assignment's per-centroid bounds (kernel_table.hpp) ----

float LowerStepGroups(float* lb, const float* cdf, std::size_t n, std::size_t gs, float* gmin) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const std::size_t L = hn::Lanes(df);
  const auto zero = hn::Zero(df), inf = hn::Set(df, std::numeric_limits<float>::infinity());
  const auto one = hn::Set(di, 1);
  float all = std::numeric_limits<float>::infinity();
  for (std::size_t g0 = 0, g = 0; g0 < n; g0 += gs, ++g) {
    const std::size_t e = std::min(n, g0 + gs);
    auto vmin = inf;
    std::size_t c = g0;
    for (; c + L <= e; c += L) {
      const auto l = hn::LoadU(df, lb + c);
      const auto r = hn::Sub(l, hn::LoadU(df, cdf + c));
      // The float below r where r > 0 (its bits less one), else 0; +inf stays.
      const auto below = hn::IfThenElseZero(hn::Gt(r, zero), hn::BitCast(df, hn::Sub(hn::BitCast(di, r), one)));
      const auto out = hn::IfThenElse(hn::Eq(l, inf), l, below);
      hn::StoreU(out, df, lb + c);
      vmin = hn::Min(vmin, out);  // no NaN: bounds are >= +0 or +inf
    }
    float m = hn::GetLane(hn::MinOfLanes(df, vmin));
    if (c < e) m = std::min(m, bounds::lower_step(lb + c, cdf + c, e - c));
    gmin[g] = m;
    all = std::min(all, m);
  }
  return all;
}

template <class T>
void BoundsFromScores(const T* sc, std::size_t n, double base, float* lb) {
  if constexpr (std::is_same_v<T, float>) {
    const hn::ScalableTag<float> df;
    const hn::RebindToSigned<decltype(df)> di;
    const std::size_t L = hn::Lanes(df);
    const float bf = bounds::float_below(base);
    const auto vb = hn::Set(df, bf), zero = hn::Zero(df);
    const auto two = hn::Set(di, 2), three = hn::Set(di, 3);
    std::size_t c = 0;
    for (; c + L <= n; c += L) {
      const auto r = hn::Sqrt(hn::Max(hn::Add(hn::LoadU(df, sc + c), vb), zero));
      const auto b = hn::BitCast(di, r);
      hn::StoreU(hn::BitCast(df, hn::IfThenElseZero(hn::Gt(b, two), hn::Sub(b, three))), df, lb + c);
    }
    for (; c < n; ++c) lb[c] = bounds::root_below(sc[c], bf);
  } else {
    for (std::size_t c = 0; c < n; ++c) lb[c] = bounds::down(std::sqrt(std::max(0.0, static_cast<double>(sc[c]) + base)));
  }
}

// pair_scores: up to kGroup<T> listed centroids at a time (M of them, at compile time) share
// each load of the row; two sets of accumulators (even and odd vectors of features) keep 2 M
// multiply-add chains in flight. The lanes are reduced by ReduceGroup, the last dim % lanes
// features added in order.
template <class T, std::size_t M>
HWY_INLINE void PairDots(const T* HWY_RESTRICT x, std::size_t dim, const T* const* c, T* out) {
  using V = hn::Vec<Tag<T>>;
  const Tag<T> d;
  constexpr std::size_t G = kGroup<T>;
  const std::size_t L = hn::Lanes(d);
  const std::size_t vec_dims = dim / L * L;
  V a0[G], a1[G];
#pragma GCC unroll 8
  for (std::size_t g = 0; g < G; ++g) a0[g] = a1[g] = hn::Zero(d);
  std::size_t j = 0;
  for (; j + 2 * L <= vec_dims; j += 2 * L) {
    const V x0 = hn::LoadU(d, x + j), x1 = hn::LoadU(d, x + j + L);
#pragma GCC unroll 8
    for (std::size_t g = 0; g < M; ++g) {
      a0[g] = hn::MulAdd(x0, hn::LoadU(d, c[g] + j), a0[g]);
      a1[g] = hn::MulAdd(x1, hn::LoadU(d, c[g] + j + L), a1[g]);
    }
  }
  if (j < vec_dims) {
    const V x0 = hn::LoadU(d, x + j);
#pragma GCC unroll 8
    for (std::size_t g = 0; g < M; ++g) a0[g] = hn::MulAdd(x0, hn::LoadU(d, c[g] + j), a0[g]);
  }
#pragma GCC unroll 8
  for (std::size_t g = 0; g < M; ++g) a0[g] = hn::Add(a0[g], a1[g]);
  HWY_ALIGN T s[G];
  ReduceGroup<T>(a0, s);
  for (std::size_t g = 0; g < M; ++g) {
    T v = s[g];
    for (std::size_t f = vec_dims; f < dim; ++f) v = std::fma(x[f], c[g][f], v);
    out[g] = v;
  }
}

template <class T, std::size_t... M>
HWY_INLINE void PairDotsOf(std::index_sequence<M...>, std::size_t m, const T* x, std::size_t dim, const T* const* c,
                           T* out) {
  ((m == M + 1 ? PairDots<T, M + 1>(x, dim, c, out) : void()), ...);
}

template <class T>
void PairScores(const T* x, std::size_t dim, const T* crows, const T* cnorms, const std::uint32_t* pos, std::size_t m,
                T* out) {
  constexpr std::size_t G = kGroup<T>;
  for (std::size_t q0 = 0; q0 < m; q0 += G) {
    const std::size_t mg = std::min(G, m - q0);
    const T* c[G];
    for (std::size_t g = 0; g < mg; ++g) c[g] = crows + static_cast<std::size_t>(pos[q0 + g]) * dim;
    T dots[G];
    PairDotsOf<T>(std::make_index_sequence<G>(), mg, x, dim, c, dots);
    for (std::size_t g = 0; g < mg; ++g) out[q0 + g] = std::fma(T(-2), dots[g], cnorms[pos[q0 + g]]);
  }
}

template <class T>
const KernelTable<T>* Table() {
  static const KernelTable<T> table{
      hwy::TargetName(HWY_TARGET),
      {PanelWidth<T, kWideNV>(), &PackedSize<T, kWideNV>, &PackCentroids<T, kWideNV>,
       &AssignRows<T, kWideNV>, &SqDistRows<T, kWideNV>, &GroupMin<T, kWideNV>},
      {PanelWidth<T, 1>(), &PackedSize<T, 1>, &PackCentroids<T, 1>, &AssignRows<T, 1>,
       &SqDistRows<T, 1>, &GroupMin<T, 1>},
      &SqDistOne<T>,
      &SqDistFew<T>,
      &SqDistList<T>,
      &CenterRows<T>,
      kMR,
      &PackRows<T>,
      &AccumulateRun<T>,
#if HWY_TARGET == HWY_AVX3
      sketch_vnni_usable() ? &sketch_mask_vnni : &SketchMask,
#elif HWY_TARGET == HWY_AVX2
      sketch_avx2_usable() ? &sketch_mask_avx2 : &SketchMask,
#else
      &SketchMask,
#endif
      &SketchMask,
      &LowerStepGroups,
      &BoundsFromScores<T>,
      &PairScores<T>};
  return &table;
}

const KernelTable<float>* TableF32() { return Table<float>(); }
const KernelTable<double>* TableF64() { return Table<double>(); }

}  // namespace flashkm::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace flashkm::detail {

// Highway's dispatch tables of the per-target kernel tables (cpu/dispatch.hpp).
HWY_EXPORT(TableF32);
HWY_EXPORT(TableF64);

template <class T>
std::vector<const KernelTable<T>*> kernel_tables() {
  static const std::vector<const KernelTable<T>*> tables = target_tables<KernelTable<T>>(
      [] {
        if constexpr (sizeof(T) == sizeof(float)) return HWY_DYNAMIC_DISPATCH(TableF32)();
        else return HWY_DYNAMIC_DISPATCH(TableF64)();
      },
      &reference_table<T>());
  return tables;
}

template std::vector<const KernelTable<float>*> kernel_tables<float>();
template std::vector<const KernelTable<double>*> kernel_tables<double>();

}  // namespace flashkm::detail
#endif  // HWY_ONCE
