// libFuzzer target: arbitrary bytes as a .npy file, through probe, Dataset, read_rows of every
// row (C and Fortran order, every dtype and byte order) and read_npy_vector.
#include "fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = flashkm::fuzz::scratch().write("in.npy", data, size);
  try {
    flashkm::io::Dataset ds(path);
    flashkm::fuzz::read_all<float>(ds, 2);
    flashkm::fuzz::read_all<double>(ds, 5);
  } catch (const flashkm::Error&) {
    // Refusing bad input with a typed error is the expected outcome.
  }
  try {
    // The length a 1-D file of this size could have if its header were 128 bytes of float32;
    // wrong lengths exercise the length check, right ones the read.
    flashkm::io::read_npy_vector(path, size > 128 ? (size - 128) / 4 : 0);
  } catch (const flashkm::Error&) {
    // As above.
  }
  return 0;
}
