// Batched k-means: B independent problems of the same shape fitted in one call.
#pragma once

#include <cstddef>
#include <vector>

#include "flashkm/kmeans.hpp"
#include "flashkm/matrix_view.hpp"
#include "flashkm/options.hpp"
#include "flashkm/result.hpp"

namespace flashkm {

/// A read-only view of B dense row-major matrices of the same shape (rows x cols), stored one
/// after another in C order (a B x rows x cols array): member `b` starts at
/// `data + b * rows * cols` and its rows are `cols` elements apart. flashkm never writes
/// through it and never keeps it beyond the call.
template <class T>
struct BatchView {
  const T* data = nullptr;
  std::size_t batch = 0;
  std::size_t rows = 0;
  std::size_t cols = 0;

  MatrixView<T> member(std::size_t b) const { return {data + b * rows * cols, rows, cols}; }
};

/// Fits every member of X on its own: the result of member `b` is bitwise the result of
/// `fit(X.member(b), options)` with the same options and the same seed for every member
/// (on the same build and SIMD target), whatever the thread count.
///
/// - Explicit initialisation: set `options.init = InitMethod::kExplicit` and pass
///   `init_centroids`, a B x K x D batch (member b's K x D start); `options.init_centroids`
///   must then be left empty. `init_centroids` must be empty for the other init methods.
/// - `options.sample_weight`: empty, or B * N weights, member b's at [b * N, (b + 1) * N).
/// - `options.callback` is called after every iteration of every member, with the member in
///   `IterationStats::member`; calls are serialised (never two at once) but members' iterations
///   interleave. Returning false -- or throwing -- stops every member at its next iteration
///   (StopReason::kCallback); an exception is then rethrown by fit_batch.
/// - Threads: with T = options.n_threads (0 = all cores), B >= T members run in parallel, one
///   thread each; fewer members run one after another, each with T threads.
/// - Errors: shapes and options are checked up front (B, N, D >= 1, 1 <= K <= N, ...) and
///   throw unprefixed. An error of one member (NaN in its data or initial centroids, bad
///   weights) is rethrown as the same exception type with its message prefixed by
///   "member b: "; when several members fail, the lowest member's error is thrown.
template <class T>
std::vector<KMeansResult<T>> fit_batch(BatchView<T> X, const KMeansOptions& options,
                                       BatchView<T> init_centroids = {});

}  // namespace flashkm
