// Sparse FlashAssign: CSR rows against dense centroids packed in panels, written once with
// Highway and compiled for every SIMD target; sparse_kernel_tables() lists those the CPU runs.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "cpu/dispatch.hpp"
#include "cpu/prefetch.hpp"
#include "cpu/sparse_kernels.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/sparse_kernels_simd.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/aligned_allocator.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace flashkm::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class T>
using Tag = hn::ScalableTag<T>;

// Most vectors of centroids per panel. A row's non-zero x_j is broadcast once and multiplied
// into NV vectors of accumulators (NV * L centroids) that stay in registers over the whole row:
// 8 accumulators plus a broadcast fit the 16 registers of AVX2 as well as AVX-512's 32, and 8
// independent FMA chains cover the FMA latency. K = 100 float centroids are then one AVX-512
// panel (7 vectors rounded up to 8) or two AVX2 panels: a row's non-zeros are read once or twice
// and each meets its centroids' values in one contiguous run of the panel.
constexpr std::size_t kMaxNV = 8;

// Non-zeros ahead whose panel rows are prefetched.
constexpr std::int64_t kAhead = 16;

// Vectors per panel for k centroids: the fewest powers of two that hold k, at most kMaxNV.
template <class T>
std::size_t VectorsFor(std::size_t k) {
  const std::size_t L = hn::Lanes(Tag<T>());
  const std::size_t need = (k + L - 1) / L;
  std::size_t nv = 1;
  while (nv < need && nv < kMaxNV) nv *= 2;
  return nv;
}

template <class T>
std::size_t PanelWidth(std::size_t k) {
  return VectorsFor<T>(k) * hn::Lanes(Tag<T>());
}

template <class T>
std::size_t PackedSize(std::size_t k, std::size_t dim) {
  const std::size_t nr = PanelWidth<T>(k);
  const std::size_t kpad = (k + nr - 1) / nr * nr;
  return kpad * dim + kpad;
}

// Packs k centroids in panels of width nr, position p holding centroid order[p] (identity
// when order is null).
template <class T>
void PackWidth(const double* c, const std::uint32_t* order, std::size_t k, std::size_t dim, std::size_t nr, T* packed) {
  const std::size_t npanels = (k + nr - 1) / nr;
  T* norms = packed + npanels * nr * dim;
  auto row = [&](std::size_t pos) { return c + (order ? order[pos] : pos) * dim; };
  // The norm of the rounded values the kernel multiplies, taken as the reference takes it.
  for (std::size_t ci = 0; ci < npanels * nr; ++ci) {
    if (ci >= k) {
      norms[ci] = std::numeric_limits<T>::infinity();
      continue;
    }
    const double* cr = row(ci);
    T norm = T(0);
    for (std::size_t j = 0; j < dim; ++j) {
      const T v = static_cast<T>(cr[j]);
      norm += v * v;
    }
    norms[ci] = norm;
  }
  // The transpose in blocks of features whose panel rows stay in L1 while every centroid of
  // the panel writes its lane of them (K x D values per iteration, a D of 10^5 included).
  constexpr std::size_t kFeatures = 32;
  for (std::size_t p = 0; p < npanels; ++p) {
    T* panel = packed + p * nr * dim;
    for (std::size_t j0 = 0; j0 < dim; j0 += kFeatures) {
      const std::size_t j1 = std::min(dim, j0 + kFeatures);
      for (std::size_t l = 0; l < nr; ++l) {
        const std::size_t ci = p * nr + l;
        const double* cr = ci < k ? row(ci) : nullptr;
        for (std::size_t j = j0; j < j1; ++j) panel[j * nr + l] = cr ? static_cast<T>(cr[j]) : T(0);
      }
    }
  }
}

template <class T>
void Pack(const double* c, std::size_t k, std::size_t dim, T* packed) {
  PackWidth<T>(c, nullptr, k, dim, PanelWidth<T>(k), packed);
}

// The scores ||c||^2 - 2 x.c of row r against panel p: s[v] for the panel's NV vectors.
template <std::size_t NV, class T, class V = hn::Vec<Tag<T>>>
HWY_INLINE void PanelScores(const CsrRef<T>& x, std::size_t r, const T* panel, const T* pnorms, V* s) {
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  const std::size_t nr = NV * L;
  V acc[NV];
  for (std::size_t v = 0; v < NV; ++v) acc[v] = hn::Zero(d);
  const std::int64_t q1 = x.offsets[r + 1];
  for (std::int64_t q = x.offsets[r]; q < q1; ++q) {
    // The panel rows of the non-zeros a few ahead: random rows of a panel that is usually far
    // larger than L2 (D x nr values), so their latency, not the FMAs, sets the pace.
    if (q + kAhead < q1) {
      const T* ahead = panel + static_cast<std::size_t>(x.cols[q + kAhead]) * nr;
      prefetch_lines<3>(ahead, nr * sizeof(T));
    }
    const V xv = hn::Set(d, x.values[q]);
    const T* c = panel + static_cast<std::size_t>(x.cols[q]) * nr;
#pragma GCC unroll 8
    for (std::size_t v = 0; v < NV; ++v) acc[v] = hn::MulAdd(xv, hn::Load(d, c + v * L), acc[v]);
  }
  const V minus2 = hn::Set(d, T(-2));
#pragma GCC unroll 8
  for (std::size_t v = 0; v < NV; ++v) s[v] = hn::MulAdd(acc[v], minus2, hn::Load(d, pnorms + v * L));
}

template <class T, std::size_t NV>
std::size_t AssignImpl(const CsrRef<T>& x, const T* packed, std::size_t k, std::size_t dim, std::size_t r0,
                       std::size_t r1, std::int32_t* labels, T* dist) {
  using V = hn::Vec<Tag<T>>;
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  const std::size_t nr = NV * L;
  const std::size_t npanels = (k + nr - 1) / nr;
  const T* norms = packed + npanels * nr * dim;
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  std::size_t changed = 0;
  for (std::size_t r = r0; r < r1; ++r) {
    // Per lane, the lowest score and its centroid index: indices grow along v and along
    // panels and the comparison is strict, so the lowest index wins a tie.
    V best = inf;
    V bidx = hn::Zero(d);
    for (std::size_t p = 0; p < npanels; ++p) {
      V s[NV];
      PanelScores<NV>(x, r, packed + p * nr * dim, norms + p * nr, s);
      for (std::size_t v = 0; v < NV; ++v) {
        const auto lt = hn::Lt(s[v], best);
        best = hn::IfThenElse(lt, s[v], best);
        bidx = hn::IfThenElse(lt, hn::Iota(d, static_cast<T>(p * nr + v * L)), bidx);
      }
    }
    const V mn = hn::MinOfLanes(d, best);
    const V cand = hn::IfThenElse(hn::Eq(best, mn), bidx, inf);
    // No lane matches only when every score is NaN (products overflowed): label 0 then.
    const T best_idx = hn::GetLane(hn::MinOfLanes(d, cand));
    const auto label = best_idx < static_cast<T>(k) ? static_cast<std::int32_t>(best_idx) : 0;
    changed += labels[r] != label;
    labels[r] = label;
    dist[r] = std::max(T(0), x.xnorm[r] + hn::GetLane(mn));
  }
  return changed;
}

template <class T, std::size_t NV>
void SqDistImpl(const CsrRef<T>& x, const T* packed, std::size_t k, std::size_t dim, std::size_t r0, std::size_t r1,
                T* out, std::size_t ldo) {
  using V = hn::Vec<Tag<T>>;
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  const std::size_t nr = NV * L;
  const std::size_t npanels = (k + nr - 1) / nr;
  const T* norms = packed + npanels * nr * dim;
  auto buf = hwy::AllocateAligned<T>(nr);
  for (std::size_t r = r0; r < r1; ++r) {
    const T xn = x.xnorm[r];
    T* o = out + (r - r0) * ldo;
    for (std::size_t p = 0; p < npanels; ++p) {
      V s[NV];
      PanelScores<NV>(x, r, packed + p * nr * dim, norms + p * nr, s);
      for (std::size_t v = 0; v < NV; ++v) hn::Store(s[v], d, buf.get() + v * L);
      const std::size_t m = std::min(nr, k - p * nr);
      for (std::size_t l = 0; l < m; ++l) o[p * nr + l] = std::max(T(0), xn + buf[l]);
    }
  }
}

// Row r against panel g (NV vectors wide) of a pack_width packing.
template <class T, std::size_t NV>
void GroupMinImpl(const CsrRef<T>& x, std::size_t r, const T* packed, std::size_t k, std::size_t dim, const T* ids,
                  std::size_t g, T* min1, std::int32_t* idx1, T* min2) {
  using V = hn::Vec<Tag<T>>;
  const Tag<T> d;
  const std::size_t L = hn::Lanes(d);
  const std::size_t nr = NV * L;
  const std::size_t npanels = (k + nr - 1) / nr;
  const T* norms = packed + npanels * nr * dim;
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  V s[NV];
  PanelScores<NV>(x, r, packed + g * nr * dim, norms + g * nr, s);
  const T* id = ids + g * nr;
  V m = s[0];
  for (std::size_t v = 1; v < NV; ++v) m = hn::Min(m, s[v]);
  const V mn = hn::MinOfLanes(d, m);
  V cand = inf;
  for (std::size_t v = 0; v < NV; ++v) cand = hn::Min(cand, hn::IfThenElse(hn::Eq(s[v], mn), hn::LoadU(d, id + v * L), inf));
  const V best = hn::MinOfLanes(d, cand);
  V m2 = inf;
  for (std::size_t v = 0; v < NV; ++v) m2 = hn::Min(m2, hn::IfThenElse(hn::Eq(hn::LoadU(d, id + v * L), best), inf, s[v]));
  *min1 = hn::GetLane(mn);
  const T b = hn::GetLane(best);
  *idx1 = b < static_cast<T>(k) ? static_cast<std::int32_t>(b) : 0;
  *min2 = hn::GetLane(hn::MinOfLanes(d, m2));
}

template <class T>
void GroupMin(const CsrRef<T>& x, std::size_t r, const T* packed, std::size_t nr, std::size_t k, std::size_t dim,
              const T* ids, std::size_t g, T* min1, std::int32_t* idx1, T* min2) {
  switch (nr / hn::Lanes(Tag<T>())) {
    case 1: return GroupMinImpl<T, 1>(x, r, packed, k, dim, ids, g, min1, idx1, min2);
    case 2: return GroupMinImpl<T, 2>(x, r, packed, k, dim, ids, g, min1, idx1, min2);
    case 4: return GroupMinImpl<T, 4>(x, r, packed, k, dim, ids, g, min1, idx1, min2);
    default: return GroupMinImpl<T, kMaxNV>(x, r, packed, k, dim, ids, g, min1, idx1, min2);
  }
}

template <class T>
std::size_t AssignRows(const CsrRef<T>& x, const T* packed, std::size_t k, std::size_t dim, std::size_t r0,
                       std::size_t r1, std::int32_t* labels, T* dist) {
  switch (VectorsFor<T>(k)) {
    case 1: return AssignImpl<T, 1>(x, packed, k, dim, r0, r1, labels, dist);
    case 2: return AssignImpl<T, 2>(x, packed, k, dim, r0, r1, labels, dist);
    case 4: return AssignImpl<T, 4>(x, packed, k, dim, r0, r1, labels, dist);
    default: return AssignImpl<T, kMaxNV>(x, packed, k, dim, r0, r1, labels, dist);
  }
}

template <class T>
void SqDistRows(const CsrRef<T>& x, const T* packed, std::size_t k, std::size_t dim, std::size_t r0, std::size_t r1,
                T* out, std::size_t ldo) {
  switch (VectorsFor<T>(k)) {
    case 1: return SqDistImpl<T, 1>(x, packed, k, dim, r0, r1, out, ldo);
    case 2: return SqDistImpl<T, 2>(x, packed, k, dim, r0, r1, out, ldo);
    case 4: return SqDistImpl<T, 4>(x, packed, k, dim, r0, r1, out, ldo);
    default: return SqDistImpl<T, kMaxNV>(x, packed, k, dim, r0, r1, out, ldo);
  }
}

template <class T>
const SparseKernels<T>* Table() {
  static const SparseKernels<T> table{hwy::TargetName(HWY_TARGET), &PanelWidth<T>, &PackedSize<T>, &Pack<T>,
                                      &AssignRows<T>, &SqDistRows<T>, hn::Lanes(Tag<T>()), &PackWidth<T>,
                                      &GroupMin<T>};
  return &table;
}

const SparseKernels<float>* SparseTableF32() { return Table<float>(); }
const SparseKernels<double>* SparseTableF64() { return Table<double>(); }

}  // namespace flashkm::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace flashkm::detail {

// Highway's dispatch tables of the per-target kernel tables (cpu/dispatch.hpp).
HWY_EXPORT(SparseTableF32);
HWY_EXPORT(SparseTableF64);

template <class T>
std::vector<const SparseKernels<T>*> sparse_kernel_tables() {
  // Best first, as kernel_tables() lists the dense kernels.
  static const std::vector<const SparseKernels<T>*> tables = target_tables<SparseKernels<T>>(
      [] {
        if constexpr (sizeof(T) == sizeof(float)) return HWY_DYNAMIC_DISPATCH(SparseTableF32)();
        else return HWY_DYNAMIC_DISPATCH(SparseTableF64)();
      },
      &sparse_reference_table<T>());
  return tables;
}

template std::vector<const SparseKernels<float>*> sparse_kernel_tables<float>();
template std::vector<const SparseKernels<double>*> sparse_kernel_tables<double>();

}  // namespace flashkm::detail
#endif  // HWY_ONCE
