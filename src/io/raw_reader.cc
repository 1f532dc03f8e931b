// Raw little-endian float32 files (.raw, .bin, .f32): rows of `dim` values back to back, no
// header, so the dimension must come from the caller.
#include "io/posix_file.hpp"
#include "io/readers.hpp"

namespace flashkm::io::detail {

DatasetInfo probe_raw(const std::string& path, std::uint64_t file_size, std::size_t raw_dim) {
  if (raw_dim == 0) throw InvalidArgument(path + ": the dimension of a raw file must be positive");
  if (raw_dim > file_size / 4) {
    throw_format(path, "one row of " + std::to_string(raw_dim) + " float32 values needs " +
                           std::to_string(std::uint64_t{raw_dim} * 4) +
                           " bytes but the file has " + std::to_string(file_size));
  }
  const std::uint64_t row = std::uint64_t{raw_dim} * 4;
  if (file_size % row != 0) {
    throw_format(path, "the file size " + std::to_string(file_size) +
                           " is not a multiple of the row size " + std::to_string(row) + " (" +
                           std::to_string(raw_dim) + " float32 values): " +
                           std::to_string(file_size % row) +
                           " trailing bytes from byte offset " +
                           std::to_string(file_size / row * row));
  }
  DatasetInfo info;
  info.path = path;
  info.format = Format::kRaw;
  info.dtype = DType::kF32;
  info.rows = static_cast<std::size_t>(file_size / row);
  info.cols = raw_dim;
  info.file_size = file_size;
  return info;
}

}  // namespace flashkm::io::detail
