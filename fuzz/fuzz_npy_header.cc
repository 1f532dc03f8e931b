// libFuzzer target: parse_npy_header on arbitrary bytes. The last 4 input bytes (little-endian)
// say how many data bytes follow the header, so the fuzzer can reach the accepting path too.
#include <cstddef>
#include <cstdint>

#include "io/dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  const std::size_t n = size - 4;
  std::uint64_t extra = 0;
  for (int i = 0; i < 4; ++i) extra |= std::uint64_t{data[n + i]} << (8 * i);
  try {
    flashkm::io::DatasetInfo info = flashkm::io::parse_npy_header("fuzz.npy", data, n, n + extra);
    // Accepted: the shape must describe exactly the data the file size leaves.
    const std::uint64_t end = info.data_offset + std::uint64_t{info.rows} * info.row_bytes();
    if (end != n + extra) __builtin_trap();
  } catch (const flashkm::Error&) {
    // Refusing bad input with a typed error is the expected outcome.
  }
  return 0;
}
