// libFuzzer target: parse_csv on arbitrary text.
#include <cstddef>
#include <cstdint>

#include "io/dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    std::size_t rows = 0, cols = 0;
    auto values = flashkm::io::parse_csv("fuzz.csv", reinterpret_cast<const char*>(data), size,
                                         &rows, &cols);
    if (rows == 0 || cols == 0 || values.size() != rows * cols) __builtin_trap();
  } catch (const flashkm::Error&) {
    // Refusing bad input with a typed error is the expected outcome.
  }
  return 0;
}
