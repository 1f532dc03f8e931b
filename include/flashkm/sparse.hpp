// Sparse input: rows in compressed sparse row (CSR) form, clustered against dense centroids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "flashkm/kmeans.hpp"
#include "flashkm/matrix_view.hpp"
#include "flashkm/options.hpp"
#include "flashkm/result.hpp"

namespace flashkm {

/// A read-only view of a rows x cols sparse matrix in CSR form in the caller's memory (SciPy's
/// csr_matrix: data, indices, indptr). Row i holds the values values[p] at columns
/// col_indices[p] for p in [row_offsets[i], row_offsets[i + 1]); every other entry is zero.
/// row_offsets has rows + 1 non-decreasing entries (row_offsets[0] need not be 0); column
/// indices lie in [0, cols), need not be sorted, and appear at most once per row. Stored zeros
/// are allowed. flashkm never writes through it and never keeps it beyond the call.
template <class T>
struct CsrView {
  const T* values = nullptr;
  const std::int32_t* col_indices = nullptr;
  const std::int64_t* row_offsets = nullptr;
  std::size_t rows = 0;
  std::size_t cols = 0;

  std::size_t nnz() const { return rows == 0 ? 0 : static_cast<std::size_t>(row_offsets[rows] - row_offsets[0]); }
};

/// Exact Lloyd k-means on sparse rows: the same semantics, options and result as the dense
/// fit() (every init, n_init, weights, metrics, empty-cluster relocation, callbacks), with the
/// rows never densified. FlashAssign runs over each row's non-zeros against the centroids
/// packed in panels (docs/KERNELS.md, "Sparse rows"); the update is a Sort-Inverse Update over
/// the sparse rows. Unlike the dense fit, X is not centred (centring would densify it), as in
/// scikit-learn; bounded assignment (options.prune) does not apply: every distance is computed.
/// Bitwise the same result for any n_threads. Throws InvalidArgument for a malformed view
/// (offsets decreasing or beyond the values, a column index out of range or repeated within
/// a row) and InvalidData for NaN or infinity, naming the row and column.
template <class T>
KMeansResult<T> fit(CsrView<T> X, const KMeansOptions& options);

/// Greedy k-means++ seeds on sparse rows (as kmeans_plusplus on dense rows: centers are the
/// chosen rows, densified).
template <class T>
SeedResult<T> kmeans_plusplus(CsrView<T> X, std::size_t n_clusters, const KMeansOptions& options = {},
                              std::size_t n_local_trials = 0);

/// Nearest centroid of every sparse row (ties: lowest index).
template <class T>
std::vector<std::int32_t> predict(CsrView<T> X, MatrixView<T> centroids, const PredictOptions& options = {});

/// Dissimilarity of every sparse row to every centroid, rows x K, as the dense transform().
template <class T>
std::vector<T> transform(CsrView<T> X, MatrixView<T> centroids, const PredictOptions& options = {});

/// Minus the (weighted) inertia of the sparse rows against the centroids, as the dense score().
template <class T>
double score(CsrView<T> X, MatrixView<T> centroids, const PredictOptions& options = {});

}  // namespace flashkm
