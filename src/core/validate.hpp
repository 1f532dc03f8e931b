// Private header: checks of user input that throw flashkm::InvalidArgument / InvalidData.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "flashkm/errors.hpp"
#include "flashkm/matrix_view.hpp"
#include "flashkm/options.hpp"

namespace flashkm::detail {

/// Shape checks of a view: non-null, rows >= 1, cols >= 1, stride >= cols, rows < 2^32.
template <class T>
void check_view(MatrixView<T> v, const std::string& what);

/// Every value finite; the first offender is named by row and column.
template <class T>
void check_finite(MatrixView<T> v, const std::string& what);

/// N weights, each finite and >= 0, not all zero (empty = unweighted, accepted).
void check_weights(std::span<const double> w, std::size_t n);

/// n_threads >= 0 (0 = all cores).
void check_threads(int n_threads);

/// 1 <= n_clusters <= n (the rows of X).
void check_n_clusters(std::size_t n_clusters, std::size_t n);

/// Option ranges of fit.
void check_options(const KMeansOptions& o, std::size_t n, std::size_t dim, bool index_in_float);

}  // namespace flashkm::detail
