// Private header: the draw of greedy k-means++ (shared by the driver's reference seeding and the
// engines that keep the closest distances themselves).
#pragma once

#include <algorithm>
#include <cstddef>
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

}  // namespace flashkm::detail
