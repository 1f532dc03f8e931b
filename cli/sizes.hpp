// Sizes given on the command line: "512M", "2G", "1.5GiB", "100000" (bytes).
#pragma once

#include <cstddef>
#include <string>

namespace flashkm::cli {

/// Parses a size in bytes with an optional unit K, M, G or T (powers of 1024; "KB", "KiB" and
/// lower case read the same). Throws UsageError naming `option` and the text.
std::size_t parse_size(const std::string& text, const std::string& option = "--memory-limit");

}  // namespace flashkm::cli
