// Writes test data for the command's end-to-end tests: Gaussian blobs as a .npy file.
// Usage: make_data OUT.npy ROWS COLS K SEED [float32|float64] [OFFSET]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "io/dataset.hpp"
#include "testlib.hpp"

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: make_data OUT.npy ROWS COLS K SEED [float32|float64] [OFFSET]\n");
    return 2;
  }
  const std::size_t n = std::strtoull(argv[2], nullptr, 10);
  const std::size_t d = std::strtoull(argv[3], nullptr, 10);
  const std::size_t k = std::strtoull(argv[4], nullptr, 10);
  const std::uint64_t seed = std::strtoull(argv[5], nullptr, 10);
  const std::string type = argc > 6 ? argv[6] : "float32";
  const double offset = argc > 7 ? std::strtod(argv[7], nullptr) : 0.0;
  try {
    if (type == "float64") {
      const auto X = flashkm::testing::blobs<double>(n, d, k, seed, 4.0, offset);
      flashkm::io::write_npy(argv[1], flashkm::io::DType::kF64, {n, d}, X.data());
    } else {
      const auto X = flashkm::testing::blobs<float>(n, d, k, seed, 4.0, offset);
      flashkm::io::write_npy(argv[1], flashkm::io::DType::kF32, {n, d}, X.data());
    }
  } catch (const flashkm::Error& e) {
    std::fprintf(stderr, "make_data: %s\n", e.what());
    return 1;
  }
  return 0;
}
