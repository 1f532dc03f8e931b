// Writes the HTML report of a real fit on random blobs, for the headless-browser check.
//
// Usage: report_sample OUT.html [K]. Prints "--points P --bars B" (the kept run's iterations and
// the size chart's bars) for check_report.py, since only the fit knows them.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "flashkm/flashkm.hpp"
#include "report.hpp"

namespace {

// n x d points around `blobs` Gaussian centres.
std::vector<float> random_blobs(std::size_t n, std::size_t d, std::size_t blobs, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> centres(blobs * d);
  for (double& v : centres) v = 6.0 * normal(rng);
  std::uniform_int_distribution<std::size_t> pick(0, blobs - 1);
  std::vector<float> X(n * d);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t c = pick(rng);
    for (std::size_t j = 0; j < d; ++j) X[i * d + j] = static_cast<float>(centres[c * d + j] + normal(rng));
  }
  return X;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: report_sample OUT.html [K]\n";
    return 2;
  }
  const std::size_t n = 5000, d = 8, k = argc == 3 ? std::strtoull(argv[2], nullptr, 10) : 12;
  const std::vector<float> X = random_blobs(n, d, 12, 7);

  flashkm::KMeansOptions options;
  options.n_clusters = k;
  // Random init takes more iterations than k-means++, so the inertia chart has a curve to draw.
  options.init = flashkm::InitMethod::kRandom;
  options.n_init = 2;
  options.seed = 3;
  const auto result = flashkm::fit(flashkm::MatrixView<float>(X.data(), n, d), options);

  flashkm::cli::ReportData data;
  // Deliberately hostile: a name that closes the script element, opens a comment, carries a
  // JavaScript line separator and a byte that is not UTF-8 must still give a working page.
  data.input = "blobs </script><script>document.body.dataset.error='injected'</script> <!-- \"q\" 'a' \u2028 \xff.npy";
  data.format = "generated float32";
  data.rows = n;
  data.cols = d;
  data.k = k;
  data.init = "random";
  data.n_init = options.n_init;
  data.best_init = result.best_init;
  data.n_iter = result.n_iter;
  data.converged = result.converged;
  data.stop_reason = flashkm::to_string(result.stop_reason);
  data.inertia = result.inertia;
  for (const auto& it : result.history) data.seconds += it.seconds;
  data.target = result.target;
  data.history = result.history;
  data.cluster_sizes.assign(k, 0);
  for (const std::int32_t label : result.labels) ++data.cluster_sizes[static_cast<std::size_t>(label)];

  std::ofstream out(argv[1], std::ios::binary);
  out << flashkm::cli::render_report_html(data);
  out.close();
  if (!out) {
    std::cerr << "report_sample: cannot write " << argv[1] << "\n";
    return 1;
  }
  const std::size_t group = (k + flashkm::cli::kMaxSizeBars - 1) / flashkm::cli::kMaxSizeBars;
  std::cout << "--points " << result.n_iter << " --bars " << (k + group - 1) / group << "\n";
  return 0;
}
