// Double-buffered streaming of a data file for the engine (see file_source.hpp).
#include "file_source.hpp"

#include <algorithm>
#include <chrono>

namespace flashkm::cli {
namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

template <class T>
FileRowSource<T>::FileRowSource(const std::string& path, std::optional<std::size_t> raw_dim,
                                std::size_t buffer_bytes, std::size_t first_row, std::size_t row_count)
    : stream_(path, raw_dim),
      random_(path, raw_dim),
      first_(std::min(first_row, stream_.rows())),
      rows_(std::min(row_count, stream_.rows() - first_)),
      buffer_bytes_(buffer_bytes) {}

template <class T>
FileRowSource<T>::~FileRowSource() {
  stop_reader();
}

template <class T>
std::size_t FileRowSource<T>::chunk_rows_for(std::size_t buffer_bytes, std::size_t cols, std::size_t granule) {
  const std::size_t row_bytes = cols * sizeof(T);
  const std::size_t granules = buffer_bytes / 2 / (granule * row_bytes);
  return granules * granule;
}

template <class T>
void FileRowSource<T>::stop_reader() {
  if (!reader_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancel_ = true;
  }
  cv_.notify_all();
  reader_.join();
}

template <class T>
void FileRowSource<T>::begin_pass(std::size_t granule) {
  stop_reader();
  const std::size_t n = rows();
  std::size_t chunk = chunk_rows_for(buffer_bytes_, cols(), granule);
  if (chunk == 0) {
    throw InvalidArgument("the memory limit leaves " + std::to_string(buffer_bytes_ >> 20) +
                          " MiB for streaming buffers; two chunks of " + std::to_string(granule) +
                          " rows need " + std::to_string((2 * granule * cols() * sizeof(T)) >> 20) + " MiB");
  }
  // No point in buffers larger than the data.
  chunk = std::min(chunk, (n + granule - 1) / granule * granule);
  for (auto& b : buf_) b.resize(chunk * cols());
  chunk_rows_ = chunk;
  next_chunk_ = 0;
  holding_ = false;
  filled_[0] = filled_[1] = false;
  cancel_ = false;
  error_ = nullptr;
  ++stats_.passes;
  stats_.chunk_rows = chunk;
  reader_ = std::thread([this, chunk] { reader_loop(chunk); });
}

template <class T>
void FileRowSource<T>::reader_loop(std::size_t chunk_rows) {
  const std::size_t n = rows();
  const std::size_t nchunks = (n + chunk_rows - 1) / chunk_rows;
  for (std::size_t c = 0; c < nchunks; ++c) {
    const int b = static_cast<int>(c % 2);
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return cancel_ || !filled_[b]; });
      if (cancel_) return;
    }
    const std::size_t r0 = c * chunk_rows;
    const std::size_t r1 = std::min(n, r0 + chunk_rows);
    const auto t0 = Clock::now();
    try {
      stream_.read_rows<T>(first_ + r0, first_ + r1, buf_[b].data());
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
      cv_.notify_all();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      read_seconds_ += since(t0);
      filled_[b] = true;
      filled_first_[b] = r0;
      filled_rows_[b] = r1 - r0;
    }
    cv_.notify_all();
  }
}

template <class T>
MatrixView<T> FileRowSource<T>::next_chunk(std::size_t* first) {
  const std::size_t n = rows();
  const std::size_t nchunks = (n + chunk_rows_ - 1) / chunk_rows_;
  std::unique_lock<std::mutex> lock(mu_);
  if (holding_) {
    // The engine is done with the previous chunk: its buffer may be refilled.
    filled_[(next_chunk_ - 1) % 2] = false;
    holding_ = false;
    cv_.notify_all();
  }
  if (next_chunk_ == nchunks) {
    stats_.read_seconds = read_seconds_;
    return {};
  }
  const int b = static_cast<int>(next_chunk_ % 2);
  const auto t0 = Clock::now();
  cv_.wait(lock, [&] { return filled_[b] || error_ != nullptr; });
  stats_.wait_seconds += since(t0);
  if (!filled_[b]) std::rethrow_exception(error_);
  ++next_chunk_;
  holding_ = true;
  *first = filled_first_[b];
  stats_.bytes_read += filled_rows_[b] * cols() * sizeof(T);
  return MatrixView<T>(buf_[b].data(), filled_rows_[b], cols());
}

template <class T>
void FileRowSource<T>::read_row(std::size_t i, T* out) {
  random_.read_rows<T>(first_ + i, first_ + i + 1, out);
}

template class FileRowSource<float>;
template class FileRowSource<double>;

}  // namespace flashkm::cli
