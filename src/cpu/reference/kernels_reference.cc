// The plain scalar reference kernels: the definition every SIMD kernel is tested against.
// Written for clarity, not speed; always compiled, selectable as target "reference".
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/bounds.hpp"
#include "cpu/kernel_table.hpp"

namespace flashkm::detail {
namespace {

// Layout with one centroid per panel: row-major k x dim, then the k norms.
template <class T>
std::size_t ref_packed_size(std::size_t k, std::size_t dim) {
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

template <class T>
void centred_row(const PointsRef<T>& pts, std::size_t r, std::vector<T>& out, T& norm) {
  norm = T(0);
  for (std::size_t j = 0; j < pts.dim; ++j) {
    out[j] = pts.x[r * pts.stride + j] - pts.shift[j];
    norm += out[j] * out[j];
  }
}

template <class T>
T ref_dot(const T* a, const T* b, std::size_t dim) {
  T acc = T(0);
  for (std::size_t j = 0; j < dim; ++j) acc = std::fma(a[j], b[j], acc);
  return acc;
}

template <class T>
std::size_t ref_assign(const PointsRef<T>& pts, const T* packed, std::size_t k, std::size_t r0,
                       std::size_t r1, std::int32_t* labels, T* dist) {
  std::vector<T> x(pts.dim);
  const T* norms = packed + k * pts.dim;
  std::size_t changed = 0;
  for (std::size_t r = r0; r < r1; ++r) {
    T xnorm;
    centred_row(pts, r, x, xnorm);
    T best = std::numeric_limits<T>::infinity();
    std::int32_t arg = 0;
    for (std::size_t c = 0; c < k; ++c) {
      const T s = std::fma(T(-2), ref_dot(x.data(), packed + c * pts.dim, pts.dim), norms[c]);
      if (s < best) {
        best = s;
        arg = static_cast<std::int32_t>(c);
      }
    }
    changed += labels[r] != arg;
    labels[r] = arg;
    dist[r] = std::max(T(0), xnorm + best);
  }
  return changed;
}

template <class T>
void ref_sqdist(const PointsRef<T>& pts, const T* packed, std::size_t k, std::size_t r0,
                std::size_t r1, T* out, std::size_t ldo) {
  std::vector<T> x(pts.dim);
  const T* norms = packed + k * pts.dim;
  for (std::size_t r = r0; r < r1; ++r) {
    T xnorm;
    centred_row(pts, r, x, xnorm);
    for (std::size_t c = 0; c < k; ++c) {
      const T s = std::fma(T(-2), ref_dot(x.data(), packed + c * pts.dim, pts.dim), norms[c]);
      out[(r - r0) * ldo + c] = std::max(T(0), xnorm + s);
    }
  }
}

// The reference's sliver is one row (center_pad = 1).
template <class T>
void ref_pack_rows(const PointsRef<T>& pts, const std::uint32_t* idx, std::size_t m, T* xp, T* xnorm) {
  std::vector<T> x(pts.dim);
  for (std::size_t i = 0; i < m; ++i) {
    centred_row(pts, idx[i], x, xnorm[i]);
    std::copy(x.begin(), x.end(), xp + i * pts.dim);
  }
}

template <class T>
void ref_group_min(const T* const* xr, std::size_t dim, const T* packed, const T* ids, std::size_t k, std::size_t c0,
                   std::size_t c1, std::size_t m, T* min1, std::int32_t* idx1, T* min2, T* scores, std::size_t lds) {
  const T* norms = packed + k * dim;
  for (std::size_t i = 0; i < m; ++i) {
    T a1 = std::numeric_limits<T>::infinity(), a2 = a1;
    std::int32_t b1 = static_cast<std::int32_t>(ids[c0]);
    for (std::size_t c = c0; c < c1; ++c) {
      const T s = std::fma(T(-2), ref_dot(xr[i], packed + c * dim, dim), norms[c]);
      if (scores != nullptr) scores[i * lds + (c - c0)] = s;
      const auto id = static_cast<std::int32_t>(ids[c]);
      if (s < a1 || (s == a1 && id < b1)) {
        a2 = a1;
        a1 = s;
        b1 = id;
      } else {
        a2 = std::min(a2, s);
      }
    }
    min1[i] = a1;
    idx1[i] = b1;
    min2[i] = a2;
  }
}

template <class T>
void ref_sqdist_one(const PointsRef<T>& pts, const T* centroid, std::size_t r0, std::size_t r1, T* out) {
  for (std::size_t r = r0; r < r1; ++r) {
    T s = T(0);
    for (std::size_t j = 0; j < pts.dim; ++j) {
      const T e = pts.x[r * pts.stride + j] - pts.shift[j] - centroid[j];
      s += e * e;
    }
    out[r - r0] = s;
  }
}

template <class T>
void ref_sqdist_listed(const PointsRef<T>& pts, const T* const* centroids, std::size_t m, std::size_t r0,
                       std::size_t r1, T* out) {
  for (std::size_t t = 0; t < m; ++t) {
    std::vector<T> o(r1 - r0);
    ref_sqdist_one(pts, centroids[t], r0, r1, o.data());
    for (std::size_t r = r0; r < r1; ++r) out[(r - r0) * m + t] = o[r - r0];
  }
}

template <class T>
void ref_sqdist_few(const PointsRef<T>& pts, const T* centroids, std::size_t m, std::size_t r0,
                    std::size_t r1, T* out) {
  std::vector<const T*> listed(m);
  for (std::size_t t = 0; t < m; ++t) listed[t] = centroids + t * pts.dim;
  ref_sqdist_listed(pts, listed.data(), m, r0, r1, out);
}

template <class T>
void ref_center_rows(const PointsRef<T>& pts, std::size_t r, std::size_t m, T* out, T* xnorm) {
  std::vector<T> x(pts.dim);
  for (std::size_t i = 0; i < m; ++i) {
    centred_row(pts, r + i, x, xnorm[i]);
    std::copy(x.begin(), x.end(), out + i * pts.dim);
  }
}

template <class T>
void ref_accumulate(const PointsRef<T>& pts, const std::uint32_t* idx, std::size_t n,
                    std::size_t /*idx_valid*/, const double* weights, const double* centroid, double* sum, double* wsum,
                    double* sq) {
  for (std::size_t t = 0; t < n; ++t) {
    const T* row = pts.x + idx[t] * pts.stride;
    *wsum += weights ? weights[idx[t]] : 1.0;
    for (std::size_t j = 0; j < pts.dim; ++j) {
      const double x = static_cast<double>(row[j]);
      const double e = x - centroid[j];
      sum[j] += weights ? weights[idx[t]] * x : x;
      sq[j] += weights ? weights[idx[t]] * (e * e) : e * e;
    }
  }
}

}  // namespace

void ref_sketch_mask(const SketchArgs& g, std::uint32_t* mask) {
  for (std::size_t i = 0; i < kSketchRows; ++i) {
    // cl, tau and over are read by the classic test only (SketchArgs::rr).
    const float rd = g.rr ? 0.0f : std::sqrt((g.cl[i] + g.tau) * g.over) * kSketchUp + g.delta[i];
    std::uint32_t bits = 0;
    for (std::size_t t = 0; t < g.m; ++t) {
      std::int64_t p = 0;
      for (std::size_t k = 0; k < g.quads; ++k) {
        const auto w = static_cast<std::uint32_t>(g.cq[t * g.quads + k]);
        for (std::size_t h = 0; h < 4; ++h) {
          const auto c = static_cast<std::int8_t>(static_cast<std::uint8_t>(w >> (8 * h)));
          p += (static_cast<std::int64_t>(g.q[(k * kSketchRows + i) * 4 + h]) - 128) * c;
        }
      }
      if (g.rr) {
        const float lhs = (g.s[i] * g.cs[t]) * static_cast<float>(static_cast<std::int32_t>(p));
        if (!(lhs <= g.rr[i] + g.cc[t])) bits |= std::uint32_t{1} << t;
        continue;
      }
      const float ab = g.a[i] + g.cb[t];
      const float e = ab - (g.s[i] * g.cs[t]) * static_cast<float>(p);
      const float elo = e - ab * kSketchErr;
      const float gg = rd + g.cdelta[t];
      const float thr = (gg * gg) * kSketchUp;
      if (!(elo >= thr)) bits |= std::uint32_t{1} << t;
    }
    mask[i] = bits;
  }
}

float ref_lower_step_groups(float* lb, const float* cdf, std::size_t n, std::size_t gs, float* gmin) {
  float all = std::numeric_limits<float>::infinity();
  for (std::size_t g0 = 0, g = 0; g0 < n; g0 += gs, ++g) {
    const std::size_t e = std::min(n, g0 + gs);
    float m = std::numeric_limits<float>::infinity();
    for (std::size_t c = g0; c < e; ++c) m = std::min(m, bounds::lower_step(lb + c, cdf + c, 1));
    gmin[g] = m;
    all = std::min(all, m);
  }
  return all;
}

template <class T>
void ref_bounds_from_scores(const T* sc, std::size_t n, double base, float* lb) {
  if constexpr (std::is_same_v<T, float>) {
    const float bf = bounds::float_below(base);
    for (std::size_t c = 0; c < n; ++c) lb[c] = bounds::root_below(sc[c], bf);
  } else {
    for (std::size_t c = 0; c < n; ++c) lb[c] = bounds::down(std::sqrt(std::max(0.0, static_cast<double>(sc[c]) + base)));
  }
}

template <class T>
void ref_pair_scores(const T* x, std::size_t dim, const T* crows, const T* cnorms, const std::uint32_t* pos,
                     std::size_t m, T* out) {
  for (std::size_t q = 0; q < m; ++q) {
    out[q] = std::fma(T(-2), ref_dot(x, crows + static_cast<std::size_t>(pos[q]) * dim, dim), cnorms[pos[q]]);
  }
}

template <class T>
const KernelTable<T>& reference_table() {
  // One layout serves as both the wide and the narrow panel.
  static const PanelKernels<T> panel{1, &ref_packed_size<T>, &ref_pack<T>, &ref_assign<T>,
                                     &ref_sqdist<T>, &ref_group_min<T>};
  static const KernelTable<T> table{"reference", panel, panel, &ref_sqdist_one<T>,
                                    &ref_sqdist_few<T>, &ref_sqdist_listed<T>, &ref_center_rows<T>, 1,
                                    &ref_pack_rows<T>, &ref_accumulate<T>, &ref_sketch_mask,
                                    &ref_sketch_mask, &ref_lower_step_groups, &ref_bounds_from_scores<T>,
                                    &ref_pair_scores<T>};
  return table;
}

template const KernelTable<float>& reference_table<float>();
template const KernelTable<double>& reference_table<double>();

}  // namespace flashkm::detail
