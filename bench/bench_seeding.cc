// Greedy k-means++ with bounds (Engine::seed_*) against the plain implementation that computes
// every distance, side by side in one run, with one unpruned Lloyd iteration on the same data
// and engine as the yardstick (issue: seeding at the cost of a few Lloyd iterations). The
// centres of the two seedings are compared bit for bit.
//
// Usage: bench_seeding [threads [repeats [shape ...]]]
//   shape: blobs:NxDxK (the peer harness's overlapping blobs, sep 3), fmnist:K (Fashion-MNIST,
//   70,000 x 784, scaled to [0, 1]) or parallel:NxDxK (k-means|| on blobs, through fit());
//   defaults: the shapes, 2 threads, 3 repeats.
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_data.hpp"
#include "core/init.hpp"
#include "flashkm/flashkm.hpp"
#include "cpu/cpu_engine.hpp"

namespace {

using bench::blobs;
using bench::fashion_mnist;
using bench::median;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// k-means|| through fit() (init_seconds) against the fit's first, unpruned Lloyd iteration.
void run_parallel(std::size_t n, std::size_t d, std::size_t k, int threads, int repeats) {
  const std::vector<float> X = blobs(n, d, k);
  std::vector<double> init, iter, rounds;
  for (int r = 0; r < repeats; ++r) {
    flashkm::KMeansOptions o;
    o.n_clusters = k;
    o.init = flashkm::InitMethod::kMeansParallel;
    o.max_iter = 1;
    o.n_threads = threads;
    o.prune = flashkm::Prune::kOff;
    double round_s = 0;
    o.seed_callback = [&](const flashkm::SeedStats& s) {
      if (std::string(s.phase) == "k-means||" && s.done == s.total) round_s = s.seconds;
    };
    const auto res = flashkm::fit(flashkm::MatrixView<float>(X.data(), n, d), o);
    init.push_back(res.init_seconds);
    iter.push_back(res.history.at(0).seconds);
    rounds.push_back(round_s);
  }
  const double s = median(init), it = median(iter), rd = median(rounds);
  std::printf("k-means|| blobs:%zux%zux%zu  %.2f s = %.2f Lloyd iterations (%.3f s); its 5 rounds %.2f s, "
              "k-means++ on the drawn rows %.2f s\n",
              n, d, k, s, s / it, it, rd, s - rd);
  std::fflush(stdout);
}

void run(const std::string& shape, int threads, int repeats) {
  std::size_t n = 0, d = 0, k = 0;
  std::vector<float> X;
  if (std::sscanf(shape.c_str(), "parallel:%zux%zux%zu", &n, &d, &k) == 3) {
    run_parallel(n, d, k, threads, repeats);
    return;
  }
  if (std::sscanf(shape.c_str(), "blobs:%zux%zux%zu", &n, &d, &k) == 3) {
    X = blobs(n, d, k);
  } else if (std::sscanf(shape.c_str(), "fmnist:%zu", &k) == 1) {
    X = fashion_mnist(n, d);
  } else {
    std::fprintf(stderr, "bad shape '%s'\n", shape.c_str());
    std::exit(2);
  }
  auto engine = flashkm::detail::make_cpu_engine<float>(flashkm::MatrixView<float>(X.data(), n, d), {}, threads, "");
  std::vector<double> t_plain, t_bounded, t_iter;
  std::vector<double> plain, bounded;
  std::uint64_t distances = 0;
  struct Count final : flashkm::detail::SeedProgress {
    std::uint64_t last = 0;
    void step(const char*, std::size_t, std::size_t, std::uint64_t dist) override { last = dist; }
  } count;
  // BENCH_SEEDING_BOUNDED_ONLY=1: the bounded seeding alone (to profile it).
  const char* only = std::getenv("BENCH_SEEDING_BOUNDED_ONLY");
  const bool bounded_only = only && std::string(only) == "1";
  for (int r = 0; r < repeats; ++r) {
    std::mt19937_64 a(1), b(1);
    auto t = Clock::now();
    if (!bounded_only) plain = flashkm::detail::init_kmeanspp_plain(*engine, k, a);
    t_plain.push_back(seconds_since(t));
    t = Clock::now();
    bounded = flashkm::detail::init_kmeanspp(*engine, k, b, {&count});
    t_bounded.push_back(seconds_since(t));
    distances = count.last;
  }
  const bool same = plain.size() == bounded.size() && std::memcmp(plain.data(), bounded.data(), plain.size() * 8) == 0;
  // One unpruned Lloyd iteration (assignment and update) from the seeds.
  std::vector<double> sums(k * d), w(k);
  std::size_t changed = 0;
  engine->begin_run(flashkm::Prune::kOff, k);
  for (int r = 0; r < repeats; ++r) {
    const auto t = Clock::now();
    engine->assign_update(bounded.data(), k, sums.data(), w.data(), &changed);
    t_iter.push_back(seconds_since(t));
  }
  const double trials = 2 + std::floor(std::log(static_cast<double>(k)));
  const double full = static_cast<double>(n) * (static_cast<double>(k) + static_cast<double>(k - 1) * trials);
  const double p = median(t_plain), q = median(t_bounded), it = median(t_iter);
  std::printf("%-22s plain %8.3f s  bounded %7.3f s  speed-up %6.2fx  = %5.2f Lloyd iterations (%.3f s)  "
              "distances %.4f of plain  centres %s\n",
              shape.c_str(), p, q, p / q, q / it, it, static_cast<double>(distances) / full,
              same ? "bitwise equal" : "DIFFER");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  std::vector<std::string> shapes;
  for (int i = 3; i < argc; ++i) shapes.emplace_back(argv[i]);
  if (shapes.empty()) {
    shapes = {"blobs:1000000x64x256", "blobs:100000x128x1024", "fmnist:256", "parallel:1000000x32x8192"};
  }
  std::printf("k-means++ (greedy, 2 + ln K trials), %d threads, median of %d; target %s\n", threads, repeats,
              flashkm::detail::cpu_default_target().c_str());
  for (const auto& s : shapes) run(s, threads, repeats);
  return 0;
}
