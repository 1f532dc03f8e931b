// Private header of the CPU room: software prefetch of a byte range, for the kernels whose
// access pattern the hardware prefetcher cannot guess or cannot get ahead of.
#pragma once

#include <cstddef>
#include <cstdint>

namespace flashkm::detail {

// Prefetches (for reading) every 64-byte cache line that [p, p + bytes) touches, whether or not
// p starts on a line. kLocality is __builtin_prefetch's hint: 3 = all cache levels (prefetcht0),
// 1 = prefetcht2.
template <int kLocality>
inline void prefetch_lines(const void* p, std::size_t bytes) {
  const auto first = reinterpret_cast<std::uintptr_t>(p);
  for (std::uintptr_t a = first & ~std::uintptr_t{63}; a < first + bytes; a += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(a), 0, kLocality);
  }
}

}  // namespace flashkm::detail
