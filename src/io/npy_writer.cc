// Writing .npy files (format version 1.0, C order, little endian), atomically.
#include <unistd.h>

#include <bit>
#include <functional>

#include "io/convert.hpp"
#include "io/posix_file.hpp"

namespace flashkm::io {
namespace {

// The data is written as it lies in memory under a '<' descr.
static_assert(std::endian::native == std::endian::little,
              "write_npy assumes a little-endian machine");

// What writes a .npy of `shape` to a descriptor (checked now, run later).
std::function<void(int)> npy_writer(const std::string& path, const char* descr, std::size_t item_size,
                                    const std::vector<std::size_t>& shape, const void* data) {
  if (shape.empty() || shape.size() > 3) {
    throw InvalidArgument(path + ": write_npy writes 1-D to 3-D arrays, not " +
                          std::to_string(shape.size()) + "-D");
  }
  std::size_t bytes = item_size;
  for (std::size_t d : shape) {
    if (__builtin_mul_overflow(bytes, d, &bytes)) {
      throw InvalidArgument(path + ": the array is too large to write");
    }
  }
  if (bytes > 0 && data == nullptr) throw InvalidArgument(path + ": write_npy given null data");
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) dims += ", ";
    dims += std::to_string(shape[i]);
  }
  if (shape.size() == 1) dims += ",";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  header += dims;
  header += "), }";
  // Like numpy, pad with spaces and end with '\n' so the data starts at a multiple of 64 bytes
  // (10-byte preamble + header), which lets readers map it aligned for any SIMD width.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string preamble("\x93NUMPY\x01\x00", 8);
  preamble += static_cast<char>(header.size() & 0xff);
  preamble += static_cast<char>(header.size() >> 8);
  return [path, head = preamble + header, data, bytes](int fd) {
    detail::write_all(fd, path, head.data(), head.size());
    detail::write_all(fd, path, data, bytes);
  };
}

const char* descr_of(DType dtype) {
  return dtype == DType::kF16   ? "<f2"
         : dtype == DType::kF32 ? "<f4"
         : dtype == DType::kF64 ? "<f8"
                                : "|u1";
}

}  // namespace

void write_npy(const std::string& path, DType dtype, const std::vector<std::size_t>& shape,
               const void* data) {
  detail::atomic_write(path, npy_writer(path, descr_of(dtype), detail::dtype_size(dtype), shape, data));
}

void write_npy_int32(const std::string& path, const std::vector<std::size_t>& shape,
                     const std::int32_t* data) {
  detail::atomic_write(path, npy_writer(path, "<i4", sizeof(std::int32_t), shape, data));
}

OutputSet::~OutputSet() {
  for (const auto& p : pending_) ::unlink(p.first.c_str());
}

void OutputSet::add_npy(const std::string& path, DType dtype, const std::vector<std::size_t>& shape,
                        const void* data) {
  pending_.emplace_back(detail::write_temporary(
                            path, npy_writer(path, descr_of(dtype), detail::dtype_size(dtype), shape, data)),
                        path);
}

void OutputSet::add_npy_int32(const std::string& path, const std::vector<std::size_t>& shape,
                              const std::int32_t* data) {
  pending_.emplace_back(
      detail::write_temporary(path, npy_writer(path, "<i4", sizeof(std::int32_t), shape, data)), path);
}

void OutputSet::add_text(const std::string& path, const std::string& text) {
  pending_.emplace_back(
      detail::write_temporary(path, [&](int fd) { detail::write_all(fd, path, text.data(), text.size()); }),
      path);
}

void OutputSet::commit() {
  // Every file is complete on disk before the first rename; renames do not fail for space.
  while (!pending_.empty()) {
    const auto p = pending_.front();
    pending_.erase(pending_.begin());
    detail::publish(p.first, p.second);
  }
}

}  // namespace flashkm::io
