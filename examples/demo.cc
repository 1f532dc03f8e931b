// flashkm_demo: clusters a generated data set (1,000,000 x 64, K = 256) and, when Debian's
// dataset-fashion-mnist is installed, Fashion-MNIST (70,000 x 784, K = 10), printing progress.
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "flashkm/flashkm.hpp"

namespace {

// Gaussian blobs: k centres ~ N(0, 4^2 I), unit noise.
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

// The IDX image files of Fashion-MNIST (train then t10k), scaled to [0, 1].
bool load_fashion_mnist(std::vector<float>& X, std::size_t& n, std::size_t& d) {
  const char* dir = "/usr/share/datasets/fashion-mnist/";
  n = 0;
  for (const char* name : {"train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz"}) {
    gzFile f = gzopen((std::string(dir) + name).c_str(), "rb");
    if (!f) return false;
    unsigned char h[16];
    if (gzread(f, h, 16) != 16) {
      gzclose(f);
      return false;
    }
    auto be32 = [&](int o) { return std::size_t(h[o]) << 24 | std::size_t(h[o + 1]) << 16 | std::size_t(h[o + 2]) << 8 | h[o + 3]; };
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

void cluster(const char* title, const std::vector<float>& X, std::size_t n, std::size_t d, std::size_t k) {
  std::printf("\n== %s: N = %zu, D = %zu, K = %zu (target %s)\n", title, n, d, k,
              flashkm::default_target().c_str());
  flashkm::KMeansOptions o;
  o.n_clusters = k;
  o.seed = 1;
  o.callback = [](const flashkm::IterationStats& s) {
    std::printf("  iter %3d  inertia %.6e  shift %.3e  changed %8zu  relocated %zu  %.3f s\n", s.iteration,
                s.inertia, s.center_shift, s.labels_changed, s.empty_relocated, s.seconds);
    std::fflush(stdout);
    return true;
  };
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = flashkm::fit(flashkm::MatrixView<float>(X.data(), n, d), o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double iter_secs = 0;
  for (const auto& h : r.history) iter_secs += h.seconds;
  const char* why = r.stop_reason == flashkm::StopReason::kTolerance ? "tolerance"
                    : r.stop_reason == flashkm::StopReason::kStrict  ? "labels unchanged"
                                                                     : "max_iter";
  std::printf("  final inertia %.6e after %d iterations (%s); %.2f s total, %.3f s per iteration\n",
              r.inertia, r.n_iter, why, secs, iter_secs / r.n_iter);
}

}  // namespace

int main() {
  try {
    const std::size_t n = 1000000, d = 64, k = 256;
    cluster("generated blobs", make_blobs(n, d, k, 7), n, d, k);
    std::vector<float> fm;
    std::size_t fn = 0, fd = 0;
    if (load_fashion_mnist(fm, fn, fd)) {
      cluster("Fashion-MNIST", fm, fn, fd, 10);
    } else {
      std::printf("\n(Fashion-MNIST not installed: apt-get install dataset-fashion-mnist)\n");
    }
  } catch (const flashkm::Error& e) {
    std::fprintf(stderr, "flashkm_demo: %s\n", e.what());
    return 1;
  }
  return 0;
}
