// The data of the C++ benches that time flashkm on the issues' shapes (bench_seeding,
// bench_prune_iters): the peer harness's overlapping blobs and Fashion-MNIST, and a median.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace bench {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Overlapping Gaussian blobs as ../shared/bench's harness draws them: centres ~ N(0, sep^2 / 2d)
// per coordinate, unit noise.
std::vector<float> blobs(std::size_t n, std::size_t d, std::size_t k, double sep = 3.0) {
  std::mt19937_64 rng(0);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> c(k * d);
  const float s = static_cast<float>(sep / std::sqrt(2.0 * static_cast<double>(d)));
  for (auto& v : c) v = g(rng) * s;
  std::uniform_int_distribution<std::size_t> lab(0, k - 1);
  std::vector<float> x(n * d);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t l = lab(rng);
    for (std::size_t j = 0; j < d; ++j) x[i * d + j] = g(rng) + c[l * d + j];
  }
  return x;
}

std::vector<float> fashion_mnist(std::size_t& n, std::size_t& d) {
  std::vector<float> x;
  n = 0;
  d = 784;
  for (const char* name : {"train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz"}) {
    const std::string path = std::string("/usr/share/datasets/fashion-mnist/") + name;
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) {
      std::fprintf(stderr, "cannot open %s (Debian's dataset-fashion-mnist)\n", path.c_str());
      std::exit(1);
    }
    unsigned char head[16];
    gzread(f, head, 16);
    const std::size_t m = (std::size_t{head[4]} << 24) | (std::size_t{head[5]} << 16) | (std::size_t{head[6]} << 8) | head[7];
    std::vector<unsigned char> buf(m * d);
    gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
    gzclose(f);
    for (unsigned char b : buf) x.push_back(static_cast<float>(b) / 255.0f);
    n += m;
  }
  return x;
}

}  // namespace bench
