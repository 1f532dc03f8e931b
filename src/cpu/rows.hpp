// Private header of the CPU room: the data as the CPU engine walks it -- a matrix in memory or
// the chunks of a RowSource -- and the row granules that fix the order of its reductions.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <string>

#include "cpu/kernel_table.hpp"
#include "flashkm/errors.hpp"
#include "flashkm/matrix_view.hpp"
#include "flashkm/source.hpp"

namespace flashkm::detail {

// Every float64 reduction over rows runs over fixed blocks of rows whose sizes depend only on
// the row's size in bytes -- never on the thread count or on how the data arrives -- and adds
// the blocks' results in block order. The block sizes are powers of two, so the largest (the
// update's super-block) is a multiple of the others, and a RowSource delivering chunks of whole
// super-blocks (the granule) reproduces the in-memory result bit for bit.

// Rows per statistics block (mean, variance, k-means++ potentials): about 1 MiB of X, at most
// 4096 rows so that small-D data still yields many parallel blocks.
inline std::size_t stat_rows(std::size_t row_bytes) {
  return std::clamp<std::size_t>(std::bit_floor(std::max<std::size_t>(1, (std::size_t{1} << 20) / row_bytes)), 1, 4096);
}

// Rows per tile of the fused step: about 1 MiB of X, so a tile assigned by FlashAssign is still
// in L2 when its runs are reduced.
inline std::size_t fused_tile_rows(std::size_t row_bytes) {
  return std::max<std::size_t>(64, std::bit_floor(std::max<std::size_t>(1, (std::size_t{1} << 20) / row_bytes)));
}

// Rows per super-block of the Sort-Inverse Update: about 16 MiB of X. Labels are sorted and runs
// reduced within a super-block (which also keeps the sorted gather inside a TLB-friendly
// window); clusters' sums are carried from one super-block to the next. Larger super-blocks
// add fewer per-cluster segments (K per super-block); smaller ones need less memory when
// streaming (two chunks of at least one super-block each).
inline std::size_t super_rows(std::size_t row_bytes) {
  return std::max(fused_tile_rows(row_bytes),
                  std::bit_floor(std::max<std::size_t>(1, (std::size_t{16} << 20) / row_bytes)));
}

// One chunk of rows as the kernels see it: rows [first, first + x.rows) of the data.
template <class T>
struct Chunk {
  MatrixView<T> x;
  std::size_t first = 0;
  PointsRef<T> pts;
};

// The data an engine runs over: a matrix in memory (one chunk) or a RowSource (many).
template <class T>
class Rows {
 public:
  explicit Rows(MatrixView<T> X) : whole_(X), rows_(X.rows), cols_(X.cols) {}
  explicit Rows(RowSource<T>& source) : source_(&source), rows_(source.rows()), cols_(source.cols()) {}

  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }
  // Whether every row is in memory (one chunk, rows numbered from 0).
  bool in_memory() const { return source_ == nullptr; }

  // Calls fn(x, first) for each chunk of one pass, in row order.
  template <class Fn>
  void for_each_chunk(std::size_t granule, Fn&& fn) {
    if (!source_) {
      fn(whole_, std::size_t{0});
      return;
    }
    source_->begin_pass(granule);
    std::size_t next = 0;
    for (;;) {
      std::size_t first = 0;
      const MatrixView<T> x = source_->next_chunk(&first);
      if (x.rows == 0) break;
      if (first != next || x.cols != cols_ || x.stride < x.cols || x.rows > rows_ - next ||
          (next + x.rows < rows_ && x.rows % granule != 0)) {
        throw InvalidArgument("row source delivered rows [" + std::to_string(first) + ", " +
                              std::to_string(first + x.rows) + ") x " + std::to_string(x.cols) +
                              " where rows from " + std::to_string(next) + " in whole multiples of " +
                              std::to_string(granule) + " x " + std::to_string(cols_) + " were due");
      }
      fn(x, first);
      next += x.rows;
    }
    if (next != rows_) {
      throw InvalidArgument("row source ended its pass at row " + std::to_string(next) + " of " +
                            std::to_string(rows_));
    }
  }

  void read_row(std::size_t i, T* out) {
    if (source_) {
      source_->read_row(i, out);
    } else {
      std::copy_n(whole_.row(i), cols_, out);
    }
  }

 private:
  MatrixView<T> whole_{};
  RowSource<T>* source_ = nullptr;
  std::size_t rows_;
  std::size_t cols_;
};

}  // namespace flashkm::detail
