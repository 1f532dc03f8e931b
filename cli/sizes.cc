#include "sizes.hpp"

#include <algorithm>
#include <cctype>
#include <exception>

#include "errors.hpp"

namespace flashkm::cli {

std::size_t parse_size(const std::string& text, const std::string& option) {
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    throw UsageError(option + " '" + text + "' is not a size (e.g. 512M, 4G, 1.5GiB)");
  }
  std::string unit = text.substr(pos);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::toupper(c); });
  double mult = 1;
  if (unit == "" || unit == "B") mult = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB") mult = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB") mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB") mult = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB") mult = 1024.0 * 1024 * 1024 * 1024;
  else throw UsageError(option + " '" + text + "': unknown unit '" + text.substr(pos) + "' (use K, M, G or T)");
  if (!(v > 0) || v * mult > 1e18) throw UsageError(option + " '" + text + "' must be a positive size");
  return static_cast<std::size_t>(v * mult);
}

}  // namespace flashkm::cli
