// CSV for small data: comma-separated decimal numbers, one row per line, an optional header
// line of names. Parsed whole into float64 (std::from_chars: exact, locale-independent).
#include <charconv>
#include <string_view>
#include <system_error>

#include "io/posix_file.hpp"
#include "io/readers.hpp"

namespace flashkm::io {
namespace detail {
namespace {

// CSV is held in memory as doubles; beyond this the user is better served by .npy, and a huge
// file named .csv by mistake fails at once instead of exhausting memory.
constexpr std::uint64_t kMaxCsvBytes = std::uint64_t{1} << 30;

bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && (is_space(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

enum class Parsed { kOk, kNotNumber, kOutOfRange };

Parsed parse_number(std::string_view field, double* v) {
  // from_chars takes no leading '+', which spreadsheets sometimes write.
  if (field.size() > 1 && field[0] == '+' && field[1] != '-' && field[1] != '+') {
    field.remove_prefix(1);
  }
  if (field.empty()) return Parsed::kNotNumber;
  const char* end = field.data() + field.size();
  auto [ptr, ec] = std::from_chars(field.data(), end, *v);
  if (ptr != end) return Parsed::kNotNumber;
  if (ec == std::errc::result_out_of_range) return Parsed::kOutOfRange;
  return ec == std::errc() ? Parsed::kOk : Parsed::kNotNumber;
}

}  // namespace

std::vector<double> read_csv_file(int fd, const std::string& path, std::uint64_t file_size,
                                  DatasetInfo* info) {
  if (file_size > kMaxCsvBytes) {
    throw_format(path, "a CSV file of " + std::to_string(file_size) +
                           " bytes is too large: CSV is read whole into memory and meant for "
                           "small data (at most 1 GiB); convert it to .npy");
  }
  std::string text(static_cast<std::size_t>(file_size), '\0');
  pread_exact(fd, path, text.data(), text.size(), 0);
  info->path = path;
  info->format = Format::kCsv;
  info->dtype = DType::kF64;
  info->file_size = file_size;
  return parse_csv(path, text.data(), text.size(), &info->rows, &info->cols);
}

}  // namespace detail

std::vector<double> parse_csv(const std::string& path, const char* text, std::size_t n,
                              std::size_t* rows, std::size_t* cols) {
  using detail::Parsed;
  std::string_view all(text, n);
  if (all.substr(0, 3) == "\xEF\xBB\xBF") all.remove_prefix(3);  // UTF-8 byte order mark
  std::vector<double> values;
  std::size_t ncols = 0;        // 0 until the first line fixes it
  std::size_t nrows = 0;
  std::size_t first_line = 0;   // the line that fixed ncols
  std::size_t blank_line = 0;   // first blank line seen; an error unless only blanks follow
  std::size_t line_no = 0;
  auto fail = [&](std::size_t line, const std::string& what) {
    detail::throw_format(path, "line " + std::to_string(line) + ": " + what);
  };
  while (!all.empty()) {
    ++line_no;
    const std::size_t nl = all.find('\n');
    std::string_view line = all.substr(0, nl);
    all.remove_prefix(nl == std::string_view::npos ? all.size() : nl + 1);
    if (detail::trim(line).empty()) {
      if (blank_line == 0) blank_line = line_no;
      continue;
    }
    if (blank_line != 0) fail(blank_line, "blank line (blank lines are allowed only at the end)");

    const bool first = ncols == 0;
    std::size_t field_no = 0;
    std::size_t numeric = 0;
    std::string_view bad_field;
    std::size_t bad_column = 0;
    Parsed bad_kind = Parsed::kOk;
    for (std::string_view rest = line;;) {
      const std::size_t comma = rest.find(',');
      std::string_view field = detail::trim(rest.substr(0, comma));
      ++field_no;
      if (!first && field_no > ncols) {
        fail(line_no, "more than " + std::to_string(ncols) + " fields; expected " +
                          std::to_string(ncols) + " (as on line " + std::to_string(first_line) +
                          ")");
      }
      double v = 0;
      const Parsed p = detail::parse_number(field, &v);
      if (p == Parsed::kOk) {
        values.push_back(v);
        ++numeric;
      } else if (bad_column == 0) {
        bad_field = field;
        bad_column = field_no;
        bad_kind = p;
        // A data line fails at its first bad field; only the first line may be a header.
        if (!first) break;
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    // The first line is a header when none of its fields is a number.
    const bool header = first && numeric == 0;
    if (bad_column != 0 && !header) {
      detail::throw_format(path, "line " + std::to_string(line_no) + ", column " +
                                     std::to_string(bad_column) + ": '" +
                                     detail::excerpt(bad_field) +
                                     (bad_kind == Parsed::kOutOfRange
                                          ? "' is out of the float64 range"
                                          : "' is not a number"));
    }
    if (first) {
      ncols = field_no;
      first_line = line_no;
      if (header) continue;
    } else if (field_no != ncols) {
      fail(line_no, std::to_string(field_no) + " fields; expected " + std::to_string(ncols) +
                        " (as on line " + std::to_string(first_line) + ")");
    }
    ++nrows;
  }
  if (nrows == 0) {
    detail::throw_format(path, ncols == 0 ? "no data: the file is empty or blank"
                                          : "no data rows after the header line");
  }
  *rows = nrows;
  *cols = ncols;
  return values;
}

}  // namespace flashkm::io
