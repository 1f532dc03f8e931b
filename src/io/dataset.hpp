// Private header: data files flashkm reads (.npy, .fvecs, .bvecs, raw float32, CSV) and the
// .npy files it writes. Readers validate the layout up front and then read any range of rows,
// converted to float or double, with positional reads (no shared file offset).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flashkm/errors.hpp"

namespace flashkm::io {

/// A file cannot be opened, read, written or renamed (the OS said no). The message names the
/// file and the OS error.
class FileError : public Error {
 public:
  using Error::Error;
};

/// The file's contents are not what its format or extension promises: bad magic, a garbage or
/// lying header, a truncated record, a non-numeric CSV field, an unsupported dtype. The
/// message names the file and the byte offset, row or column of the problem.
class FormatError : public InvalidData {
 public:
  using InvalidData::InvalidData;
};

enum class Format { kNpy, kFvecs, kBvecs, kRaw, kCsv };
/// Element types on disk: IEEE half, single, double, and unsigned bytes (.bvecs).
enum class DType { kF16, kF32, kF64, kU8 };

const char* format_name(Format f);  // "npy", "fvecs", "bvecs", "raw", "csv"
const char* dtype_name(DType t);    // "float16", "float32", "float64", "uint8"

/// What probe() learnt about a file: enough to read any rows of it.
struct DatasetInfo {
  std::string path;
  Format format = Format::kNpy;
  DType dtype = DType::kF32;
  bool big_endian = false;     // .npy '>' byte order
  bool fortran_order = false;  // .npy column-major layout
  int npy_version = 0;         // 1, 2 or 3 for .npy, 0 otherwise
  std::size_t rows = 0;        // all rows; a 3-D .npy (B, N, D) has B * N rows of D
  std::size_t cols = 0;
  std::size_t batch = 1;       // B of a 3-D .npy: rows / batch rows per problem
  std::uint64_t data_offset = 0;  // first byte of the data (.npy header length)
  std::uint64_t file_size = 0;
  /// Bytes of one stored row (including the 4-byte dimension of .fvecs/.bvecs records).
  std::uint64_t row_bytes() const;
};

/// The format an extension names (.npy, .fvecs, .bvecs, .raw/.bin/.f32, .csv/.txt), or
/// FormatError naming the file and listing the known extensions.
Format format_from_path(const std::string& path);

/// Opens `path`, checks its header and that its size matches the shape exactly (not the values:
/// NaN/Inf are found by the engine). `raw_dim` is required for raw files and ignored otherwise.
/// Rejects 1-D .npy arrays, zero rows, zero columns. CSV files are parsed in full here (they
/// are for small data) and cached in the returned reader, see Dataset.
DatasetInfo probe(const std::string& path, std::optional<std::size_t> raw_dim = std::nullopt);

/// An open data file. read_rows may be called from any one thread at a time per object
/// (positional reads; the object keeps no file offset); CSV data is held in memory.
class Dataset {
 public:
  explicit Dataset(const std::string& path, std::optional<std::size_t> raw_dim = std::nullopt);
  ~Dataset();
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  const DatasetInfo& info() const { return info_; }
  std::size_t rows() const { return info_.rows; }
  std::size_t cols() const { return info_.cols; }

  /// Rows [r0, r1) converted to T, row-major into out[(r1 - r0) * cols]. Converts byte order,
  /// float16, uint8; transposes Fortran-order .npy; strips .fvecs/.bvecs record headers and
  /// checks each record's dimension (FormatError naming the record if it changes). Throws
  /// FileError if the file got shorter since probe. T = std::uint16_t gives float16 data's raw
  /// bits (byte order fixed) and throws InvalidArgument for any other dtype.
  template <class T>
  void read_rows(std::size_t r0, std::size_t r1, T* out) const;

 private:
  DatasetInfo info_;
  int fd_ = -1;
  std::vector<double> csv_;  // CSV values, row-major
};

/// Parses a .npy header from the first bytes of a file (for probe and the fuzz target).
/// `file_size` checks the shape against the data that follows. Throws FormatError naming
/// `path`.
DatasetInfo parse_npy_header(const std::string& path, const unsigned char* bytes, std::size_t n,
                             std::uint64_t file_size);

/// Parses CSV text: one row per line, comma-separated decimal numbers, optional header line
/// of non-numeric names, blank trailing lines ignored. Throws FormatError naming path, line
/// and column of the first bad field or of a row with a different number of fields.
std::vector<double> parse_csv(const std::string& path, const char* text, std::size_t n,
                              std::size_t* rows, std::size_t* cols);

/// Reads a 1-D .npy of any float dtype (or a 2-D one with one column) as float64, e.g. sample
/// weights; FormatError if its length is not `expected_len` (naming both).
std::vector<double> read_npy_vector(const std::string& path, std::size_t expected_len);

/// Writes a C-order little-endian .npy (version 1.0) of `dtype` and `shape` (1-D to 3-D)
/// atomically: to a temporary file in the same directory, flushed to disk, then renamed over
/// `path`. On any error (or if `path`'s directory is not writable) nothing is left behind and
/// FileError names the file. `data` holds the elements in the dtype's native layout.
void write_npy(const std::string& path, DType dtype, const std::vector<std::size_t>& shape,
               const void* data);
/// The same for int32 labels (dtype '<i4').
void write_npy_int32(const std::string& path, const std::vector<std::size_t>& shape,
                     const std::int32_t* data);

/// Outputs that belong together (centroids, labels, report): each is written complete to a
/// temporary file next to its target as it is added; commit() then renames them all into
/// place. If any write fails (or the set is destroyed before commit), the temporaries are
/// removed and no target is touched, so a failure never leaves a new centroids file beside old
/// labels.
class OutputSet {
 public:
  OutputSet() = default;
  ~OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;
  void add_npy(const std::string& path, DType dtype, const std::vector<std::size_t>& shape,
               const void* data);
  void add_npy_int32(const std::string& path, const std::vector<std::size_t>& shape,
                     const std::int32_t* data);
  void add_text(const std::string& path, const std::string& text);
  void commit();

 private:
  std::vector<std::pair<std::string, std::string>> pending_;  // temporary, target
};

/// Writes text atomically (the same temporary-file-and-rename discipline), e.g. HTML reports.
void write_text_atomic(const std::string& path, const std::string& text);

}  // namespace flashkm::io
