// Private header: the floating-point arithmetic of the bounded assignment's bounds
// (docs/KERNELS.md, "Bounded assignment"). Bounds are on exact Euclidean distances between the
// rows and centroids the kernels multiply (both rounded to T); they are stored as float,
// rounded outwards, and every derivation from a float score carries the score's worst-case
// rounding error, so a test that passes is a proof about the kernels' own float scores.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace flashkm::detail::bounds {

/// An upper bound stored as float: at least v (computed in double, whose own few roundings
/// are far inside the float step taken here).
/// (The float's successor by its bits: nextafter without the library call, for the per-row loops.)
inline float up(double v) {
  if (!(v >= 0)) return v < 0 ? 0.0f : std::numeric_limits<float>::infinity();  // NaN: no bound
  const float f = static_cast<float>(v);
  if (f == std::numeric_limits<float>::infinity()) return f;
  std::uint32_t b = 0;
  std::memcpy(&b, &f, sizeof b);
  ++b;  // f >= +0: the next float up
  float r = 0;
  std::memcpy(&r, &b, sizeof r);
  return r;
}

/// The float n steps towards zero from f (infinity: the largest finite float first), 0 where f
/// is not positive (also NaN) or fewer than n steps above zero. Branch-free, so that the
/// per-row loops vectorise.
inline float steps_down(float f, std::uint32_t n) {
  std::uint32_t b = 0;
  std::memcpy(&b, &f, sizeof b);
  b = (f > 0) & (b >= n) ? b - n : 0;
  float r = 0;
  std::memcpy(&r, &b, sizeof r);
  return r;
}

/// A lower bound stored as float: at most v, never negative. The next float towards zero from
/// fl(v); 0 where that is not positive (also NaN, and v too small for a positive float): the
/// weakest bound.
inline float down(double v) { return steps_down(static_cast<float>(v), 1); }

/// The triangle inequality after a centroid moved by at most `drift`: upper bound u + drift.
inline float up_add(float u, double drift) { return up(static_cast<double>(u) + drift); }

/// Lower bound l - drift (the subtraction's double rounding taken off as well).
/// Branch-free (the rows' G bounds are updated in one vectorisable loop); 2^-50 l is exact
/// (l is a float) and covers the subtraction's rounding wherever the result is positive.
inline float down_sub(float l, double drift) {
  const double dl = static_cast<double>(l);
  const float r = down(dl - drift - dl * 0x1p-50);
  return l == std::numeric_limits<float>::infinity() ? l : r;
}

/// A row's G lower bounds after the groups moved by at most gdf[g] (each a drift rounded up
/// to float): lb[g] becomes the float step towards zero from fl(lb[g] - gdf[g]), 0 where that
/// is not positive, and +inf stays +inf. Round-to-nearest puts fl(e) within half a step of e, so
/// the float below it is at most e: the bound stays rigorous in float arithmetic alone, and the
/// loop runs four bounds at a time. Returns the smallest new bound. (Scalar and vector lanes
/// compute the same bits.)
inline float lower_step(float* lb, const float* gdf, std::size_t G) {
  float lmin = std::numeric_limits<float>::infinity();
  std::size_t g = 0;
#if defined(__SSE2__)
  const __m128 zero = _mm_setzero_ps(), inf = _mm_set1_ps(std::numeric_limits<float>::infinity());
  const __m128i one = _mm_set1_epi32(1);
  __m128 vmin = inf;
  for (; g + 4 <= G; g += 4) {
    const __m128 l = _mm_loadu_ps(lb + g);
    const __m128 r = _mm_sub_ps(l, _mm_loadu_ps(gdf + g));
    const __m128 below = _mm_and_ps(_mm_cmpgt_ps(r, zero), _mm_castsi128_ps(_mm_sub_epi32(_mm_castps_si128(r), one)));
    const __m128 keep = _mm_cmpeq_ps(l, inf);
    const __m128 out = _mm_or_ps(_mm_and_ps(keep, l), _mm_andnot_ps(keep, below));
    _mm_storeu_ps(lb + g, out);
    vmin = _mm_min_ps(vmin, out);  // no NaN: bounds are >= +0 or +inf
  }
  alignas(16) float m[4];
  _mm_store_ps(m, vmin);
  lmin = std::min(std::min(m[0], m[1]), std::min(m[2], m[3]));
#endif
  for (; g < G; ++g) {
    const float l = lb[g];
    const float out = l == std::numeric_limits<float>::infinity() ? l : steps_down(l - gdf[g], 1);
    lb[g] = out;
    lmin = std::min(lmin, out);
  }
  return lmin;
}

/// A float at most v (round to nearest, then one step down where that rounded up).
inline float float_below(double v) {
  const float f = static_cast<float>(v);
  return static_cast<double>(f) > v ? std::nextafter(f, -std::numeric_limits<float>::infinity()) : f;
}

/// A lower bound on sqrt(s + bf) from a float score s and a float bf (both exact inputs):
/// fl(s + bf) is at most (1 + u) times the sum, its correctly rounded square root at most
/// (1 + u)^1.5 times the root, and three float steps towards zero take off more than that
/// (each at least u of the value); 0 where the sum is not positive.
inline float root_below(float s, float bf) { return steps_down(std::sqrt(std::max(0.0f, s + bf)), 3); }

/// Bit g set where !(lb[g] > t), for G <= 64 bounds: the groups a row's bounds do not exclude.
inline std::uint64_t not_above(const float* lb, std::size_t G, float t) {
  std::uint64_t need = 0;
  std::size_t g = 0;
#if defined(__SSE2__)
  const __m128 vt = _mm_set1_ps(t);
  for (; g + 4 <= G; g += 4) {
    need |= static_cast<std::uint64_t>(_mm_movemask_ps(_mm_cmpngt_ps(_mm_loadu_ps(lb + g), vt))) << g;
  }
#endif
  for (; g < G; ++g) need |= static_cast<std::uint64_t>(!(lb[g] > t)) << g;
  return need;
}

/// A float t such that a bound l > t proves l^2 > thr (thr computed in double): sqrt(thr) with
/// 2^-40 to spare, rounded up. (thr <= 0: every positive bound proves it.)
inline float root_up(double thr) {
  if (thr > 0) return up(std::sqrt(thr) * (1 + 0x1p-40));
  // thr <= 0 excludes every group whose bound is positive; a NaN threshold excludes none.
  return thr <= 0 ? 0.0f : std::numeric_limits<float>::infinity();
}

/// gamma_n = n u / (1 - n u), u the unit roundoff of T: the relative error bound of a sum of n
/// rounded terms (Higham, Accuracy and Stability of Numerical Algorithms, 3.1).
template <class T>
double gamma(std::size_t n) {
  const double nu = static_cast<double>(n) * std::ldexp(1.0, -std::numeric_limits<T>::digits);
  return nu / (1.0 - nu);
}

/// Everything one iteration's tests need, fixed when its centroids are set.
struct Slack {
  double factor = 0;  // eps(R) = factor * (cmax + R)^2 + eta
  double eta = 0;     // absolute error of products in the subnormal range
  double cmax = 0;    // upper bound on every centroid's norm
  double nmin = 0;    // inner-product mode: bounds on the centroids' squared norms
  double nmax = 0;    //   (0 in Euclidean mode, where the kernel's score holds the norm)
  double dn = 0;      // nmax - nmin (0 in Euclidean mode)

  /// Bound on |score - exact| + |float ||x||^2 - exact| for a row of norm at most r: a dot
  /// product of D terms rounds at most gamma_D |x||c| (gamma_2D without fused multiply-adds),
  /// the centroid and row norms gamma_D of themselves, the final fma once; 4 gamma_{2D+4}
  /// (cmax + r)^2 covers all of it with room for the double arithmetic of the tests.
  double eps(double r) const { return factor * (cmax + r) * (cmax + r) + eta; }
};

/// [nmin, nmax] holding the exact squared norm of each of the k rows c (dim values of T each):
/// float64 sums of squares, widened by their own rounding.
template <class T>
void norm_range(const T* c, std::size_t k, std::size_t dim, double& nmin, double& nmax) {
  const double rel = 1 + static_cast<double>(dim + 4) * 0x1p-52;
  nmin = std::numeric_limits<double>::infinity();
  nmax = 0;
  for (std::size_t i = 0; i < k; ++i) {
    double sq = 0;
    for (std::size_t j = 0; j < dim; ++j) {
      const double v = static_cast<double>(c[i * dim + j]);
      sq += v * v;
    }
    nmin = std::min(nmin, sq / rel);
    nmax = std::max(nmax, sq * rel);
  }
}

/// The Euclidean Slack of the kernels' scores (T, dim features) against centroids whose squared
/// norms are at most nmax (nmin, nmax and dn left 0).
template <class T>
Slack euclidean_slack(std::size_t dim, double nmax) {
  Slack sl;
  sl.cmax = std::sqrt(nmax) * (1 + 0x1p-50);
  sl.factor = 4 * gamma<T>(2 * dim + 4);
  sl.eta = 8 * static_cast<double>(dim + 4) * static_cast<double>(std::numeric_limits<T>::denorm_min());
  return sl;
}

/// 1 - 2^-48: the tests' double rounding margin on a product of two stored bounds.
inline constexpr double kTestMargin = 1.0 - 0x1p-48;

}  // namespace flashkm::detail::bounds
