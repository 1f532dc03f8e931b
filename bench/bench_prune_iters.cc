// Pruned against unpruned Lloyd iterations in C++, side by side in one run (issue: exact pruning):
// the same k-means++ centres, then fit() to convergence at tol = 1e-4 with prune off and on,
// alternating, `repeats` times. Prints medians of the iterations' own seconds (seeding
// excluded), the iteration count, the fraction of the N x K distances computed over the whole
// run and after iteration 5, and whether the two fits are bitwise equal (labels, centroids,
// inertia, n_iter, history). The Python bench (bench_prune.py) adds the peers.
//
// Usage: bench_prune_iters [threads [repeats [shape ...]]]
//   shape: blobs:NxDxK (the peer harness's overlapping blobs, sep 3) or fmnist:K;
//   defaults: the shapes, 2 threads, 3 repeats. PRUNE_PROFILE=1 prints every pruned
//   iteration (and the last unpruned fit's time for it); PRUNE_ONLY_ON=1 runs the pruned fits
//   alone (for a profiler; no comparison). The pruned fits use prune = auto, the default
//   (PRUNE_MODE=on: prune = on, bounds from the first iteration).
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_data.hpp"
#include "flashkm/flashkm.hpp"

namespace {

using bench::blobs;
using bench::fashion_mnist;
using bench::median;

bool same_fit(const flashkm::KMeansResult<float>& a, const flashkm::KMeansResult<float>& b) {
  if (a.n_iter != b.n_iter || a.labels != b.labels || a.history.size() != b.history.size()) return false;
  if (std::memcmp(a.centroids.data(), b.centroids.data(), a.centroids.size() * sizeof(float)) != 0) return false;
  if (std::memcmp(&a.inertia, &b.inertia, sizeof(double)) != 0) return false;
  for (std::size_t i = 0; i < a.history.size(); ++i) {
    const auto &x = a.history[i], &y = b.history[i];
    if (std::memcmp(&x.inertia, &y.inertia, 8) != 0 || std::memcmp(&x.center_shift, &y.center_shift, 8) != 0 ||
        x.labels_changed != y.labels_changed)
      return false;
  }
  return true;
}

void run(const std::string& shape, int threads, int repeats) {
  std::size_t n = 0, d = 0, k = 0;
  std::vector<float> X;
  if (std::sscanf(shape.c_str(), "blobs:%zux%zux%zu", &n, &d, &k) == 3) {
    X = blobs(n, d, k);
  } else if (std::sscanf(shape.c_str(), "fmnist:%zu", &k) == 1) {
    X = fashion_mnist(n, d);
  } else {
    std::fprintf(stderr, "bad shape '%s'\n", shape.c_str());
    std::exit(2);
  }
  const flashkm::MatrixView<float> view(X.data(), n, d);
  flashkm::KMeansOptions so;
  so.n_threads = threads;
  const auto seeds = flashkm::kmeans_plusplus(view, k, so);
  std::vector<double> init(seeds.centers.begin(), seeds.centers.end());
  std::vector<double> t_off, t_on;
  flashkm::KMeansResult<float> off, on;
  const char* mode = std::getenv("PRUNE_MODE");
  const bool mode_on = mode != nullptr && std::string(mode) == "on";
  const flashkm::Prune pruned = mode_on ? flashkm::Prune::kOn : flashkm::Prune::kAuto;
  for (int r = 0; r < repeats; ++r) {
    for (const auto p : {flashkm::Prune::kOff, pruned}) {
      if (p == flashkm::Prune::kOff && std::getenv("PRUNE_ONLY_ON")) continue;  // for profiling
      if (p != flashkm::Prune::kOff && std::getenv("PRUNE_ONLY_OFF")) continue;
      flashkm::KMeansOptions o;
      o.n_clusters = k;
      o.init = flashkm::InitMethod::kExplicit;
      o.init_centroids = flashkm::MatrixView<double>(init.data(), k, d);
      o.n_init = 1;
      o.n_threads = threads;
      o.prune = p;
      auto res = flashkm::fit(view, o);
      double s = 0;
      for (const auto& h : res.history) s += h.seconds;
      (p == flashkm::Prune::kOff ? t_off : t_on).push_back(s);
      (p == flashkm::Prune::kOff ? off : on) = std::move(res);
    }
  }
  const double full = static_cast<double>(n) * static_cast<double>(k);
  double all = 0, late = 0;
  std::size_t nlate = 0;
  for (const auto& h : on.history) {
    all += static_cast<double>(h.distances);
    if (h.iteration > 5) {
      late += static_cast<double>(h.distances);
      ++nlate;
    }
  }
  if (t_off.empty()) t_off.push_back(0);
  if (t_on.empty()) {
    t_on.push_back(0);
    on = off;
  }
  const double a = median(t_off), b = median(t_on);
  const char* verdict = std::getenv("PRUNE_ONLY_ON") || std::getenv("PRUNE_ONLY_OFF") ? "not compared" : same_fit(off, on) ? "bitwise equal" : "DIFFER";
  std::printf("%-22s iterations %3d  off %8.4f s  %-4s %8.4f s  speed-up %5.2fx  distances %.3f (after it. 5: %.3f)  %s\n",
              shape.c_str(), on.n_iter, a, mode_on ? "on" : "auto", b, a / b, all / (full * static_cast<double>(on.history.size())),
              nlate ? late / (full * static_cast<double>(nlate)) : 0.0, verdict);
  if (std::getenv("PRUNE_PROFILE")) {
    for (std::size_t i = 0; i < on.history.size(); ++i) {
      const auto& h = on.history[i];
      std::printf("  it %3d  %.4f s  distances %.4f  changed %zu", h.iteration, h.seconds,
                  static_cast<double>(h.distances) / full, h.labels_changed);
      if (i < off.history.size()) std::printf("  (unpruned %.4f s)", off.history[i].seconds);
      std::printf("\n");
    }
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  std::vector<std::string> shapes;
  for (int i = 3; i < argc; ++i) shapes.emplace_back(argv[i]);
  if (shapes.empty()) shapes = {"blobs:1000000x64x256", "blobs:100000x128x1024", "fmnist:256", "fmnist:10"};
  for (const auto& s : shapes) run(s, threads, repeats);
}
