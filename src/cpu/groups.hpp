// Private header: what the bounded assignments of the dense and the sparse engine share
// (docs/KERNELS.md, "Bounded assignment"): Yinyang's spatially coherent centroid groups, and
// prune = auto's judgement of whether the bounds pay.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace flashkm::detail {

/// Set bits of a mask: the bounded assignment's groups, k-means++'s candidates (SWAR: the
/// baseline x86-64 build has no popcnt instruction, and __builtin_popcountll / std::popcount
/// call libgcc's table-driven __popcountdi2).
inline std::size_t bits_set64(std::uint64_t v) {
  v = v - ((v >> 1) & 0x5555555555555555ull);
  v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
  v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return static_cast<std::size_t>((v * 0x0101010101010101ull) >> 56);
}

/// Yinyang's groups: centroids that are close together, so that a row far from a group is far
/// from all of it. Balanced recursive bisection of the centroids c (float64, k x dim): split
/// along the line between two mutually far centroids, at the projection's order statistic, so
/// that every group but the last holds exactly gs. Returns the order: position p holds centroid
/// order[p], and group g is positions [g gs, (g + 1) gs).
inline std::vector<std::uint32_t> coherent_order(const double* c, std::size_t k, std::size_t dim, std::size_t gs) {
  std::vector<std::uint32_t> order(k);
  for (std::size_t i = 0; i < k; ++i) order[i] = static_cast<std::uint32_t>(i);
  auto sq = [&](std::size_t a, std::size_t b) {
    double t = 0;
    for (std::size_t j = 0; j < dim; ++j) {
      const double e = c[a * dim + j] - c[b * dim + j];
      t += e * e;
    }
    return t;
  };
  std::vector<std::pair<double, std::uint32_t>> proj;
  std::vector<std::pair<std::size_t, std::size_t>> todo{{0, k}};
  while (!todo.empty()) {
    // Plain variables, not a structured binding: the lambda below captures them (clang 14).
    const std::size_t lo = todo.back().first, hi = todo.back().second;
    todo.pop_back();
    if (hi - lo <= gs) continue;
    const std::size_t ng = (hi - lo + gs - 1) / gs, left = ng / 2 * gs;
    auto farthest_from = [&](std::size_t a) {
      std::size_t best = order[lo];
      double bd = -1;
      for (std::size_t p = lo; p < hi; ++p) {
        const double dd = sq(a, order[p]);
        if (dd > bd) {
          bd = dd;
          best = order[p];
        }
      }
      return best;
    };
    const std::size_t b = farthest_from(order[lo]), e = farthest_from(b);
    proj.clear();
    for (std::size_t p = lo; p < hi; ++p) {
      double t = 0;
      for (std::size_t j = 0; j < dim; ++j) t += c[order[p] * dim + j] * (c[b * dim + j] - c[e * dim + j]);
      proj.emplace_back(t, order[p]);
    }
    std::sort(proj.begin(), proj.end());
    for (std::size_t p = lo; p < hi; ++p) order[p] = proj[p - lo].second;
    todo.emplace_back(lo, lo + left);
    todo.emplace_back(lo + left, hi);
  }
  return order;
}

/// prune = auto's judgement, from the fraction of all distances each bounded iteration
/// computed (counts only, so deterministic). A survivor's distance costs more than the plain
/// kernel's (gathered rows, per-group reductions, the bounds' upkeep), so every kWindow
/// bounded iterations from the second window on, if the last window computed over the
/// break-even fraction of all distances on average and no less than 0.9x the window before
/// (the bounds are not tightening), the run goes on unpruned (bitwise the same; only the speed
/// differs).
class AutoPrune {
 public:
  static constexpr std::size_t kWindow = 10;

  /// The break-even fraction: a third by default (the sparse engine); the dense engine's
  /// per-row upkeep weighs less against the distances the wider the rows (break_even_for).
  void reset(double break_even = 1.0 / 3) {
    fractions_.clear();
    break_even_ = break_even;
  }

  /// The dense engine's break-even for rows of `dim` features: D / (D + 96), at most 0.6 (the
  /// update's full read of X and the survivors' packing stay), measured on AMD EPYC (Zen 3,
  /// AVX2), 2 threads: pruned iterations lost at D = 32 with 37% of the distances computed,
  /// and won 1.6x at D = 128 with 30%.
  static double break_even_for(std::size_t dim) {
    const double d = static_cast<double>(dim);
    return std::min(0.6, d / (d + 96));
  }

  /// Records one bounded iteration (after the first of a run); returns whether to go on pruning.
  bool keep(double fraction) {
    fractions_.push_back(fraction);
    const std::size_t w = kWindow, m = fractions_.size();
    auto mean = [&](std::size_t a, std::size_t b) {
      double t = 0;
      for (std::size_t i = a; i < b; ++i) t += fractions_[i];
      return t / static_cast<double>(b - a);
    };
    return !(m >= 2 * w && m % w == 0 && mean(m - w, m) > break_even_ &&
             mean(m - w, m) >= 0.9 * mean(m - 2 * w, m - w));
  }

 private:
  std::vector<double> fractions_;
  double break_even_ = 1.0 / 3;
};

}  // namespace flashkm::detail
