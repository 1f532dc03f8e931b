// Private header: the sparse FlashAssign kernels (CSR rows against dense packed centroids), one
// table per SIMD target plus the scalar reference (docs/KERNELS.md, "Sparse rows").
//
// Kernel contract:
// * Centroids are packed by `pack` into panels of nr = panel_width(k) centroids: panel p holds,
//   for every feature j, the nr values c[p*nr + l][j] contiguously ([p][j][l]), so that one
//   non-zero x_j of a row meets the nr centroids' j-th values in one contiguous, aligned run;
//   after the last panel come the squared norms of all padded centroids (padding: zero, norm
//   +inf, never a winner). The reference's panel is one centroid wide (row-major k x dim).
// * A row's dot products with a panel are accumulated over its non-zeros in their stored
//   order, one fused multiply-add per non-zero and centroid, in X's type; the score is
//   fma(-2, x.c, ||c||^2) and the distance max(0, ||x||^2 + score), ||x||^2 given per row.
//   Every lane (centroid) follows the same arithmetic, so a pair's score does not depend on
//   the panel or position the centroid is packed at, nor on how many centroids are packed.
// * Every function works on a row range on one thread; nothing rows x K is written by
//   assign_rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace flashkm::detail {

/// Sparse rows as the kernels read them: row r's non-zeros are values[p] at columns cols[p] for
/// p in [offsets[r], offsets[r + 1]); xnorm[r] is its squared norm (in T).
template <class T>
struct CsrRef {
  const T* values = nullptr;
  const std::int32_t* cols = nullptr;
  const std::int64_t* offsets = nullptr;
  const T* xnorm = nullptr;
};

template <class T>
struct SparseKernels {
  const char* name;  // the Highway target name of the code that runs, or "reference"

  /// Centroids per packed panel for k centroids.
  std::size_t (*panel_width)(std::size_t k);

  /// T elements needed to pack k centroids of dimension dim (panels + norms).
  std::size_t (*packed_size)(std::size_t k, std::size_t dim);

  /// Packs k centroids (float64, row-major k x dim) into `packed`.
  void (*pack)(const double* centroids, std::size_t k, std::size_t dim, T* packed);

  /// FlashAssign over rows [r0, r1): labels[r] = argmin_c ||x_r - c||^2 (ties: lowest index),
  /// dist[r] its squared distance (>= 0). Returns how many labels changed.
  std::size_t (*assign_rows)(const CsrRef<T>& x, const T* packed, std::size_t k, std::size_t dim,
                             std::size_t r0, std::size_t r1, std::int32_t* labels, T* dist);

  /// Squared distances of rows [r0, r1) to all k packed centroids: out[(r - r0) * ldo + c].
  void (*sqdist_rows)(const CsrRef<T>& x, const T* packed, std::size_t k, std::size_t dim, std::size_t r0,
                      std::size_t r1, T* out, std::size_t ldo);

  // ---- The bounded assignment's kernels (docs/KERNELS.md, "Sparse rows") ----

  /// Panel widths group_min accepts: lanes, 2, 4 or 8 times lanes.
  std::size_t lanes;

  /// Packs k centroids as `pack` does but in panels of width nr (one of the widths above) and
  /// in the order `order` (position p holds centroid order[p]). The size is kpad * dim + kpad,
  /// kpad = k rounded up to a multiple of nr; padding as for `pack`.
  void (*pack_width)(const double* centroids, const std::uint32_t* order, std::size_t k, std::size_t dim,
                     std::size_t nr, T* packed);

  /// Row r against panel g of a pack_width packing: *min1 = the panel's smallest score, *idx1 =
  /// the lowest ids[p] among its positions p holding that score, *min2 = the smallest score at
  /// the panel's other positions (padding: id and score +inf). Every score is bitwise the one
  /// assign_rows computes for the same row and centroid.
  void (*group_min)(const CsrRef<T>& x, std::size_t r, const T* packed, std::size_t nr, std::size_t k,
                    std::size_t dim, const T* ids, std::size_t g, T* min1, std::int32_t* idx1, T* min2);
};

/// Every compiled target's sparse kernels the running CPU supports, best first, then the
/// reference; names as kernel_tables() (the same target is chosen for dense and sparse input).
template <class T>
std::vector<const SparseKernels<T>*> sparse_kernel_tables();

/// The scalar reference (always compiled, no SIMD).
template <class T>
const SparseKernels<T>& sparse_reference_table();

}  // namespace flashkm::detail
