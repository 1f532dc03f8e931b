// libFuzzer target: arbitrary bytes as an .fvecs and as a .bvecs file, through probe, Dataset
// and read_rows of every row.
#include "fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  for (const char* name : {"in.fvecs", "in.bvecs"}) {
    const std::string path = flashkm::fuzz::scratch().write(name, data, size);
    try {
      flashkm::io::DatasetInfo info = flashkm::io::probe(path);
      flashkm::io::Dataset ds(path);
      if (ds.rows() != info.rows || ds.cols() != info.cols) __builtin_trap();
      flashkm::fuzz::read_all<float>(ds, 3);
      flashkm::fuzz::read_all<double>(ds, ds.rows());
    } catch (const flashkm::Error&) {
      // Refusing bad input with a typed error is the expected outcome.
    }
  }
  return 0;
}
