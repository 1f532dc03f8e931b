// Reading .npy data: C-order rows in one positional read, Fortran-order rows column by column,
// and 1-D vectors (sample weights).
#include <algorithm>
#include <type_traits>
#include <vector>

#include "io/convert.hpp"
#include "io/posix_file.hpp"
#include "io/readers.hpp"

namespace flashkm::io {
namespace detail {

namespace {

// The preamble and header of an open .npy file. npy_header_end bounds the header length (and
// checks it against the file size) before anything is allocated for it.
std::vector<unsigned char> read_header_bytes(int fd, const std::string& path,
                                             std::uint64_t file_size) {
  unsigned char preamble[12];
  const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(file_size, 12));
  pread_exact(fd, path, preamble, n, 0);
  const std::uint64_t end = npy_header_end(path, preamble, n, file_size);
  std::vector<unsigned char> header(static_cast<std::size_t>(end));
  pread_exact(fd, path, header.data(), header.size(), 0);
  return header;
}

}  // namespace

NpyHeader read_npy_header(int fd, const std::string& path, std::uint64_t file_size) {
  const std::vector<unsigned char> header = read_header_bytes(fd, path, file_size);
  return parse_npy_any(path, header.data(), header.size(), file_size);
}

DatasetInfo probe_npy(int fd, const std::string& path, std::uint64_t file_size) {
  const std::vector<unsigned char> header = read_header_bytes(fd, path, file_size);
  return parse_npy_header(path, header.data(), header.size(), file_size);
}

template <class T>
void read_elements(int fd, const DatasetInfo& info, std::uint64_t offset, std::size_t count,
                   T* dst, std::size_t stride, std::vector<unsigned char>& staging) {
  const std::size_t size = dtype_size(info.dtype);
  const std::size_t per_piece = kStagingBytes / size;
  for (std::size_t done = 0; done < count;) {
    const std::size_t k = std::min(per_piece, count - done);
    staging.resize(k * size);
    pread_exact(fd, info.path, staging.data(), k * size, offset + done * size);
    convert(staging.data(), k, info.dtype, info.big_endian, dst + done * stride, stride);
    done += k;
  }
}

template <class T>
void read_contiguous(int fd, const DatasetInfo& info, std::size_t r0, std::size_t r1, T* out) {
  const std::size_t size = dtype_size(info.dtype);
  const std::size_t count = (r1 - r0) * info.cols;
  const std::uint64_t offset = info.data_offset + std::uint64_t{r0} * info.row_bytes();
  const bool same_type = (std::is_same_v<T, float> && info.dtype == DType::kF32) ||
                         (std::is_same_v<T, double> && info.dtype == DType::kF64);
  if (same_type && !needs_swap(info.big_endian)) {
    // Already in the caller's representation: read straight into `out`, no staging copy.
    pread_exact(fd, info.path, out, count * size, offset);
    return;
  }
  std::vector<unsigned char> staging;
  read_elements(fd, info, offset, count, out, 1, staging);
}

template <class T>
void read_fortran(int fd, const DatasetInfo& info, std::size_t r0, std::size_t r1, T* out) {
  // Column j of a column-major (rows x cols) array is rows contiguous elements starting at
  // element j * rows, so rows [r0, r1) of it are one contiguous slice: one read per column
  // (per staging piece), scattered into the row-major output with stride cols.
  const std::size_t size = dtype_size(info.dtype);
  std::vector<unsigned char> staging;
  for (std::size_t j = 0; j < info.cols; ++j) {
    const std::uint64_t offset =
        info.data_offset + (std::uint64_t{j} * info.rows + r0) * size;
    read_elements(fd, info, offset, r1 - r0, out + j, info.cols, staging);
  }
}

template void read_elements<float>(int, const DatasetInfo&, std::uint64_t, std::size_t, float*,
                                   std::size_t, std::vector<unsigned char>&);
template void read_elements<double>(int, const DatasetInfo&, std::uint64_t, std::size_t,
                                    double*, std::size_t, std::vector<unsigned char>&);
template void read_contiguous<float>(int, const DatasetInfo&, std::size_t, std::size_t, float*);
template void read_contiguous<double>(int, const DatasetInfo&, std::size_t, std::size_t,
                                      double*);
template void read_fortran<float>(int, const DatasetInfo&, std::size_t, std::size_t, float*);
template void read_fortran<double>(int, const DatasetInfo&, std::size_t, std::size_t, double*);
template void read_elements<std::uint16_t>(int, const DatasetInfo&, std::uint64_t, std::size_t, std::uint16_t*,
                                           std::size_t, std::vector<unsigned char>&);
template void read_contiguous<std::uint16_t>(int, const DatasetInfo&, std::size_t, std::size_t, std::uint16_t*);
template void read_fortran<std::uint16_t>(int, const DatasetInfo&, std::size_t, std::size_t, std::uint16_t*);

}  // namespace detail

std::vector<double> read_npy_vector(const std::string& path, std::size_t expected_len) {
  std::uint64_t file_size = 0;
  detail::UniqueFd fd = detail::open_data_file(path, &file_size);
  const detail::NpyHeader h = detail::read_npy_header(fd.get(), path, file_size);
  if (h.ndim == 0) detail::throw_format(path, "0-D array (a single value); expected a 1-D array");
  if (h.ndim == 3) detail::throw_format(path, "3-D array; expected a 1-D array");
  if (h.ndim == 2 && h.shape[1] != 1) {
    detail::throw_format(path, "2-D array of shape (" + std::to_string(h.shape[0]) + ", " +
                                   std::to_string(h.shape[1]) +
                                   "); expected a 1-D array (or one column)");
  }
  if (h.shape[0] != expected_len) {
    detail::throw_format(path, "has " + std::to_string(h.shape[0]) + " values; expected " +
                                   std::to_string(expected_len));
  }
  DatasetInfo info;
  info.path = path;
  info.dtype = h.dtype;
  info.big_endian = h.big_endian;
  info.rows = expected_len;
  info.cols = 1;
  info.data_offset = h.data_offset;
  info.file_size = file_size;
  // With one column, C and Fortran order store the same bytes.
  std::vector<double> out(expected_len);
  if (expected_len > 0) detail::read_contiguous(fd.get(), info, 0, expected_len, out.data());
  return out;
}

}  // namespace flashkm::io
