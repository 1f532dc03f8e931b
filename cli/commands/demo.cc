// `flashkm demo`: cluster built-in data with the default options, with progress (generated
// blobs, then Fashion-MNIST when Debian's dataset-fashion-mnist is installed).
#include <algorithm>
#include <cstdio>
#include <vector>

#include "commands.hpp"
#include "common.hpp"
#include "datasets.hpp"
#include "errors.hpp"
#include "flashkm/flashkm.hpp"
#include "progress.hpp"

namespace flashkm::cli {
namespace {

struct DemoArgs {
  int threads = 0;
  bool quiet = false;
};

void demo_run(const char* title, const std::vector<float>& X, std::size_t n, std::size_t d, std::size_t k,
              const DemoArgs& a) {
  std::printf("\n== %s: N = %zu, D = %zu, K = %zu (target %s)\n", title, n, d, k, default_target().c_str());
  std::fflush(stdout);
  Progress progress(a.quiet, 300, 1);
  KMeansOptions o;
  o.n_clusters = k;
  o.seed = 1;
  o.n_threads = a.threads;
  o.callback = [&](const IterationStats& s) { return progress.iteration(s); };
  o.seed_callback = [&](const SeedStats& s) { progress.seeding(s); };
  progress.phase("k-means++ initialisation, then Lloyd iterations:");
  const auto t0 = Clock::now();
  const auto r = fit(MatrixView<float>(X.data(), n, d), o);
  progress.done();
  const double secs = since(t0);
  double iter_secs = 0;
  for (const auto& h : r.history) iter_secs += h.seconds;
  const auto sizes = cluster_sizes(r.labels, k);
  const auto [mn, mx] = std::minmax_element(sizes.begin(), sizes.end());
  std::printf("  inertia %.6e after %d iterations (%s); %.2f s in all (%.2f s initialising), %.3f s per iteration;"
              " cluster sizes %llu..%llu\n",
              r.inertia, r.n_iter, to_string(r.stop_reason), secs, secs - iter_secs,
              iter_secs / static_cast<double>(r.history.size()), static_cast<unsigned long long>(*mn),
              static_cast<unsigned long long>(*mx));
}

int cmd_demo(const DemoArgs& a) {
  if (a.threads < 0) throw UsageError("--threads must be >= 0 (0 = all cores)");
  const std::size_t n = 1000000, d = 64, k = 256;
  demo_run("generated blobs", make_blobs(n, d, k, 7), n, d, k, a);
  if (interrupted()) return kExitInterrupted;
  std::vector<float> fm;
  std::size_t fn = 0, fd = 0;
  if (load_fashion_mnist(fm, fn, fd)) {
    demo_run("Fashion-MNIST", fm, fn, fd, 10, a);
  } else {
    std::printf("\n(Fashion-MNIST is not installed: apt-get install dataset-fashion-mnist)\n");
  }
  return interrupted() ? kExitInterrupted : 0;
}

}  // namespace

Command add_demo(CLI::App& app) {
  auto a = std::make_shared<DemoArgs>();
  CLI::App* cmd = app.add_subcommand(
      "demo", "Cluster built-in data: 1,000,000 x 64 generated blobs (K = 256), then Fashion-MNIST "
              "(70,000 x 784, K = 10) when Debian's dataset-fashion-mnist is installed");
  cmd->add_option("--threads", a->threads, "threads (0 = all cores)")->capture_default_str();
  cmd->add_flag("-q,--quiet", a->quiet, "no per-iteration progress");
  Command c;
  c.app = cmd;
  c.run = [a](const Ranks&) { return cmd_demo(*a); };
  return c;
}

}  // namespace flashkm::cli
