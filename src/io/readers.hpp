// Private header: the per-format halves of probe() and Dataset::read_rows(), each in the .cc
// file named for its format; dataset.cc dispatches to them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/dataset.hpp"

namespace flashkm::io::detail {

/// Conversion staging per read call. A few MiB amortises the system call and keeps the page
/// cache streaming, while a read of millions of rows with record headers or foreign byte order
/// never needs a second copy of the whole range.
constexpr std::size_t kStagingBytes = std::size_t{4} << 20;

/// Everything a .npy header says, before deciding whether the array suits the caller.
struct NpyHeader {
  int version = 0;
  DType dtype = DType::kF32;
  bool big_endian = false;
  bool fortran_order = false;
  int ndim = 0;
  std::uint64_t shape[3] = {0, 0, 0};  // only the first ndim are meaningful
  std::uint64_t data_offset = 0;
};

/// Bytes from the start of the file to the end of the header (the data offset), from the magic,
/// version and header length alone; `n` must be at least 12 or the whole file.
std::uint64_t npy_header_end(const std::string& path, const unsigned char* bytes, std::size_t n,
                             std::uint64_t file_size);
/// Parses and checks a whole header (any dimensionality up to 3) against the file size.
NpyHeader parse_npy_any(const std::string& path, const unsigned char* bytes, std::size_t n,
                        std::uint64_t file_size);
/// Reads the header of an open .npy file and parses it.
NpyHeader read_npy_header(int fd, const std::string& path, std::uint64_t file_size);

DatasetInfo probe_npy(int fd, const std::string& path, std::uint64_t file_size);
DatasetInfo probe_vecs(int fd, const std::string& path, std::uint64_t file_size, Format format);
DatasetInfo probe_raw(const std::string& path, std::uint64_t file_size, std::size_t raw_dim);
/// Reads and parses a whole CSV file; fills the shape in `info`.
std::vector<double> read_csv_file(int fd, const std::string& path, std::uint64_t file_size,
                                  DatasetInfo* info);

/// Reads `count` elements of info's dtype starting at byte `offset` into dst[0], dst[stride],
/// ..., through `staging` (grown to at most kStagingBytes).
template <class T>
void read_elements(int fd, const DatasetInfo& info, std::uint64_t offset, std::size_t count,
                   T* dst, std::size_t stride, std::vector<unsigned char>& staging);

/// Rows [r0, r1) of a file whose rows are stored back to back without headers (C-order .npy,
/// raw float32).
template <class T>
void read_contiguous(int fd, const DatasetInfo& info, std::size_t r0, std::size_t r1, T* out);
/// Rows [r0, r1) of a Fortran-order .npy: each column's slice is contiguous on disk.
template <class T>
void read_fortran(int fd, const DatasetInfo& info, std::size_t r0, std::size_t r1, T* out);
/// Rows [r0, r1) of an .fvecs/.bvecs file, checking each record's dimension.
template <class T>
void read_vecs(int fd, const DatasetInfo& info, std::size_t r0, std::size_t r1, T* out);

}  // namespace flashkm::io::detail
