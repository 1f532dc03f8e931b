#include "common.hpp"

namespace flashkm::cli {

std::string describe(const io::DatasetInfo& info) {
  std::string s = std::string(io::format_name(info.format)) + " " + io::dtype_name(info.dtype);
  if (info.big_endian) s += " big-endian";
  if (info.fortran_order) s += " Fortran-order";
  return s;
}

std::vector<std::uint64_t> cluster_sizes(const std::vector<std::int32_t>& labels, std::size_t k) {
  std::vector<std::uint64_t> sizes(k, 0);
  for (std::int32_t l : labels) ++sizes[static_cast<std::size_t>(l)];
  return sizes;
}

}  // namespace flashkm::cli
