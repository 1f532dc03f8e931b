// The plain scalar reference of the sparse kernels: the definition the SIMD sparse kernels are
// tested against. One centroid per panel (row-major k x dim, then the k norms).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "cpu/sparse_kernels.hpp"

namespace flashkm::detail {
namespace {

std::size_t ref_width(std::size_t) { return 1; }

template <class T>
std::size_t ref_size(std::size_t k, std::size_t dim) {
  return k * dim + k;
}

template <class T>
void ref_pack(const double* c, std::size_t k, std::size_t dim, T* packed) {
  for (std::size_t ci = 0; ci < k; ++ci) {
    T norm = T(0);
    for (std::size_t j = 0; j < dim; ++j) {
      const T v = static_cast<T>(c[ci * dim + j]);
      packed[ci * dim + j] = v;
      norm += v * v;
    }
    packed[k * dim + ci] = norm;
  }
}

// ||c||^2 - 2 x.c, the dot product over the row's non-zeros in stored order.
template <class T>
T ref_score(const CsrRef<T>& x, std::size_t r, const T* centroid, T norm) {
  T acc = T(0);
  for (std::int64_t p = x.offsets[r]; p < x.offsets[r + 1]; ++p) acc = std::fma(x.values[p], centroid[x.cols[p]], acc);
  return std::fma(T(-2), acc, norm);
}

template <class T>
std::size_t ref_assign(const CsrRef<T>& x, const T* packed, std::size_t k, std::size_t dim, std::size_t r0,
                       std::size_t r1, std::int32_t* labels, T* dist) {
  const T* norms = packed + k * dim;
  std::size_t changed = 0;
  for (std::size_t r = r0; r < r1; ++r) {
    T best = std::numeric_limits<T>::infinity();
    std::int32_t arg = 0;
    for (std::size_t c = 0; c < k; ++c) {
      const T s = ref_score(x, r, packed + c * dim, norms[c]);
      if (s < best) {
        best = s;
        arg = static_cast<std::int32_t>(c);
      }
    }
    changed += labels[r] != arg;
    labels[r] = arg;
    dist[r] = std::max(T(0), x.xnorm[r] + best);
  }
  return changed;
}

template <class T>
void ref_sqdist(const CsrRef<T>& x, const T* packed, std::size_t k, std::size_t dim, std::size_t r0, std::size_t r1,
                T* out, std::size_t ldo) {
  const T* norms = packed + k * dim;
  for (std::size_t r = r0; r < r1; ++r) {
    for (std::size_t c = 0; c < k; ++c) {
      out[(r - r0) * ldo + c] = std::max(T(0), x.xnorm[r] + ref_score(x, r, packed + c * dim, norms[c]));
    }
  }
}

// Panels of width nr in the order `order`: panel p holds c[order[p * nr + l]][j] at
// [p][j][l], then the norms of every padded position.
template <class T>
void ref_pack_width(const double* c, const std::uint32_t* order, std::size_t k, std::size_t dim, std::size_t nr,
                    T* packed) {
  const std::size_t kpad = (k + nr - 1) / nr * nr;
  T* norms = packed + kpad * dim;
  for (std::size_t pos = 0; pos < kpad; ++pos) {
    const std::size_t p = pos / nr, l = pos % nr;
    T norm = T(0);
    for (std::size_t j = 0; j < dim; ++j) {
      const T v = pos < k ? static_cast<T>(c[(order ? order[pos] : pos) * dim + j]) : T(0);
      packed[p * nr * dim + j * nr + l] = v;
      norm += v * v;
    }
    norms[pos] = pos < k ? norm : std::numeric_limits<T>::infinity();
  }
}

template <class T>
void ref_group_min(const CsrRef<T>& x, std::size_t r, const T* packed, std::size_t nr, std::size_t k, std::size_t dim,
                   const T* ids, std::size_t g, T* min1, std::int32_t* idx1, T* min2) {
  const std::size_t kpad = (k + nr - 1) / nr * nr;
  const T* norms = packed + kpad * dim;
  const T* panel = packed + g * nr * dim;
  std::vector<T> s(nr);
  for (std::size_t l = 0; l < nr; ++l) {
    T acc = T(0);
    for (std::int64_t p = x.offsets[r]; p < x.offsets[r + 1]; ++p) {
      acc = std::fma(x.values[p], panel[static_cast<std::size_t>(x.cols[p]) * nr + l], acc);
    }
    s[l] = std::fma(T(-2), acc, norms[g * nr + l]);
  }
  T best = std::numeric_limits<T>::infinity(), id = std::numeric_limits<T>::infinity();
  for (std::size_t l = 0; l < nr; ++l) {
    const T i = ids[g * nr + l];
    if (s[l] < best || (s[l] == best && i < id)) {
      best = s[l];
      id = i;
    }
  }
  T second = std::numeric_limits<T>::infinity();
  for (std::size_t l = 0; l < nr; ++l) {
    if (ids[g * nr + l] != id) second = std::min(second, s[l]);
  }
  *min1 = best;
  *idx1 = id < static_cast<T>(k) ? static_cast<std::int32_t>(id) : 0;
  *min2 = second;
}

}  // namespace

template <class T>
const SparseKernels<T>& sparse_reference_table() {
  static const SparseKernels<T> table{"reference",     &ref_width,          &ref_size<T>,
                                      &ref_pack<T>,    &ref_assign<T>,      &ref_sqdist<T>,
                                      1,               &ref_pack_width<T>,  &ref_group_min<T>};
  return table;
}

template const SparseKernels<float>& sparse_reference_table<float>();
template const SparseKernels<double>& sparse_reference_table<double>();

}  // namespace flashkm::detail
