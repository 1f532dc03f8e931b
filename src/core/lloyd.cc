// The Lloyd driver: assign -> update -> empty-cluster relocation -> convergence test.
#include "core/lloyd.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

namespace flashkm::detail {
namespace {

// Moves each empty cluster (zero total weight) to one of the points farthest from their
// centroid, as scikit-learn does: farthest first (ties: lowest point index), the point's weight
// and coordinates leave its old cluster. A point is not taken from a cluster it would empty.
// Points within `zero_dist` of their centroid are not candidates: a centroid there would
// duplicate one that already exists (up to rounding), lose every tie and empty again.
// Deterministic: depends only on the engine's labels and distances and the sums (its farthest()
// sees all shards of a distributed engine). Returns how many were relocated.
template <class T>
std::size_t relocate_empty(Engine<T>& engine, std::size_t k, std::vector<double>& sums, std::vector<double>& wsums,
                           std::vector<double>& fixed_centroids, std::vector<char>& is_fixed,
                           double zero_dist) {
  const std::size_t total = engine.total_rows();
  const std::size_t dim = engine.cols();
  std::vector<std::size_t> empty;
  for (std::size_t c = 0; c < k; ++c) {
    if (wsums[c] == 0.0) empty.push_back(c);
  }
  if (empty.empty()) return 0;

  // Only the first few candidates are usually needed; ask for more only if they run out (the
  // longer list starts with the shorter one: the order is total).
  std::size_t want = std::min(total, 4 * empty.size() + 64);
  std::vector<FarPoint> far = engine.farthest(want);
  std::size_t relocated = 0;
  std::size_t next = 0;
  for (std::size_t c : empty) {
    while (true) {
      if (next == far.size() && want < total) {
        want = std::min(total, 4 * want);
        far = engine.farthest(want);
      }
      if (next == far.size() || !(far[next].dist > zero_dist)) break;
      const FarPoint& p = far[next++];
      const std::size_t donor = static_cast<std::size_t>(p.label);
      if (is_fixed[donor] || (p.weight > 0 && !(wsums[donor] - p.weight > 0))) continue;
      for (std::size_t j = 0; j < dim; ++j) sums[donor * dim + j] -= p.weight * p.row[j];
      wsums[donor] -= p.weight;
      std::copy(p.row.begin(), p.row.end(), fixed_centroids.begin() + static_cast<std::ptrdiff_t>(c * dim));
      is_fixed[c] = 1;
      ++relocated;
      break;
    }
  }
  return relocated;
}

// The metric's inertia from one assign_update: its float64 Euclidean inertia, or for the
// inner-product metrics sum_c c . S_c where S_c are the cluster sums (rows uncentred; for cosine
// weighted by w / ||x||, so that c . S_c sums w cos over the cluster).
double metric_inertia(Metric metric, double euclidean, const std::vector<double>& centroids,
                      const std::vector<double>& sums, double total_weight) {
  if (metric == Metric::kEuclidean) return euclidean;
  double dot = 0;
  for (std::size_t i = 0; i < sums.size(); ++i) dot += centroids[i] * sums[i];
  return metric == Metric::kCosine ? total_weight - dot : -dot;
}

}  // namespace

void normalise_rows(double* c, std::size_t k, std::size_t dim) {
  for (std::size_t r = 0; r < k; ++r) {
    double sq = 0;
    for (std::size_t j = 0; j < dim; ++j) sq += c[r * dim + j] * c[r * dim + j];
    if (sq > 0) {
      const double inv = 1.0 / std::sqrt(sq);
      for (std::size_t j = 0; j < dim; ++j) c[r * dim + j] *= inv;
    }
  }
}

template <class T>
LloydRun run_lloyd(Engine<T>& engine, std::vector<double> centroids, std::size_t k,
                   const KMeansOptions& options, double tol_abs, double zero_dist, int init_run,
                   std::vector<IterationStats>& history, double total_weight) {
  const Metric metric = options.metric;
  using Clock = std::chrono::steady_clock;
  const std::size_t n = engine.rows();
  const std::size_t dim = engine.cols();
  LloydRun run;
  std::vector<double> sums(k * dim), wsums(k), next(k * dim), fixed(k * dim);
  std::vector<char> is_fixed(k);

  // The inner-product metric has no triangle inequality to prune with (see KERNELS.md).
  engine.begin_run(metric == Metric::kDot ? Prune::kOff : options.prune, k);
  bool final_assign_needed = true;
  for (int it = 1; it <= options.max_iter; ++it) {
    const auto t0 = Clock::now();
    std::size_t changed = 0;
    const double inertia =
        metric_inertia(metric,
                       engine.assign_update(centroids.data(), k, sums.data(), wsums.data(), &changed),
                       centroids, sums, total_weight);
    std::fill(is_fixed.begin(), is_fixed.end(), 0);
    // Relocation to the farthest points is a Euclidean notion; under the inner-product metrics
    // an empty cluster keeps its centroid (as spherical k-means and Flash-KMeans do).
    const std::size_t relocated =
        metric == Metric::kEuclidean
            ? relocate_empty(engine, k, sums, wsums, fixed, is_fixed, zero_dist)
            : 0;
    for (std::size_t c = 0; c < k; ++c) {
      for (std::size_t j = 0; j < dim; ++j) {
        const std::size_t i = c * dim + j;
        // A cluster left without weight (only zero-weight points, none to relocate) keeps
        // its centroid.
        next[i] = is_fixed[c] ? fixed[i] : wsums[c] > 0 ? sums[i] / wsums[c] : centroids[i];
      }
    }
    // Spherical k-means: the mean direction (the mean's length carries no information).
    if (metric == Metric::kCosine) normalise_rows(next.data(), k, dim);
    double shift = 0;
    for (std::size_t i = 0; i < k * dim; ++i) {
      const double e = next[i] - centroids[i];
      shift += e * e;
    }
    IterationStats stats;
    stats.iteration = it;
    stats.inertia = inertia;
    stats.center_shift = shift;
    stats.labels_changed = changed;
    stats.distances = engine.last_distances();
    stats.empty_relocated = relocated;
    stats.init_run = init_run;
    stats.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    history.push_back(stats);
    run.n_iter = it;
    run.inertia = inertia;
    const bool keep_going = engine.agree(!options.callback || options.callback(stats));

    if (it > 1 && changed == 0 && relocated == 0) {
      // Strict convergence: these labels are the assignment of `centroids`, which we keep.
      // An iteration that relocated empty clusters moved centroids, so it is not converged.
      run.stop = StopReason::kStrict;
      final_assign_needed = false;
      break;
    }
    centroids.swap(next);
    if (shift <= tol_abs) {
      run.stop = StopReason::kTolerance;
      break;
    }
    if (!keep_going) {
      run.stop = StopReason::kCallback;
      break;
    }
    run.stop = StopReason::kMaxIter;
  }
  if (final_assign_needed) {
    // The loop ended after an update: assign once more so labels match the returned centroids.
    std::size_t changed = 0;
    run.inertia = metric_inertia(metric,
                                 engine.assign_update(centroids.data(), k, sums.data(), wsums.data(), &changed),
                                 centroids, sums, total_weight);
  }
  run.centroids = std::move(centroids);
  // The engine kept every point's state through the run: its labels are copied out once.
  run.labels.assign(engine.labels(), engine.labels() + n);
  return run;
}

template LloydRun run_lloyd<float>(Engine<float>&, std::vector<double>, std::size_t,
                                   const KMeansOptions&, double, double, int, std::vector<IterationStats>&,
                                   double);
template LloydRun run_lloyd<double>(Engine<double>&, std::vector<double>, std::size_t,
                                    const KMeansOptions&, double, double, int, std::vector<IterationStats>&,
                                    double);

}  // namespace flashkm::detail
