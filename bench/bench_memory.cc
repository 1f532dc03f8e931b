// Peak extra memory of a fit: resident-set high-water mark (VmHWM) before and after fitting an
// N x D float32 array, printed as JSON. Usage: bench_memory [N] [D] [K] [iterations] [auto|on|off]
// (the last: KMeansOptions::prune, so that the pruning bounds' share can be read off; auto by
// default)
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "flashkm/flashkm.hpp"

namespace {

long vm_hwm_kib() {
  std::ifstream f("/proc/self/status");
  std::string key;
  long value = -1;
  while (f >> key) {
    if (key == "VmHWM:") {
      f >> value;
      break;
    }
  }
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1000000;
  const std::size_t d = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 128;
  const std::size_t k = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 256;
  const int iters = argc > 4 ? std::atoi(argv[4]) : 5;
  const std::string prune = argc > 5 ? argv[5] : "auto";
  if (prune != "auto" && prune != "on" && prune != "off") {
    std::fprintf(stderr, "bench_memory: prune must be auto, on or off, not '%s'\n", prune.c_str());
    return 2;
  }
  std::vector<float> X(n * d);
  std::mt19937_64 rng(1);
  std::normal_distribution<float> g;
  for (float& v : X) v = g(rng);
  std::vector<double> C0(k * d);
  for (std::size_t c = 0; c < k; ++c) {
    for (std::size_t j = 0; j < d; ++j) C0[c * d + j] = X[(c * 7919 % n) * d + j];
  }
  const long base = vm_hwm_kib();
  flashkm::KMeansOptions o;
  o.n_clusters = k;
  o.init = flashkm::InitMethod::kExplicit;
  o.init_centroids = flashkm::MatrixView<double>(C0.data(), k, d);
  o.max_iter = iters;
  o.tol = 0;
  o.prune = prune == "on" ? flashkm::Prune::kOn : prune == "off" ? flashkm::Prune::kOff : flashkm::Prune::kAuto;
  const auto r = flashkm::fit(flashkm::MatrixView<float>(X.data(), n, d), o);
  const long peak = vm_hwm_kib();
  // Memory the result itself must hold: labels and centroids.
  const double result_mib = double(n * 4 + k * d * 4) / 1048576.0;
  std::printf("{\"n\": %zu, \"d\": %zu, \"k\": %zu, \"data_MiB\": %.1f, \"base_hwm_MiB\": %.1f, "
              "\"peak_hwm_MiB\": %.1f, \"extra_MiB\": %.1f, \"result_MiB\": %.1f, \"n_iter\": %d, "
              "\"prune\": \"%s\", \"last_distances\": %llu}\n",
              n, d, k, double(n * d * 4) / 1048576.0, base / 1024.0, peak / 1024.0, (peak - base) / 1024.0,
              result_mib, r.n_iter, prune.c_str(),
              static_cast<unsigned long long>(r.history.empty() ? 0 : r.history.back().distances));
  return 0;
}
