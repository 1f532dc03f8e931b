// Initialisation: greedy k-means++ (bounded in the engine, and the plain reference), and random points.
#include "core/init.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "core/seeding.hpp"
#include "flashkm/errors.hpp"

namespace flashkm::detail {
namespace {

// The first centre: a point drawn with probability proportional to its weight.
std::size_t first_centre(const double* w, std::size_t n, std::mt19937_64& rng) {
  std::vector<float> ones(n, 1.0f);
  double total_w = 0;
  for (std::size_t i = 0; i < n; ++i) total_w += w ? w[i] : 1.0;
  return search_cumulative(ones.data(), w, n, {uniform01(rng) * total_w})[0];
}

std::size_t local_trials(std::size_t k) { return 2 + static_cast<std::size_t>(std::log(static_cast<double>(k))); }

std::size_t lowest(const std::vector<double>& pot) {
  return static_cast<std::size_t>(std::min_element(pot.begin(), pot.end()) - pot.begin());
}

}  // namespace

template <class T>
std::vector<double> init_kmeanspp(Engine<T>& engine, std::size_t k, std::mt19937_64& rng, const KppOptions& options) {
  const std::size_t n = engine.rows();
  const std::size_t dim = engine.cols();
  const std::size_t trials = options.trials ? options.trials : local_trials(k);
  SeedProgress* progress = options.progress;
  std::vector<double> centroids(k * dim);
  const std::size_t first = first_centre(engine.weights(), n, rng);
  if (options.rows) options.rows->assign(1, first);
  engine.row_centred(first, centroids.data());
  double pot = engine.seed_start(centroids.data(), k);
  if (progress) progress->step("k-means++", 1, k, engine.seed_distances());

  std::vector<double> cand(trials * dim);
  std::vector<double> cand_pot(trials);
  std::vector<double> targets(trials);
  for (std::size_t c = 1; c < k; ++c) {
    for (double& t : targets) t = uniform01(rng) * pot;
    const auto ids = engine.seed_draw(targets);
    for (std::size_t t = 0; t < trials; ++t) engine.row_centred(ids[t], cand.data() + t * dim);
    engine.seed_potentials(cand.data(), trials, cand_pot.data());
    const std::size_t best = lowest(cand_pot);
    pot = cand_pot[best];
    std::copy_n(cand.data() + best * dim, dim, centroids.data() + c * dim);
    engine.seed_keep(best);
    if (options.rows) options.rows->push_back(ids[best]);
    if (progress) progress->step("k-means++", c + 1, k, engine.seed_distances());
  }
  engine.seed_end();
  return centroids;
}

template <class T>
std::vector<double> init_kmeanspp_plain(Engine<T>& engine, std::size_t k, std::mt19937_64& rng,
                                        std::size_t trials) {
  const std::size_t n = engine.rows();
  const std::size_t dim = engine.cols();
  const double* w = engine.weights();
  if (trials == 0) trials = local_trials(k);
  std::vector<double> centroids(k * dim);
  engine.row_centred(first_centre(w, n, rng), centroids.data());

  std::vector<T> closest(n, std::numeric_limits<T>::infinity());
  engine.lower_closest(centroids.data(), closest.data());
  double pot = potential(closest.data(), w, n);

  std::vector<double> cand(trials * dim);
  std::vector<double> cand_pot(trials);
  for (std::size_t c = 1; c < k; ++c) {
    std::vector<double> targets(trials);
    for (double& t : targets) t = uniform01(rng) * pot;
    const auto ids = search_cumulative(closest.data(), w, n, targets);
    for (std::size_t t = 0; t < trials; ++t) engine.row_centred(ids[t], cand.data() + t * dim);
    // All trials against all points in one pass over X.
    engine.potentials(cand.data(), trials, closest.data(), cand_pot.data());
    const std::size_t best = lowest(cand_pot);
    pot = cand_pot[best];
    std::copy_n(cand.data() + best * dim, dim, centroids.data() + c * dim);
    engine.lower_closest(centroids.data() + c * dim, closest.data());
  }
  return centroids;
}

template <class T>
std::vector<double> init_kmeans_parallel(Engine<T>& engine, std::size_t k, std::mt19937_64& rng,
                                         double oversampling, int rounds, const Recluster& recluster,
                                         SeedProgress* progress) {
  const std::size_t dim = engine.cols();
  // Every sum is exact and every draw keyed by the row's index in the whole data set, so the
  // candidates and their weights are bitwise the same for any thread count and any split of
  // the rows among MPI ranks.
  const SeedPick first = engine.seed_first(rng());
  if (!(first.key > -std::numeric_limits<double>::infinity())) {
    throw InvalidData("init='k-means||' needs a row with positive sample_weight");
  }
  std::vector<double> cand = first.row;
  engine.seed_start(cand.data(), k);
  auto psi = [&] {
    ExactSum acc;
    engine.seed_potential(acc);
    return acc.value();
  };
  double pot = psi();
  const double l = oversampling * static_cast<double>(k);
  for (int r = 0; r < rounds; ++r) {
    const std::vector<double> batch = engine.seed_oversample(l, pot, rng());
    if (!batch.empty()) {
      cand.insert(cand.end(), batch.begin(), batch.end());
      engine.seed_add_many(batch.data(), batch.size() / dim);
      pot = psi();
    }
    if (progress) progress->step("k-means||", static_cast<std::size_t>(r) + 1, static_cast<std::size_t>(rounds), engine.seed_distances());
  }
  const std::size_t m = cand.size() / dim;
  std::vector<ExactSum> acc(m);
  engine.seed_owner_weights(acc);
  std::vector<double> weight(m);
  for (std::size_t c = 0; c < m; ++c) weight[c] = acc[c].value();
  engine.seed_end();
  if (m <= k) {
    // Few distinct rows: k-means++ over all of them (a distributed engine's own k-means++).
    std::vector<double> c = engine.initial_centroids(InitMethod::kMeansPlusPlus, k, rng, progress);
    return c.empty() ? init_kmeanspp(engine, k, rng, {progress}) : c;
  }
  return recluster(MatrixView<double>(cand.data(), m, dim), weight, k, rng(), progress);
}

std::vector<std::pair<double, std::size_t>> sampling_keys(const double* w, std::size_t n, std::mt19937_64& rng,
                                                          std::uint64_t* positive) {
  // Efraimidis-Spirakis: key = log(u) / w, uniform when unweighted. Zero-weight rows get -inf
  // and are never drawn.
  std::vector<std::pair<double, std::size_t>> keys(n);
  *positive = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double wi = w ? w[i] : 1.0;
    const double u = uniform01(rng);
    *positive += wi > 0;
    keys[i] = {wi > 0 ? std::log1p(-u) / wi : -std::numeric_limits<double>::infinity(), i};
  }
  return keys;
}

void check_positive_rows(std::uint64_t positive, std::size_t k) {
  if (positive < k) {
    throw InvalidData("init='random' needs n_clusters = " + std::to_string(k) +
                      " rows with positive sample_weight, but only " + std::to_string(positive) +
                      " have one");
  }
}

void sort_best_keys(std::vector<std::pair<double, std::size_t>>& keys, std::size_t m) {
  auto greater = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  m = std::min(m, keys.size());
  std::partial_sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(m), keys.end(), greater);
}

template <class T>
std::vector<double> init_random(Engine<T>& engine, std::size_t k, std::mt19937_64& rng) {
  const std::size_t n = engine.rows();
  const std::size_t dim = engine.cols();
  const double* w = engine.weights();
  std::uint64_t positive = 0;
  std::vector<std::pair<double, std::size_t>> keys = sampling_keys(w, n, rng, &positive);
  check_positive_rows(positive, k);
  sort_best_keys(keys, k);
  std::vector<double> centroids(k * dim);
  for (std::size_t c = 0; c < k; ++c) engine.row_centred(keys[c].second, centroids.data() + c * dim);
  return centroids;
}

template std::vector<double> init_kmeanspp<float>(Engine<float>&, std::size_t, std::mt19937_64&, const KppOptions&);
template std::vector<double> init_kmeanspp<double>(Engine<double>&, std::size_t, std::mt19937_64&, const KppOptions&);
template std::vector<double> init_kmeanspp_plain<float>(Engine<float>&, std::size_t, std::mt19937_64&, std::size_t);
template std::vector<double> init_kmeanspp_plain<double>(Engine<double>&, std::size_t, std::mt19937_64&, std::size_t);
template std::vector<double> init_kmeans_parallel<float>(Engine<float>&, std::size_t, std::mt19937_64&, double, int,
                                                        const Recluster&, SeedProgress*);
template std::vector<double> init_kmeans_parallel<double>(Engine<double>&, std::size_t, std::mt19937_64&, double, int,
                                                         const Recluster&, SeedProgress*);
template std::vector<double> init_random<float>(Engine<float>&, std::size_t, std::mt19937_64&);
template std::vector<double> init_random<double>(Engine<double>&, std::size_t, std::mt19937_64&);

}  // namespace flashkm::detail
