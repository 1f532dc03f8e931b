// The result of flashkm::fit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "flashkm/options.hpp"

namespace flashkm {

/// Everything a fit produces. Labels are those of the returned centroids (a final assignment is
/// run when the loop stopped on tolerance, max_iter or the callback).
template <class T>
struct KMeansResult {
  std::size_t n_clusters = 0;
  std::size_t n_features = 0;
  std::vector<T> centroids;          ///< n_clusters x n_features, row-major, the input's type
  std::vector<std::int32_t> labels;  ///< one per point, in [0, n_clusters)
  double inertia = 0;                ///< sum of w*||x - c_label||^2 (cosine: sum w (1 - cos);
                                     ///< dot: -sum w x.c), accumulated in float64
  int n_iter = 0;                    ///< iterations of the best run
  bool converged = false;            ///< stopped on tolerance or strict convergence
  StopReason stop_reason = StopReason::kMaxIter;
  int best_init = 0;                 ///< which of the n_init runs was kept
  /// The kept run's initial centroids (n_clusters x n_features, float64, X's coordinates): for a fixed
  /// seed, the same on every rank and for any number of ranks under init = kMeansParallel.
  std::vector<double> initial_centroids;
  std::vector<IterationStats> history;  ///< iterations of every run, in order
  double init_seconds = 0;           ///< wall time of seeding (k-means++, k-means||, random), all runs
  std::string target;                ///< the SIMD target whose kernels actually ran

  MatrixView<T> centroids_view() const { return {centroids.data(), n_clusters, n_features}; }
};

}  // namespace flashkm
