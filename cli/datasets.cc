// The demo's data: generated blobs and Fashion-MNIST read from Debian's gzipped IDX files.
#include "datasets.hpp"

#include <zlib.h>

#include <random>

namespace flashkm::cli {

std::vector<float> make_blobs(std::size_t n, std::size_t d, std::size_t k, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> centres(k * d);
  for (float& v : centres) v = 4.0f * g(rng);
  std::vector<float> X(n * d);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t c = rng() % k;
    for (std::size_t j = 0; j < d; ++j) X[i * d + j] = centres[c * d + j] + g(rng);
  }
  return X;
}

bool load_fashion_mnist(std::vector<float>& X, std::size_t& n, std::size_t& d) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  n = 0;
  for (const char* name : {"train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz"}) {
    gzFile f = gzopen((dir + name).c_str(), "rb");
    if (!f) return false;
    unsigned char h[16];
    if (gzread(f, h, 16) != 16) {
      gzclose(f);
      return false;
    }
    auto be32 = [&](int o) {
      return std::size_t(h[o]) << 24 | std::size_t(h[o + 1]) << 16 | std::size_t(h[o + 2]) << 8 | h[o + 3];
    };
    const std::size_t rows = be32(4);
    d = be32(8) * be32(12);
    std::vector<unsigned char> raw(rows * d);
    const int got = gzread(f, raw.data(), static_cast<unsigned>(raw.size()));
    gzclose(f);
    if (got != static_cast<int>(raw.size())) return false;
    for (unsigned char v : raw) X.push_back(static_cast<float>(v) / 255.0f);
    n += rows;
  }
  return true;
}

}  // namespace flashkm::cli
