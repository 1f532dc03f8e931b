#include "memory.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <string>

namespace flashkm::cli {

std::size_t half_available_memory() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  std::size_t kb = 0;
  while (f >> key >> kb) {
    if (key == "MemAvailable:") return kb * 1024 / 2;
    f.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) / 2;
}

std::size_t peak_rss() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::size_t>(ru.ru_maxrss) * 1024;
}

}  // namespace flashkm::cli
