// What the machine says about memory: the memory available now and this process's peak.
#pragma once

#include <cstddef>

namespace flashkm::cli {

/// Half of the memory available now (MemAvailable of /proc/meminfo, else sysconf's available
/// pages): the default --memory-limit of a single process.
std::size_t half_available_memory();

/// Peak resident set size of this process so far, in bytes.
std::size_t peak_rss();

}  // namespace flashkm::cli
