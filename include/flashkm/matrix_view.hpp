// Non-owning row-major matrix views: how callers hand their data to flashkm without a copy.
#pragma once

#include <cstddef>

namespace flashkm {

/// A read-only view of a row-major matrix that lives in the caller's memory.
///
/// Row `i` starts at `data + i * stride`; `stride` is counted in elements and must be >= `cols`
/// (a larger stride lets callers pass a column slice of a wider array). flashkm never writes
/// through a view and never keeps one beyond the call it was passed to.
template <class T>
struct MatrixView {
  const T* data = nullptr;
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t stride = 0;

  MatrixView() = default;
  /// Dense rows: stride = cols.
  MatrixView(const T* data_, std::size_t rows_, std::size_t cols_)
      : data(data_), rows(rows_), cols(cols_), stride(cols_) {}
  MatrixView(const T* data_, std::size_t rows_, std::size_t cols_, std::size_t stride_)
      : data(data_), rows(rows_), cols(cols_), stride(stride_) {}

  const T* row(std::size_t i) const { return data + i * stride; }
  bool empty() const { return rows == 0 || cols == 0; }
};

}  // namespace flashkm
