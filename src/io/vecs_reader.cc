// .fvecs / .bvecs (the TEXMEX ANN benchmark formats): records of a little-endian int32
// dimension d followed by d float32 (.fvecs) or d uint8 (.bvecs) values.
#include <algorithm>
#include <cstring>
#include <vector>

#include "io/convert.hpp"
#include "io/posix_file.hpp"
#include "io/readers.hpp"

namespace flashkm::io::detail {
namespace {

std::int32_t record_dim(const unsigned char* p) {
  return static_cast<std::int32_t>(load<std::uint32_t>(p, needs_swap(false)));
}

[[noreturn]] void dimension_changed(const DatasetInfo& info, std::size_t row, std::int32_t dim) {
  throw_format(info.path, "record " + std::to_string(row) + " (byte offset " +
                              std::to_string(std::uint64_t{row} * info.row_bytes()) +
                              ") has dimension " + std::to_string(dim) +
                              "; the first record has " + std::to_string(info.cols));
}

}  // namespace

DatasetInfo probe_vecs(int fd, const std::string& path, std::uint64_t file_size, Format format) {
  const DType dtype = format == Format::kFvecs ? DType::kF32 : DType::kU8;
  const char* ext = format == Format::kFvecs ? ".fvecs" : ".bvecs";
  if (file_size < 4) {
    throw_format(path, "truncated record at byte offset 0: the file has " +
                           std::to_string(file_size) +
                           " bytes but a record starts with a 4-byte dimension");
  }
  unsigned char head[4];
  pread_exact(fd, path, head, 4, 0);
  const std::int32_t d = record_dim(head);
  if (d <= 0) {
    throw_format(path, "record 0 (byte offset 0) has dimension " + std::to_string(d) +
                           "; expected a positive dimension (is this really a " + ext +
                           " file?)");
  }
  // d < 2^31 and items are at most 4 bytes, so a record size always fits in 64 bits.
  const std::uint64_t record = 4 + std::uint64_t(d) * dtype_size(dtype);
  if (record > file_size) {
    throw_format(path, "record 0 (byte offset 0) declares dimension " + std::to_string(d) +
                           ", a " + std::to_string(record) + "-byte record, but the file has " +
                           std::to_string(file_size) + " bytes (truncated record at byte offset "
                           "0, or not a " + ext + " file)");
  }
  if (file_size % record != 0) {
    throw_format(path, "truncated record at byte offset " +
                           std::to_string(file_size / record * record) + ": the file size " +
                           std::to_string(file_size) + " is not a multiple of the record size " +
                           std::to_string(record) + " (dimension " + std::to_string(d) +
                           " from record 0), or the records' dimensions differ");
  }
  DatasetInfo info;
  info.path = path;
  info.format = format;
  info.dtype = dtype;
  info.rows = static_cast<std::size_t>(file_size / record);
  info.cols = static_cast<std::size_t>(d);
  info.file_size = file_size;
  // One more 4-byte read catches most files whose dimension varies now rather than deep into a
  // run; read_rows still checks every record.
  if (info.rows > 1) {
    pread_exact(fd, path, head, 4, file_size - record);
    if (record_dim(head) != d) dimension_changed(info, info.rows - 1, record_dim(head));
  }
  return info;
}

template <class T>
void read_vecs(int fd, const DatasetInfo& info, std::size_t r0, std::size_t r1, T* out) {
  const std::uint64_t record = info.row_bytes();
  const std::size_t d = info.cols;
  const auto want = static_cast<std::int32_t>(d);
  std::vector<unsigned char> staging;
  if (record <= kStagingBytes) {
    // Whole records, as many as fit in the staging buffer per read.
    const std::size_t per_read = kStagingBytes / record;
    for (std::size_t r = r0; r < r1;) {
      const std::size_t k = std::min(per_read, r1 - r);
      staging.resize(k * record);
      pread_exact(fd, info.path, staging.data(), staging.size(), std::uint64_t{r} * record);
      for (std::size_t i = 0; i < k; ++i) {
        const unsigned char* rec = staging.data() + i * record;
        if (record_dim(rec) != want) dimension_changed(info, r + i, record_dim(rec));
        convert(rec + 4, d, info.dtype, false, out + (r - r0 + i) * d, 1);
      }
      r += k;
    }
    return;
  }
  // A record larger than the staging buffer: its dimension, then its values in pieces.
  for (std::size_t r = r0; r < r1; ++r) {
    unsigned char head[4];
    pread_exact(fd, info.path, head, 4, std::uint64_t{r} * record);
    if (record_dim(head) != want) dimension_changed(info, r, record_dim(head));
    read_elements(fd, info, std::uint64_t{r} * record + 4, d, out + (r - r0) * d, 1, staging);
  }
}

template void read_vecs<float>(int, const DatasetInfo&, std::size_t, std::size_t, float*);
template void read_vecs<double>(int, const DatasetInfo&, std::size_t, std::size_t, double*);
template void read_vecs<std::uint16_t>(int, const DatasetInfo&, std::size_t, std::size_t, std::uint16_t*);

}  // namespace flashkm::io::detail
