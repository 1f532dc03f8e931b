// A RowSource that streams a data file in chunks: a reader thread fills one of two buffers
// while the engine computes on the other (double buffering), one sequential pass at a time.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <mutex>
#include <thread>
#include <vector>

#include "flashkm/source.hpp"
#include "io/dataset.hpp"

namespace flashkm::cli {

/// Reading statistics of a FileRowSource, for the progress summary and the benchmarks.
struct StreamStats {
  std::size_t passes = 0;
  std::size_t chunk_rows = 0;        // rows per chunk of the last pass
  std::uint64_t bytes_read = 0;      // converted bytes delivered to the engine
  double read_seconds = 0;           // time the reader thread spent reading
  double wait_seconds = 0;           // time the engine spent waiting for a chunk
};

template <class T>
class FileRowSource final : public RowSource<T> {
 public:
  /// Streams rows [first_row, first_row + row_count) of `path` (all rows by default; opened
  /// twice: one handle for the reader thread, one for random reads) with at most
  /// `buffer_bytes` of chunk buffers in all (two chunks of whole granules).
  FileRowSource(const std::string& path, std::optional<std::size_t> raw_dim, std::size_t buffer_bytes,
                std::size_t first_row = 0, std::size_t row_count = static_cast<std::size_t>(-1));
  ~FileRowSource() override;

  std::size_t rows() const override { return rows_; }
  std::size_t cols() const override { return stream_.cols(); }
  void begin_pass(std::size_t granule) override;
  MatrixView<T> next_chunk(std::size_t* first) override;
  void read_row(std::size_t i, T* out) override;

  const StreamStats& stats() const { return stats_; }

  /// Rows per chunk for a budget of `buffer_bytes` (two buffers) and a granule; 0 if the budget
  /// cannot hold two chunks of one granule.
  static std::size_t chunk_rows_for(std::size_t buffer_bytes, std::size_t cols, std::size_t granule);

 private:
  void stop_reader();
  void reader_loop(std::size_t chunk_rows);

  io::Dataset stream_;
  io::Dataset random_;
  std::size_t first_;  // the file row of row 0
  std::size_t rows_;
  std::size_t buffer_bytes_;
  std::vector<T> buf_[2];

  // Shared with the reader thread, under mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  bool filled_[2] = {false, false};
  std::size_t filled_first_[2] = {0, 0};
  std::size_t filled_rows_[2] = {0, 0};
  bool cancel_ = false;
  std::exception_ptr error_;
  double read_seconds_ = 0;

  std::thread reader_;
  std::size_t chunk_rows_ = 0;
  std::size_t next_chunk_ = 0;   // index of the chunk next_chunk() hands out
  bool holding_ = false;         // the engine holds chunk next_chunk_ - 1
  StreamStats stats_;
};

}  // namespace flashkm::cli
