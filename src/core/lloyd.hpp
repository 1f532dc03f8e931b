// Private header: the Lloyd loop, written once against the Engine interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/engine.hpp"
#include "flashkm/options.hpp"

namespace flashkm::detail {

struct LloydRun {
  std::vector<double> centroids;  // centred, k x dim, float64
  std::vector<std::int32_t> labels;
  double inertia = 0;
  int n_iter = 0;
  StopReason stop = StopReason::kMaxIter;
};

/// Runs Lloyd iterations from `centroids` (centred) until tolerance, strict convergence,
/// max_iter or the callback stops it. The returned labels and inertia are those of the
/// returned centroids. `tol_abs` is tol times the mean feature variance of X; squared
/// distances up to `zero_dist` count as zero when choosing points for empty clusters.
/// For the cosine and dot metrics the engine must have been made for that metric (uncentred
/// rows, argmax x.c, cosine's Lloyd steps weighted by w / ||x||: core/engine.hpp);
/// `total_weight` is the sum of the original weights (the cosine inertia is total_weight - sum w cos).
template <class T>
LloydRun run_lloyd(Engine<T>& engine, std::vector<double> centroids, std::size_t k,
                   const KMeansOptions& options, double tol_abs, double zero_dist, int init_run,
                   std::vector<IterationStats>& history, double total_weight = 0);

/// Scales each of the k rows of `c` (dim values) to unit L2 norm; all-zero rows stay zero.
void normalise_rows(double* c, std::size_t k, std::size_t dim);

}  // namespace flashkm::detail
