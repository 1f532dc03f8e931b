// Private header: the draw of greedy k-means++ (shared by the driver's reference seeding and the
// engines that keep the closest distances themselves).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <limits>
#include <vector>

#include "core/exact_sum.hpp"
#include "core/engine.hpp"

namespace flashkm::detail {

/// Rows per block of k-means++'s running sums (search_cumulative).
inline constexpr std::size_t kDrawBlock = 2048;

/// Index of the first point whose running sum of w_i * closest_i (float64) reaches each target,
/// as numpy.searchsorted(cumsum, targets) does; clipped to the last point. The running sums are
/// taken in blocks of kDrawBlock rows, so that the block sums are independent chains: block b's
/// rows are added in row order from zero (s_b), the blocks' starts are P_0 = 0, P_{b+1} = P_b + s_b
/// in block order, and row i of block b has the running sum P_b + (block b's sum up to row i).
/// That is nondecreasing in i and ends block b at P_{b+1}; it depends on nothing but the data
/// (not on threads). Costs one pass with eight chains side by side (the plain row-order sum was
/// bound by the latency of one chain of additions), then one block per target.
template <class T>
std::vector<std::size_t> search_cumulative(const T* closest, const double* w, std::size_t n,
                                           const std::vector<double>& targets) {
  constexpr std::size_t B = kDrawBlock;
  std::vector<std::size_t> order(targets.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return targets[a] < targets[b]; });
  std::vector<std::size_t> out(targets.size(), n - 1);
  if (n == 0 || targets.empty()) return out;
  const auto term = [&](std::size_t i) { return (w ? w[i] : 1.0) * static_cast<double>(closest[i]); };
  const std::size_t nb = (n + B - 1) / B, full = n / B;
  std::vector<double> start(nb + 1, 0.0);  // start[b] = P_b; start[nb] = the total
  std::size_t b = 0;
  constexpr std::size_t kChains = 8;
  for (; b + kChains <= full; b += kChains) {
    double a[kChains] = {};
    const std::size_t r = b * B;
    if (w) {
      for (std::size_t i = 0; i < B; ++i) {
        for (std::size_t c = 0; c < kChains; ++c) a[c] += w[r + c * B + i] * static_cast<double>(closest[r + c * B + i]);
      }
    } else {
      for (std::size_t i = 0; i < B; ++i) {
        for (std::size_t c = 0; c < kChains; ++c) a[c] += static_cast<double>(closest[r + c * B + i]);
      }
    }
    for (std::size_t c = 0; c < kChains; ++c) start[b + c + 1] = a[c];
  }
  for (; b < nb; ++b) {
    double a = 0;
    for (std::size_t i = b * B; i < std::min(n, (b + 1) * B); ++i) a += term(i);
    start[b + 1] = a;
  }
  for (b = 0; b < nb; ++b) start[b + 1] += start[b];
  b = 0;
  for (std::size_t t = 0; t < order.size(); ++t) {
    const double target = targets[order[t]];
    while (b < nb && !(target <= start[b + 1])) ++b;  // the first block whose end reaches it
    if (b == nb) break;                                // beyond the total: the last point
    double q = 0;
    for (std::size_t i = b * B; i < std::min(n, (b + 1) * B); ++i) {
      q += term(i);
      if (target <= start[b] + q) {
        out[order[t]] = i;
        break;
      }
    }
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

// ---- k-means|| over an engine's kept closest distances (Engine::seed_first ... owner weights) ----

/// The first-centre proposal of rows [0, n) whose first row is `first_row` of the whole data
/// set: the largest log(u_i) / w_i, u_i = keyed_uniform(key, first_row + i), lowest index on
/// ties; zero weights never win (key -inf). The row itself is left empty.
inline SeedPick keyed_first(const double* w, std::size_t n, std::uint64_t key, std::uint64_t first_row) {
  SeedPick best;
  for (std::size_t i = 0; i < n; ++i) {
    const double wi = w ? w[i] : 1.0;
    if (!(wi > 0)) continue;
    // u = 0 (log -inf) still ranks above "no row": the lowest finite key.
    const double v = std::max(std::log(keyed_uniform(key, first_row + i)) / wi, std::numeric_limits<double>::lowest());
    if (v > best.key) {
      best.key = v;
      best.index = first_row + i;
    }
  }
  return best;
}

/// Adds sum_i w_i closest_i (products in float64) to acc, exactly.
template <class T>
void exact_potential(const T* closest, const double* w, std::size_t n, ExactSum& acc) {
  for (std::size_t i = 0; i < n; ++i) acc.add((w ? w[i] : 1.0) * static_cast<double>(closest[i]));
}

/// The rows drawn by k-means|| (local indices, increasing): row i when
/// u_i < l w_i closest_i / psi, u_i = keyed_uniform(key, first_row + i).
template <class T>
std::vector<std::size_t> keyed_oversample(const T* closest, const double* w, std::size_t n, double l, double psi,
                                          std::uint64_t key, std::uint64_t first_row) {
  std::vector<std::size_t> out;
  const double scale = psi > 0 ? l / psi : 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double p = (w ? w[i] : 1.0) * static_cast<double>(closest[i]) * scale;
    if (p > 0 && keyed_uniform(key, first_row + i) < p) out.push_back(i);
  }
  return out;
}

/// Adds each row's weight to acc[owner_i], exactly.
inline void exact_owner_weights(const std::int32_t* owner, const double* w, std::size_t n, std::vector<ExactSum>& acc) {
  for (std::size_t i = 0; i < n; ++i) acc[static_cast<std::size_t>(owner[i])].add(w ? w[i] : 1.0);
}

}  // namespace flashkm::detail
