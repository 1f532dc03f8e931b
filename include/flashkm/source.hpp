// Row sources: data handed to flashkm in chunks, for data sets larger than memory.
#pragma once

#include <cstddef>

#include "flashkm/matrix_view.hpp"

namespace flashkm {

/// Rows delivered in consecutive chunks, one sequential pass at a time, plus random access to
/// single rows. fit() and predict() accept a RowSource as well as a MatrixView; they make one
/// pass per Lloyd iteration (and about one per k-means++ centre), and give bitwise the same result
/// as on the whole matrix in memory, because every float64 reduction runs over fixed blocks
/// of rows that never straddle two chunks (the `granule`).
template <class T>
class RowSource {
 public:
  virtual ~RowSource() = default;
  virtual std::size_t rows() const = 0;
  virtual std::size_t cols() const = 0;
  /// Starts a pass over rows 0..rows()-1. Every chunk of it but the last must hold a multiple
  /// of `granule` rows (a power of two the engine chooses from cols() and sizeof(T)).
  virtual void begin_pass(std::size_t granule) = 0;
  /// The next chunk of the pass, its first row in *first; an empty view once the pass is done.
  /// The view stays valid until the next call on this source.
  virtual MatrixView<T> next_chunk(std::size_t* first) = 0;
  /// Copies row i (cols() values) into out; may be called between passes.
  virtual void read_row(std::size_t i, T* out) = 0;
};

}  // namespace flashkm
