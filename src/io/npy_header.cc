// The .npy header: magic, version, header length and the Python dict literal that gives dtype,
// memory order and shape (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
#include <cstring>
#include <string_view>

#include "io/convert.hpp"
#include "io/posix_file.hpp"
#include "io/readers.hpp"

namespace flashkm::io {
namespace detail {
namespace {

// numpy itself refuses headers over 10000 bytes by default; 1 MiB leaves room for hand-made
// files while a lying 4 GiB header length cannot make the reader allocate 4 GiB.
constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t{1} << 20;
constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

std::string hex_byte(unsigned char c) {
  const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[c >> 4] + digits[c & 15];
}

std::string kind_name(char kind) {
  switch (kind) {
    case 'f': return "floating point";
    case 'c': return "complex";
    case 'i': return "signed integer";
    case 'u': return "unsigned integer";
    case 'b': return "boolean";
    case 'U': return "unicode string";
    case 'S':
    case 'a': return "byte string";
    case 'O': return "Python object";
    case 'V': return "raw/void";
    case 'M': return "datetime";
    case 'm': return "timedelta";
    default: return "unknown";
  }
}

const char* kSupported =
    "supported: float16, float32, float64 ('<f2', '<f4', '<f8', or with '>', '=' or '|' byte "
    "order) and uint8 ('|u1')";

// A recursive-descent reader for the one dict literal numpy writes. It accepts what Python's
// literal_eval would for this dict (keys in any order, any spacing, either quote, a trailing
// comma, Python 2's 3L longs) and nothing it does not need.
class DictParser {
 public:
  DictParser(const std::string& path, std::string_view text, std::uint64_t base)
      : path_(path), text_(text), base_(base) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw_format(path_, "bad .npy header at byte offset " + std::to_string(base_ + pos_) + ": " +
                            what + " (header: '" + excerpt(text_, 120) + "')");
  }

  void parse(NpyHeader* h) {
    bool have_descr = false, have_order = false, have_shape = false;
    skip_space();
    if (!eat('{')) fail("expected '{' to open the header dictionary");
    for (;;) {
      skip_space();
      if (eat('}')) break;
      if (at_end()) fail("unterminated header: the dictionary is not closed with '}'");
      if (peek() != '\'' && peek() != '"') fail("expected a quoted key or '}'");
      std::string key = parse_string();
      skip_space();
      if (!eat(':')) fail("expected ':' after key '" + excerpt(key) + "'");
      skip_space();
      if (key == "descr") {
        if (have_descr) fail("duplicate key 'descr'");
        have_descr = true;
        parse_descr(h);
      } else if (key == "fortran_order") {
        if (have_order) fail("duplicate key 'fortran_order'");
        have_order = true;
        h->fortran_order = parse_bool();
      } else if (key == "shape") {
        if (have_shape) fail("duplicate key 'shape'");
        have_shape = true;
        parse_shape(h);
      } else {
        fail("unexpected key '" + excerpt(key) +
             "'; a .npy header has exactly 'descr', 'fortran_order' and 'shape'");
      }
      skip_space();
      if (eat(',')) continue;
      if (eat('}')) break;
      if (at_end()) fail("unterminated header: the dictionary is not closed with '}'");
      fail("expected ',' or '}' after the value of '" + key + "'");
    }
    skip_space();
    if (!at_end()) fail("unexpected characters after the header dictionary");
    if (!have_descr) fail("the header has no 'descr' (dtype)");
    if (!have_order) fail("the header has no 'fortran_order'");
    if (!have_shape) fail("the header has no 'shape'");
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  bool eat(char c) {
    if (peek() != c || at_end()) return false;
    ++pos_;
    return true;
  }
  void skip_space() {
    while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                         text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  std::string parse_string() {
    char quote = text_[pos_++];
    std::string s;
    while (!at_end() && text_[pos_] != quote) {
      // Escapes are kept literally except for the quote and the backslash: no dtype string or
      // key needs more, and anything else is rejected by the caller anyway.
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      s += text_[pos_++];
    }
    if (at_end()) fail("unterminated string");
    ++pos_;
    return s;
  }

  bool parse_bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("'fortran_order' must be True or False");
  }

  std::uint64_t parse_dim() {
    if (peek() == '-') fail("negative dimension in 'shape'");
    if (peek() < '0' || peek() > '9') fail("expected a dimension (an integer) in 'shape'");
    std::uint64_t v = 0;
    while (peek() >= '0' && peek() <= '9' && !at_end()) {
      auto d = static_cast<std::uint64_t>(text_[pos_] - '0');
      if (v > (UINT64_MAX - d) / 10) fail("dimension in 'shape' does not fit in 64 bits");
      v = v * 10 + d;
      ++pos_;
    }
    if (peek() == 'L' || peek() == 'l') ++pos_;  // Python 2 long literal (old numpy files)
    return v;
  }

  void parse_shape(NpyHeader* h) {
    if (!eat('(')) fail("'shape' must be a tuple such as (rows, features)");
    h->ndim = 0;
    skip_space();
    if (eat(')')) return;  // () : a 0-D array
    for (;;) {
      std::uint64_t d = parse_dim();
      if (h->ndim == 3) fail("arrays with more than 3 dimensions are not supported");
      h->shape[h->ndim++] = d;
      skip_space();
      if (eat(')')) {
        if (h->ndim == 1) fail("'shape' (N) is not a tuple; a 1-D shape is written (N,)");
        return;
      }
      if (!eat(',')) fail("expected ',' or ')' in 'shape'");
      skip_space();
      if (eat(')')) return;
    }
  }

  void parse_descr(NpyHeader* h) {
    if (peek() == '[') {
      fail("structured dtypes (a list of fields in 'descr') are not supported; " +
           std::string(kSupported));
    }
    if (peek() != '\'' && peek() != '"') fail("'descr' must be a dtype string such as '<f4'");
    std::string d = parse_string();
    std::string_view s = d;
    char order = '=';
    if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '=' || s[0] == '|')) {
      order = s[0];
      s.remove_prefix(1);
    }
    auto unsupported = [&]() {
      std::string kind = s.empty() ? "unknown" : kind_name(s[0]);
      fail("unsupported dtype '" + excerpt(d) + "' (" + kind + "); " + kSupported);
    };
    if (s == "f2") {
      h->dtype = DType::kF16;
    } else if (s == "f4") {
      h->dtype = DType::kF32;
    } else if (s == "f8") {
      h->dtype = DType::kF64;
    } else if (s == "u1") {
      h->dtype = DType::kU8;
    } else {
      unsupported();
    }
    // numpy reads '|' on a multi-byte type as native order, like '='.
    h->big_endian = order == '>' || ((order == '=' || order == '|') &&
                                     std::endian::native == std::endian::big);
  }

  const std::string& path_;
  std::string_view text_;
  std::uint64_t base_;
  std::size_t pos_ = 0;
};

}  // namespace

std::uint64_t npy_header_end(const std::string& path, const unsigned char* bytes, std::size_t n,
                             std::uint64_t file_size) {
  if (n > 0 && std::memcmp(bytes, kMagic, n < 6 ? n : 6) != 0) {
    throw_format(path, "not a .npy file: bad magic at byte offset 0 (expected \\x93NUMPY, found '" +
                           excerpt(std::string_view(reinterpret_cast<const char*>(bytes),
                                                    n < 6 ? n : 6)) +
                           "')");
  }
  if (n < 8) {
    throw_format(path, "too short for a .npy header: " + std::to_string(n) + " bytes");
  }
  int major = bytes[6], minor = bytes[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    throw_format(path, "unsupported .npy format version " + std::to_string(major) + "." +
                           std::to_string(minor) + " at byte offset 6 (supported: 1.0, 2.0, 3.0)");
  }
  // Version 1.0 stores the header length in 2 bytes, 2.0 and 3.0 (3.0: UTF-8 text) in 4.
  std::size_t len_bytes = major == 1 ? 2 : 4;
  std::size_t preamble = 8 + len_bytes;
  if (n < preamble) {
    throw_format(path, "too short for a .npy header: " + std::to_string(n) + " bytes");
  }
  std::uint64_t header_len = 0;
  for (std::size_t i = 0; i < len_bytes; ++i) {
    header_len |= static_cast<std::uint64_t>(bytes[8 + i]) << (8 * i);
  }
  if (header_len > kMaxHeaderBytes) {
    throw_format(path, "implausible .npy header length " + std::to_string(header_len) +
                           " at byte offset 8 (more than 1 MiB)");
  }
  std::uint64_t end = preamble + header_len;
  if (end > file_size) {
    throw_format(path, "the .npy header length " + std::to_string(header_len) +
                           " (at byte offset 8) runs past the end of the file (" +
                           std::to_string(file_size) + " bytes)");
  }
  return end;
}

NpyHeader parse_npy_any(const std::string& path, const unsigned char* bytes, std::size_t n,
                        std::uint64_t file_size) {
  const std::uint64_t end = npy_header_end(path, bytes, n, file_size);
  if (end > n) {
    throw_format(path, "the .npy header ends at byte offset " + std::to_string(end) +
                           " but only " + std::to_string(n) + " bytes of it were given");
  }
  NpyHeader h;
  h.version = bytes[6];
  h.data_offset = end;
  const std::size_t start = h.version == 1 ? 10 : 12;
  for (std::size_t i = start; i < end; ++i) {
    unsigned char c = bytes[i];
    if (c >= 0x80 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t')) {
      throw_format(path, "bad .npy header: byte " + hex_byte(c) + " at byte offset " +
                             std::to_string(i) + " is not printable ASCII");
    }
  }
  std::string_view text(reinterpret_cast<const char*>(bytes + start), end - start);
  DictParser(path, text, start).parse(&h);

  std::uint64_t count = 1;
  for (int i = 0; i < h.ndim; ++i) {
    if (__builtin_mul_overflow(count, h.shape[i], &count)) count = UINT64_MAX;
  }
  std::uint64_t data_bytes = 0;
  // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on "(" + string.
  std::string shape_text = "(";
  if (h.ndim >= 1) shape_text += std::to_string(h.shape[0]);
  if (h.ndim == 1) shape_text += ",";
  if (h.ndim >= 2) shape_text += ", " + std::to_string(h.shape[1]);
  if (h.ndim == 3) shape_text += ", " + std::to_string(h.shape[2]);
  shape_text += ")";
  if (count == UINT64_MAX ||
      __builtin_mul_overflow(count, dtype_size(h.dtype), &data_bytes)) {
    throw_format(path, "the .npy shape " + shape_text + " of " + dtype_name(h.dtype) +
                           " needs more than 2^64 bytes");
  }
  const std::uint64_t have = file_size - end;
  if (have != data_bytes) {
    throw_format(path, std::string("the .npy header promises ") + std::to_string(data_bytes) +
                           " bytes of data (shape " + shape_text + " of " + dtype_name(h.dtype) +
                           ") after byte offset " + std::to_string(end) + ", but the file has " +
                           std::to_string(have) + (have < data_bytes ? " (file too short)"
                                                                     : " (file too long)"));
  }
  return h;
}

}  // namespace detail

DatasetInfo parse_npy_header(const std::string& path, const unsigned char* bytes, std::size_t n,
                             std::uint64_t file_size) {
  const detail::NpyHeader h = detail::parse_npy_any(path, bytes, n, file_size);
  if (h.ndim == 0) {
    detail::throw_format(path, "0-D array (a single value); expected a 2-D array (rows, features)");
  }
  if (h.ndim == 1) {
    detail::throw_format(path, "1-D array of " + std::to_string(h.shape[0]) +
                                   " values; expected a 2-D array (rows, features)");
  }
  if (h.ndim == 3 && h.fortran_order) {
    detail::throw_format(path, "a Fortran-order 3-D array is not supported; save it in C order");
  }
  // A 3-D array (B, N, D) is a batch of B problems of N rows: read as B*N rows of D.
  const std::uint64_t batch = h.ndim == 3 ? h.shape[0] : 1;
  const std::uint64_t rows = h.ndim == 3 ? h.shape[0] * h.shape[1] : h.shape[0];
  const std::uint64_t cols = h.shape[h.ndim - 1];
  if (batch == 0) detail::throw_format(path, "the array holds zero problems (first dimension 0)");
  if (rows == 0) detail::throw_format(path, "the array has zero rows");
  if (cols == 0) detail::throw_format(path, "the array has zero columns");
  DatasetInfo info;
  info.batch = static_cast<std::size_t>(batch);
  info.path = path;
  info.format = Format::kNpy;
  info.dtype = h.dtype;
  info.big_endian = h.big_endian;
  info.fortran_order = h.fortran_order;
  info.npy_version = h.version;
  info.rows = static_cast<std::size_t>(rows);
  info.cols = static_cast<std::size_t>(cols);
  info.data_offset = h.data_offset;
  info.file_size = file_size;
  return info;
}

}  // namespace flashkm::io
