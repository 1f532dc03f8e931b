// Private header: the draw of greedy k-means++ (shared by the driver's reference seeding and the
// engines that keep the closest distances themselves).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

namespace flashkm::detail {

/// Index of the first point whose running sum of w_i * closest_i (float64, in row order)
/// reaches each target, as numpy.searchsorted(cumsum, targets) does; clipped to the last point.
/// Stops at the last target.
template <class T>
std::vector<std::size_t> search_cumulative(const T* closest, const double* w, std::size_t n,
                                           const std::vector<double>& targets) {
  std::vector<std::size_t> order(targets.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return targets[a] < targets[b]; });
  std::vector<std::size_t> out(targets.size(), n - 1);
  double cum = 0;
  std::size_t t = 0;
  for (std::size_t i = 0; i < n && t < order.size(); ++i) {
    cum += (w ? w[i] : 1.0) * static_cast<double>(closest[i]);
    while (t < order.size() && targets[order[t]] <= cum) out[order[t++]] = i;
  }
  return out;
}

/// The potential sum_i w_i * closest_i (float64, in row order; w may be null): k-means++'s
/// first one, as the plain and the bounded seeding both take it.
template <class T>
double potential(const T* closest, const double* w, std::size_t n) {
  double pot = 0;
  for (std::size_t i = 0; i < n; ++i) pot += (w ? w[i] : 1.0) * static_cast<double>(closest[i]);
  return pot;
}

/// A uniform double in [0, 1) determined by (key, i) alone (SplitMix64's finaliser): the same
/// for a row whichever thread or shard draws it.
inline double keyed_uniform(std::uint64_t key, std::uint64_t i) {
  std::uint64_t z = key + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

}  // namespace flashkm::detail
