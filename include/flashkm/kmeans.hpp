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
/// source per Lloyd iteration, two per k-means++ centre, and bitwise the result of fit() on
/// the same rows in memory. Memory: O(N) for labels and distances plus what the source holds.
template <class T>
KMeansResult<T> fit(RowSource<T>& source, const KMeansOptions& options);

/// Rows in a RowSource's chunk granule for data of `cols` features of `elem_size` bytes: a
/// power of two, about 16 MiB of rows (at least 64 rows).
std::size_t row_source_granule(std::size_t cols, std::size_t elem_size);

/// Index of the nearest centroid for every row of X (ties go to the lowest index).
template <class T>
std::vector<std::int32_t> predict(MatrixView<T> X, MatrixView<T> centroids,
                                  const PredictOptions& options = {});

/// predict() on rows streamed from a RowSource, in one pass.
template <class T>
std::vector<std::int32_t> predict(RowSource<T>& source, MatrixView<T> centroids,
                                  const PredictOptions& options = {});

/// Euclidean (not squared) distance of every row of X to every centroid: N x K, row-major.
/// This is the only call that materialises an N x K matrix, because the caller asked for it.
template <class T>
std::vector<T> transform(MatrixView<T> X, MatrixView<T> centroids,
                         const PredictOptions& options = {});

/// scikit-learn's score: minus the (weighted) sum of squared distances to the nearest centroid.
template <class T>
double score(MatrixView<T> X, MatrixView<T> centroids, const PredictOptions& options = {});

/// SIMD targets this build compiled and this CPU can run, best first, then "reference" (the
/// plain scalar kernels). Any of these names may be passed as KMeansOptions::target or in the
/// FLASHKM_TARGET environment variable.
std::vector<std::string> available_targets();

/// The target a call with an empty `target` option would use now (honours FLASHKM_TARGET).
std::string default_target();

}  // namespace flashkm
