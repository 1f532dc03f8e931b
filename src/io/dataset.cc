// probe() and Dataset: choose the reader from the extension, validate up front, then read any
// rows on demand.
#include <algorithm>
#include <cctype>
#include <type_traits>
#include <unistd.h>

#include "io/convert.hpp"
#include "io/posix_file.hpp"
#include "io/readers.hpp"

namespace flashkm::io {
namespace {

constexpr const char* kKnownExtensions =
    ".npy, .fvecs, .bvecs, .raw/.bin/.f32 (need --dim), .csv/.txt";

// Opens and validates `path`; hands the open descriptor to *fd for binary formats (-1 for CSV)
// and the parsed values to *csv for CSV.
DatasetInfo open_and_probe(const std::string& path, std::optional<std::size_t> raw_dim, int* fd,
                           std::vector<double>* csv) {
  const Format format = format_from_path(path);
  if (format == Format::kRaw && !raw_dim) {
    throw InvalidArgument(path + ": a raw float32 file has no header; its dimension must be "
                                 "given (--dim)");
  }
  std::uint64_t size = 0;
  detail::UniqueFd opened = detail::open_data_file(path, &size);
  DatasetInfo info;
  switch (format) {
    case Format::kNpy: info = detail::probe_npy(opened.get(), path, size); break;
    case Format::kFvecs:
    case Format::kBvecs: info = detail::probe_vecs(opened.get(), path, size, format); break;
    case Format::kRaw: info = detail::probe_raw(path, size, *raw_dim); break;
    case Format::kCsv:
      *csv = detail::read_csv_file(opened.get(), path, size, &info);
      return info;  // held in memory: the descriptor closes here
  }
  *fd = opened.release();
  return info;
}

}  // namespace

const char* format_name(Format f) {
  switch (f) {
    case Format::kNpy: return "npy";
    case Format::kFvecs: return "fvecs";
    case Format::kBvecs: return "bvecs";
    case Format::kRaw: return "raw";
    case Format::kCsv: return "csv";
  }
  return "unknown";
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF16: return "float16";
    case DType::kF32: return "float32";
    case DType::kF64: return "float64";
    case DType::kU8: return "uint8";
  }
  return "unknown";
}

std::uint64_t DatasetInfo::row_bytes() const {
  switch (format) {
    case Format::kFvecs:
    case Format::kBvecs: return 4 + std::uint64_t{cols} * detail::dtype_size(dtype);
    case Format::kCsv: return std::uint64_t{cols} * sizeof(double);
    case Format::kNpy:
    case Format::kRaw: break;
  }
  return std::uint64_t{cols} * detail::dtype_size(dtype);
}

Format format_from_path(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::size_t dot = base.rfind('.');
  if (dot == std::string::npos || dot == 0) {
    throw FormatError(path + ": no file extension to tell the format; known: " +
                      kKnownExtensions);
  }
  std::string ext = base.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".npy") return Format::kNpy;
  if (ext == ".fvecs") return Format::kFvecs;
  if (ext == ".bvecs") return Format::kBvecs;
  if (ext == ".raw" || ext == ".bin" || ext == ".f32") return Format::kRaw;
  if (ext == ".csv" || ext == ".txt") return Format::kCsv;
  throw FormatError(path + ": unknown extension '" + detail::excerpt(base.substr(dot)) +
                    "'; known: " + kKnownExtensions);
}

DatasetInfo probe(const std::string& path, std::optional<std::size_t> raw_dim) {
  int fd = -1;
  std::vector<double> csv;
  DatasetInfo info = open_and_probe(path, raw_dim, &fd, &csv);
  detail::UniqueFd closer(fd);
  return info;
}

Dataset::Dataset(const std::string& path, std::optional<std::size_t> raw_dim) {
  info_ = open_and_probe(path, raw_dim, &fd_, &csv_);
}

Dataset::~Dataset() {
  if (fd_ >= 0) ::close(fd_);
}

template <class T>
void Dataset::read_rows(std::size_t r0, std::size_t r1, T* out) const {
  if (r0 > r1 || r1 > info_.rows) {
    throw InvalidArgument(info_.path + ": rows [" + std::to_string(r0) + ", " +
                          std::to_string(r1) + ") are out of range; the file has " +
                          std::to_string(info_.rows) + " rows");
  }
  if constexpr (std::is_same_v<T, std::uint16_t>) {
    if (info_.dtype != DType::kF16 || info_.format == Format::kCsv) {
      throw InvalidArgument(info_.path + ": raw 16-bit rows were asked of " + dtype_name(info_.dtype) +
                            " data; only float16 files have them");
    }
  }
  if (r0 == r1) return;
  if (out == nullptr) throw InvalidArgument(info_.path + ": read_rows given a null buffer");
  switch (info_.format) {
    case Format::kCsv:
      if constexpr (!std::is_same_v<T, std::uint16_t>) {
        std::transform(csv_.begin() + r0 * info_.cols, csv_.begin() + r1 * info_.cols, out,
                       [](double v) { return static_cast<T>(v); });
      }
      break;
    case Format::kNpy:
      if (info_.fortran_order) {
        detail::read_fortran(fd_, info_, r0, r1, out);
      } else {
        detail::read_contiguous(fd_, info_, r0, r1, out);
      }
      break;
    case Format::kRaw: detail::read_contiguous(fd_, info_, r0, r1, out); break;
    case Format::kFvecs:
    case Format::kBvecs: detail::read_vecs(fd_, info_, r0, r1, out); break;
  }
}

template void Dataset::read_rows<float>(std::size_t, std::size_t, float*) const;
template void Dataset::read_rows<double>(std::size_t, std::size_t, double*) const;
template void Dataset::read_rows<std::uint16_t>(std::size_t, std::size_t, std::uint16_t*) const;

}  // namespace flashkm::io
