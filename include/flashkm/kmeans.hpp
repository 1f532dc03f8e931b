// The public entry points: fit, predict, transform, score, and SIMD target queries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flashkm/errors.hpp"
#include "flashkm/matrix_view.hpp"
#include "flashkm/options.hpp"
#include "flashkm/result.hpp"
#include "flashkm/source.hpp"

namespace flashkm {

/// Exact Lloyd k-means on the rows of X (float or double). Throws InvalidArgument /
/// InvalidData on bad input; never modifies X. Same input, options and seed give bitwise the
/// same result for any n_threads on the same build and target.
template <class T>
KMeansResult<T> fit(MatrixView<T> X, const KMeansOptions& options);

/// The same on rows streamed from a RowSource (data larger than memory): one pass over the
/// source per Lloyd iteration, about one per k-means++ centre, and bitwise the result of fit() on
/// the same rows in memory. Memory: O(N) for labels and distances plus what the source holds.
template <class T>
KMeansResult<T> fit(RowSource<T>& source, const KMeansOptions& options);

/// Rows in a RowSource's chunk granule for data of `cols` features of `elem_size` bytes: a
/// power of two, about 16 MiB of rows (at least 64 rows).
std::size_t row_source_granule(std::size_t cols, std::size_t elem_size);

/// Seeds chosen on their own (scikit-learn's kmeans_plusplus).
template <class T>
struct SeedResult {
  std::vector<T> centers;             ///< n_clusters x n_features: copies of the chosen rows of X
  std::vector<std::int64_t> indices;  ///< the chosen rows, in the order they were chosen
  std::uint64_t distances = 0;        ///< point-centre distances computed (bounds skip some)
  double seconds = 0;
};

/// Greedy k-means++ as fit() seeds (the same rows for the same options.seed, n_threads,
/// sample_weight and target; bitwise for any thread count): n_local_trials candidates per step
/// (0: 2 + floor(ln n_clusters)). options.seed_callback hears every step and
/// options.seed_sketch is honoured; other options are ignored. Throws InvalidArgument /
/// InvalidData as fit() does.
template <class T>
SeedResult<T> kmeans_plusplus(MatrixView<T> X, std::size_t n_clusters, const KMeansOptions& options = {},
                              std::size_t n_local_trials = 0);

/// Index of the nearest centroid for every row of X (ties go to the lowest index).
template <class T>
std::vector<std::int32_t> predict(MatrixView<T> X, MatrixView<T> centroids,
                                  const PredictOptions& options = {});

/// predict() on rows streamed from a RowSource, in one pass.
template <class T>
std::vector<std::int32_t> predict(RowSource<T>& source, MatrixView<T> centroids,
                                  const PredictOptions& options = {});

/// Dissimilarity of every row of X to every centroid, N x K, row-major: the Euclidean (not
/// squared) distance; under options.metric = kCosine 1 - cos(x, c), under kDot -x.c (smaller is
/// closer in every case). This is the only call that materialises an N x K matrix, because the
/// caller asked for it.
template <class T>
std::vector<T> transform(MatrixView<T> X, MatrixView<T> centroids,
                         const PredictOptions& options = {});

/// scikit-learn's score: minus the (weighted) inertia in options.metric (Euclidean: the sum of
/// squared distances to the nearest centroid; cosine: sum w (1 - cos); dot: -sum w x.c).
template <class T>
double score(MatrixView<T> X, MatrixView<T> centroids, const PredictOptions& options = {});

/// SIMD targets this build compiled and this CPU can run, best first, then "reference" (the
/// plain scalar kernels). Any of these names may be passed as KMeansOptions::target or in the
/// FLASHKM_TARGET environment variable.
std::vector<std::string> available_targets();

/// The target a call with an empty `target` option would use now (honours FLASHKM_TARGET).
std::string default_target();

}  // namespace flashkm
