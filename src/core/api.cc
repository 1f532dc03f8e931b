// The public entry points: validate, build an engine, run the driver, shape the result.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <type_traits>
#include <variant>

#include "core/init.hpp"
#include "core/fit_engine.hpp"
#include "core/lloyd.hpp"
#include "core/validate.hpp"
#include "core/backend.hpp"
#include "flashkm/kmeans.hpp"
#include "flashkm/sparse.hpp"

namespace flashkm {
namespace {

// Explicit centroids, centred on the engine's shift, as float64.
template <class T>
std::vector<double> centred_copy(const detail::Engine<T>& engine, const CentroidsView& init) {
  const std::size_t dim = engine.cols();
  const double* shift = engine.shift();
  return std::visit(
      [&](auto view) {
        std::vector<double> out(view.rows * dim);
        for (std::size_t c = 0; c < view.rows; ++c) {
          for (std::size_t j = 0; j < dim; ++j) {
            out[c * dim + j] = static_cast<double>(view.row(c)[j]) - shift[j];
          }
        }
        return out;
      },
      init);
}

template <class T>
void check_centroids(std::size_t cols, MatrixView<T> centroids) {
  detail::check_view(centroids, "centroids");
  if (centroids.cols != cols) {
    throw InvalidArgument("centroids have " + std::to_string(centroids.cols) +
                          " columns but X has " + std::to_string(cols));
  }
  detail::check_finite(centroids, "centroids");
}

template <class T>
void check_centroids(MatrixView<T> X, MatrixView<T> centroids) {
  check_centroids(X.cols, centroids);
}

// Shape checks of a CSR view (its contents are checked by the sparse engine).
template <class T>
void check_csr(CsrView<T> X) {
  if (X.row_offsets == nullptr) throw InvalidArgument("X: row_offsets pointer is null");
  if (X.rows == 0) throw InvalidArgument("X has 0 rows");
  if (X.cols == 0) throw InvalidArgument("X has 0 columns");
  if (X.rows > std::numeric_limits<std::uint32_t>::max()) {
    throw InvalidArgument("X has " + std::to_string(X.rows) + " rows; at most 2^32 - 1 are supported in memory");
  }
  if (X.cols > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    throw InvalidArgument("X has " + std::to_string(X.cols) + " columns; at most 2^31 - 1 are supported");
  }
}

// The centroids as an engine made for `metric` takes them: centred on its shift (zero for the
// inner-product metrics, whose engines take the rows as given; cosine also normalises the
// centroids, so that x.c ranks cosines).
template <class T>
std::vector<double> metric_centroids(detail::Engine<T>& engine, MatrixView<T> centroids, Metric metric) {
  std::vector<double> c = centred_copy(engine, CentroidsView{centroids});
  if (metric == Metric::kCosine) detail::normalise_rows(c.data(), centroids.rows, engine.cols());
  return c;
}

// The checks of predict / transform / score on X's shape (rows x cols) before an engine is made.
template <class T>
void check_query(std::size_t rows, std::size_t cols, MatrixView<T> centroids, const PredictOptions& options) {
  check_centroids(cols, centroids);
  detail::check_weights(options.sample_weight, rows);
  detail::check_threads(options.n_threads);
  if (std::is_same_v<T, float> && centroids.rows > (std::size_t{1} << 24)) {
    throw InvalidArgument("more than 2^24 centroids are not supported for float32 data");
  }
}

// The engine with `centroids` set (centred on X's shift, also returned in `centred`).
template <class T>
std::unique_ptr<detail::Engine<T>> with_centroids(std::unique_ptr<detail::Engine<T>> engine, MatrixView<T> centroids,
                                                  const PredictOptions& options, std::vector<double>* centred) {
  std::vector<double> c = metric_centroids(*engine, centroids, options.metric);
  engine->set_centroids(c.data(), centroids.rows);
  if (centred) *centred = std::move(c);
  return engine;
}

// An engine over X with `centroids` set (centred on X's shift, also returned in `centred`).
template <class T>
std::unique_ptr<detail::Engine<T>> engine_for(MatrixView<T> X, MatrixView<T> centroids,
                                              const PredictOptions& options,
                                              std::vector<double>* centred = nullptr) {
  detail::check_view(X, "X");
  check_query(X.rows, X.cols, centroids, options);
  return with_centroids(detail::make_engine(X, options.sample_weight, options.n_threads, options.target, 0, options.metric),
                        centroids, options, centred);
}

// The same over sparse rows.
template <class T>
std::unique_ptr<detail::Engine<T>> engine_for(CsrView<T> X, MatrixView<T> centroids, const PredictOptions& options,
                                              std::vector<double>* centred = nullptr) {
  check_csr(X);
  check_query(X.rows, X.cols, centroids, options);
  return with_centroids(detail::make_engine(X, options.sample_weight, options.n_threads, options.target, options.metric),
                        centroids, options, centred);
}

// Labels of the engine's rows against its centroids.
template <class T>
std::vector<std::int32_t> engine_labels(detail::Engine<T>& engine) {
  std::vector<std::int32_t> labels(engine.rows(), -1);
  std::vector<T> dist(engine.rows());
  engine.assign(labels.data(), dist.data());
  return labels;
}

// score() over an engine whose centroids `c` (centred) are set.
template <class T>
double engine_score(detail::Engine<T>& engine, const std::vector<double>& c, std::size_t k, Metric metric) {
  const std::size_t dim = engine.cols();
  std::vector<double> sums(k * dim), wsums(k);
  std::size_t changed = 0;
  const double total_weight = engine.total_weight();
  // The inertia of the update pass is exact (float64 differences), unlike the kernel's
  // expanded distances; the inner-product metrics' comes from the cluster sums.
  engine.begin_run(Prune::kOff, k);
  const double euclidean = engine.assign_update(c.data(), k, sums.data(), wsums.data(), &changed);
  if (metric == Metric::kEuclidean) return -euclidean;
  double dot = 0;
  for (std::size_t i = 0; i < sums.size(); ++i) dot += c[i] * sums[i];
  return metric == Metric::kCosine ? -(total_weight - dot) : dot;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Seeding's progress as KMeansOptions::seed_callback hears it: timed per phase.
class Seeding final : public detail::SeedProgress {
 public:
  Seeding(const SeedCallback& callback, int run) : callback_(callback), run_(run) {}
  void step(const char* phase, std::size_t done, std::size_t total, std::uint64_t distances) override {
    const auto now = std::chrono::steady_clock::now();
    // The first phase began with the seeding (this object's construction); a later one where
    // the previous one ended (its last step). Its first step's work counts in its time.
    if (phase != phase_) {
      if (phase_) start_ = last_;
      phase_ = phase;
    }
    last_ = now;
    SeedStats s;
    s.phase = phase;
    s.done = done;
    s.total = total;
    s.distances = distances;
    s.seconds = std::chrono::duration<double>(now - start_).count();
    s.seconds_left = done > 0 ? s.seconds / static_cast<double>(done) * static_cast<double>(total - done) : 0.0;
    s.init_run = run_;
    distances_ = distances;
    if (callback_) callback_(s);
  }
  std::uint64_t distances() const { return distances_; }

 private:
  const SeedCallback& callback_;
  int run_;
  const char* phase_ = nullptr;
  std::uint64_t distances_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_ = start_;
};

// k-means||'s candidates reclustered as Bahmani et al. do: weighted greedy k-means++ on an
// engine of their own (its steps heard as the fit's seeding). Lloyd iterations on the weighted
// candidates (Spark's LocalKMeans) were tried: at blobs 100,000 x 128 x 1024 they left the
// converged inertia 2.9% above k-means++'s, without them it is within 0.01%.
// The candidates are rows of X: they are seeded in X's own type T (back in X's coordinates,
// x - shift + shift, exact for rows near the data), float32 kernels for float32 data (twice the
// lanes of float64: at 1,000,000 x 32 x 8192 this step was 14 of k-means||'s 22 Lloyd
// iterations' time in float64).
template <class T>
detail::Recluster recluster(const KMeansOptions& options, const double* main_shift) {
  return [&options, main_shift](MatrixView<double> rows, std::span<const double> w, std::size_t k,
                                std::uint64_t seed, detail::SeedProgress* progress) {
    const std::size_t dim = rows.cols;
    std::vector<T> x(rows.rows * dim);
    for (std::size_t i = 0; i < rows.rows; ++i) {
      for (std::size_t j = 0; j < dim; ++j) x[i * dim + j] = static_cast<T>(rows.data[i * dim + j] + main_shift[j]);
    }
    auto engine = detail::make_engine<T>(MatrixView<T>(x.data(), rows.rows, dim), w, options.n_threads, options.target);
    engine->set_seed_sketch(options.seed_sketch);
    std::mt19937_64 rng(seed);
    std::vector<double> c = detail::init_kmeanspp(*engine, k, rng, {progress});
    // The candidates' engine centred them on their own mean: its centres come back in the
    // main engine's frame.
    const double* shift = engine->shift();
    for (std::size_t i = 0; i < k; ++i) {
      for (std::size_t j = 0; j < dim; ++j) c[i * dim + j] += shift[j] - main_shift[j];
    }
    return c;
  };
}

}  // namespace

namespace detail {

// The driver around an engine: init runs, Lloyd, the best run's result.
template <class T>
KMeansResult<T> fit_engine(std::unique_ptr<detail::Engine<T>> engine, const KMeansOptions& options) {
  if (engine->metric() != options.metric) throw std::logic_error("fit_engine: the engine was made for another metric");
  engine->set_seed_sketch(options.seed_sketch);
  const std::size_t dim = engine->cols();
  const std::size_t k = options.n_clusters;
  const double mean_var = engine->mean_variance();
  const Metric metric = options.metric;
  // Unit centroids: the cosine run's shift is measured in absolute terms.
  const double tol_abs = metric == Metric::kCosine ? options.tol : options.tol * mean_var;
  // Squared distances below rounding noise of the data's total variance are duplicates.
  const double zero_dist =
      16 * std::numeric_limits<T>::epsilon() * mean_var * static_cast<double>(dim);
  // The engine was made for the metric (core/engine.hpp): inner products are taken with the
  // rows as given, no centring; cosine runs its Lloyd steps on w / ||x|| weights (the mean of
  // the normalised rows), its initialisation on w.
  const double total_weight = metric != Metric::kEuclidean ? engine->total_weight() : 0.0;

  KMeansResult<T> result;
  result.n_clusters = k;
  result.n_features = dim;
  result.target = engine->target();
  std::mt19937_64 rng(options.seed);
  const int runs = options.init == InitMethod::kExplicit ? 1 : options.n_init;
  const InitMethod init = engine->seeding_for(options.init, k);
  detail::LloydRun best;
  for (int r = 0; r < runs; ++r) {
    // A distributed engine chooses initial centroids itself (an empty answer: the driver does).
    const auto seed_start = std::chrono::steady_clock::now();
    Seeding seeding(options.seed_callback, r);
    detail::SeedProgress* progress = options.seed_callback ? &seeding : nullptr;
    std::vector<double> c0 = options.init == InitMethod::kExplicit
                                 ? centred_copy(*engine, options.init_centroids)
                                 : engine->initial_centroids(init, k, rng, progress);
    if (c0.empty()) {
      if (init == InitMethod::kMeansPlusPlus) {
        c0 = detail::init_kmeanspp(*engine, k, rng, {progress});
      } else if (init == InitMethod::kMeansParallel) {
        c0 = detail::init_kmeans_parallel(*engine, k, rng, options.init_oversampling, options.init_rounds,
                                          recluster<T>(options, engine->shift()), progress);
      } else {
        c0 = detail::init_random(*engine, k, rng);
      }
    }
    result.init_seconds += seconds_since(seed_start);
    if (metric == Metric::kCosine) detail::normalise_rows(c0.data(), k, dim);
    std::vector<double> start = c0;
    detail::LloydRun run =
        detail::run_lloyd(*engine, std::move(c0), k, options, tol_abs, zero_dist, r, result.history, total_weight);
    const bool stopped = run.stop == StopReason::kCallback;
    if (r == 0 || run.inertia < best.inertia) {
      best = std::move(run);
      result.best_init = r;
      result.initial_centroids = std::move(start);
    }
    if (stopped) {
      // The callback stops the whole fit, not one run: the best so far is returned, marked.
      best.stop = StopReason::kCallback;
      break;
    }
  }
  const double* shift = engine->shift();
  for (std::size_t c = 0; c < k; ++c) {
    for (std::size_t j = 0; j < dim; ++j) result.initial_centroids[c * dim + j] += shift[j];
  }
  result.centroids.resize(k * dim);
  for (std::size_t c = 0; c < k; ++c) {
    for (std::size_t j = 0; j < dim; ++j) {
      result.centroids[c * dim + j] = static_cast<T>(best.centroids[c * dim + j] + shift[j]);
    }
  }
  result.labels = std::move(best.labels);
  result.inertia = best.inertia;
  result.n_iter = best.n_iter;
  result.stop_reason = best.stop;
  result.converged = best.stop == StopReason::kTolerance || best.stop == StopReason::kStrict;
  return result;
}

template KMeansResult<float> fit_engine<float>(std::unique_ptr<Engine<float>>, const KMeansOptions&);
template KMeansResult<double> fit_engine<double>(std::unique_ptr<Engine<double>>, const KMeansOptions&);

}  // namespace detail

namespace {

// k-means++ seeds over any engine: the chosen rows' indices and the rows themselves.
template <class T>
SeedResult<T> kmeans_plusplus(std::unique_ptr<detail::Engine<T>> engine, std::size_t n_clusters,
                              const KMeansOptions& options, std::size_t n_local_trials,
                              std::chrono::steady_clock::time_point start) {
  engine->set_seed_sketch(options.seed_sketch);
  std::mt19937_64 rng(options.seed);
  Seeding seeding(options.seed_callback, 0);
  std::vector<std::size_t> rows;
  detail::init_kmeanspp(*engine, n_clusters, rng, {&seeding, n_local_trials, &rows});
  SeedResult<T> out;
  const std::size_t dim = engine->cols();
  out.distances = seeding.distances();
  out.centers.resize(n_clusters * dim);
  out.indices.assign(rows.begin(), rows.end());
  // The chosen rows as they are in X (row_centred adds back nothing the shift does not undo).
  std::vector<double> row(dim);
  const double* shift = engine->shift();
  for (std::size_t c = 0; c < n_clusters; ++c) {
    engine->row_centred(rows[c], row.data());
    for (std::size_t j = 0; j < dim; ++j) out.centers[c * dim + j] = static_cast<T>(row[j] + shift[j]);
  }
  out.seconds = seconds_since(start);
  return out;
}

}  // namespace

template <class T>
SeedResult<T> kmeans_plusplus(MatrixView<T> X, std::size_t n_clusters, const KMeansOptions& options,
                              std::size_t n_local_trials) {
  const auto start = std::chrono::steady_clock::now();
  detail::check_view(X, "X");
  detail::check_n_clusters(n_clusters, X.rows);
  detail::check_weights(options.sample_weight, X.rows);
  detail::check_threads(options.n_threads);
  SeedResult<T> out = kmeans_plusplus(detail::make_engine(X, options.sample_weight, options.n_threads, options.target),
                                      n_clusters, options, n_local_trials, start);
  // Copies of X's own rows (bitwise, whatever the centring's rounding).
  for (std::size_t c = 0; c < n_clusters; ++c) {
    std::copy_n(X.row(static_cast<std::size_t>(out.indices[c])), X.cols, out.centers.data() + c * X.cols);
  }
  return out;
}

template <class T>
SeedResult<T> kmeans_plusplus(CsrView<T> X, std::size_t n_clusters, const KMeansOptions& options,
                              std::size_t n_local_trials) {
  const auto start = std::chrono::steady_clock::now();
  check_csr(X);
  detail::check_n_clusters(n_clusters, X.rows);
  detail::check_weights(options.sample_weight, X.rows);
  detail::check_threads(options.n_threads);
  return kmeans_plusplus(detail::make_engine(X, options.sample_weight, options.n_threads, options.target),
                         n_clusters, options, n_local_trials, start);
}

template SeedResult<float> kmeans_plusplus<float>(MatrixView<float>, std::size_t, const KMeansOptions&, std::size_t);
template SeedResult<double> kmeans_plusplus<double>(MatrixView<double>, std::size_t, const KMeansOptions&, std::size_t);

template <class T>
KMeansResult<T> fit(MatrixView<T> X, const KMeansOptions& options) {
  detail::check_view(X, "X");
  detail::check_options(options, X.rows, X.cols, std::is_same_v<T, float>);
  detail::check_weights(options.sample_weight, X.rows);
  return detail::fit_engine(
      detail::make_engine(X, options.sample_weight, options.n_threads, options.target, 0, options.metric), options);
}

template <class T>
KMeansResult<T> fit(RowSource<T>& source, const KMeansOptions& options) {
  detail::check_options(options, source.rows(), source.cols(), std::is_same_v<T, float>);
  detail::check_weights(options.sample_weight, source.rows());
  return detail::fit_engine(
      detail::make_engine(source, options.sample_weight, options.n_threads, options.target, 0, options.metric), options);
}

std::size_t row_source_granule(std::size_t cols, std::size_t elem_size) {
  return detail::granule(cols, elem_size);
}

template <class T>
std::vector<std::int32_t> predict(MatrixView<T> X, MatrixView<T> centroids, const PredictOptions& options) {
  return engine_labels(*engine_for(X, centroids, options));
}

template <class T>
std::vector<std::int32_t> predict(CsrView<T> X, MatrixView<T> centroids, const PredictOptions& options) {
  return engine_labels(*engine_for(X, centroids, options));
}

template <class T>
std::vector<std::int32_t> predict(RowSource<T>& source, MatrixView<T> centroids, const PredictOptions& options) {
  if (source.rows() == 0 || source.cols() == 0) {
    throw InvalidArgument("X has shape " + std::to_string(source.rows()) + " x " +
                          std::to_string(source.cols()) + "; need at least one row and one column");
  }
  check_centroids(MatrixView<T>(nullptr, source.rows(), source.cols()), centroids);
  detail::check_threads(options.n_threads);
  if (std::is_same_v<T, float> && centroids.rows > (std::size_t{1} << 24)) {
    throw InvalidArgument("more than 2^24 centroids are not supported for float32 data");
  }
  auto engine = detail::make_engine(source, {}, options.n_threads, options.target, 0, options.metric);
  std::vector<double> c = metric_centroids(*engine, centroids, options.metric);
  engine->set_centroids(c.data(), centroids.rows);
  std::vector<std::int32_t> labels(source.rows(), -1);
  std::vector<T> dist(source.rows());
  engine->assign(labels.data(), dist.data());
  return labels;
}

namespace {

// transform() under the inner-product metrics: 1 - cos(x, c) or -x.c, in float64 per pair
// (rows of zeros: cos = 0). dots(i, c, k, dim, out) writes row i's k products with the
// float64 centroids c and returns the row's squared norm.
template <class T, class Dots>
std::vector<T> inner_transform(std::size_t n, MatrixView<T> centroids, Metric metric, Dots&& dots) {
  const std::size_t k = centroids.rows, dim = centroids.cols;
  std::vector<double> c(k * dim);
  for (std::size_t r = 0; r < k; ++r) {
    for (std::size_t j = 0; j < dim; ++j) c[r * dim + j] = static_cast<double>(centroids.row(r)[j]);
  }
  if (metric == Metric::kCosine) detail::normalise_rows(c.data(), k, dim);
  std::vector<T> out(n * k);
#pragma omp parallel
  {
    std::vector<double> dot(k);
#pragma omp for schedule(static)
    for (std::size_t i = 0; i < n; ++i) {
      const double norm = std::sqrt(dots(i, c.data(), k, dim, dot.data()));
      for (std::size_t r = 0; r < k; ++r) {
        out[i * k + r] = static_cast<T>(metric == Metric::kCosine ? 1.0 - (norm > 0 ? dot[r] / norm : 0.0) : -dot[r]);
      }
    }
  }
  return out;
}

// transform() under the Euclidean metric: the kernels' squared distances, square-rooted.
template <class T>
std::vector<T> euclidean_transform(detail::Engine<T>& engine, std::size_t k) {
  std::vector<T> out(engine.rows() * k);
  engine.sqdistances(out.data());
  for (T& v : out) v = std::sqrt(v);
  return out;
}

PredictOptions euclidean(PredictOptions options) {
  options.metric = Metric::kEuclidean;
  return options;
}

}  // namespace

template <class T>
std::vector<T> transform(MatrixView<T> X, MatrixView<T> centroids, const PredictOptions& options) {
  if (options.metric != Metric::kEuclidean) {
    engine_for(X, centroids, euclidean(options));  // validates shapes and values
    return inner_transform(X.rows, centroids, options.metric,
                           [&](std::size_t i, const double* c, std::size_t k, std::size_t dim, double* dot) {
                             const T* x = X.row(i);
                             double norm = 0;
                             for (std::size_t j = 0; j < dim; ++j) norm += static_cast<double>(x[j]) * static_cast<double>(x[j]);
                             for (std::size_t r = 0; r < k; ++r) {
                               double d = 0;
                               for (std::size_t j = 0; j < dim; ++j) d += static_cast<double>(x[j]) * c[r * dim + j];
                               dot[r] = d;
                             }
                             return norm;
                           });
  }
  return euclidean_transform(*engine_for(X, centroids, options), centroids.rows);
}

template <class T>
std::vector<T> transform(CsrView<T> X, MatrixView<T> centroids, const PredictOptions& options) {
  if (options.metric != Metric::kEuclidean) {
    engine_for(X, centroids, euclidean(options));  // validates shapes and values
    return inner_transform(X.rows, centroids, options.metric,
                           [&](std::size_t i, const double* c, std::size_t k, std::size_t dim, double* dot) {
                             const std::int64_t p0 = X.row_offsets[i], p1 = X.row_offsets[i + 1];
                             double norm = 0;
                             for (std::int64_t p = p0; p < p1; ++p) {
                               norm += static_cast<double>(X.values[p]) * static_cast<double>(X.values[p]);
                             }
                             for (std::size_t r = 0; r < k; ++r) {
                               double d = 0;
                               for (std::int64_t p = p0; p < p1; ++p) {
                                 d += static_cast<double>(X.values[p]) * c[r * dim + static_cast<std::size_t>(X.col_indices[p])];
                               }
                               dot[r] = d;
                             }
                             return norm;
                           });
  }
  return euclidean_transform(*engine_for(X, centroids, options), centroids.rows);
}

template <class T>
double score(MatrixView<T> X, MatrixView<T> centroids, const PredictOptions& options) {
  std::vector<double> c;
  auto engine = engine_for(X, centroids, options, &c);
  return engine_score(*engine, c, centroids.rows, options.metric);
}

template <class T>
double score(CsrView<T> X, MatrixView<T> centroids, const PredictOptions& options) {
  std::vector<double> c;
  auto engine = engine_for(X, centroids, options, &c);
  return engine_score(*engine, c, centroids.rows, options.metric);
}

template <class T>
KMeansResult<T> fit(CsrView<T> X, const KMeansOptions& options) {
  check_csr(X);
  detail::check_options(options, X.rows, X.cols, std::is_same_v<T, float>);
  detail::check_weights(options.sample_weight, X.rows);
  return detail::fit_engine(
      detail::make_engine(X, options.sample_weight, options.n_threads, options.target, options.metric), options);
}

std::vector<std::string> available_targets() { return detail::target_names(); }

std::string default_target() { return detail::default_target_name(); }

template KMeansResult<float> fit<float>(MatrixView<float>, const KMeansOptions&);
template KMeansResult<double> fit<double>(MatrixView<double>, const KMeansOptions&);
template KMeansResult<float> fit<float>(RowSource<float>&, const KMeansOptions&);
template KMeansResult<double> fit<double>(RowSource<double>&, const KMeansOptions&);
template std::vector<std::int32_t> predict<float>(RowSource<float>&, MatrixView<float>, const PredictOptions&);
template std::vector<std::int32_t> predict<double>(RowSource<double>&, MatrixView<double>, const PredictOptions&);
template std::vector<std::int32_t> predict<float>(MatrixView<float>, MatrixView<float>, const PredictOptions&);
template std::vector<std::int32_t> predict<double>(MatrixView<double>, MatrixView<double>, const PredictOptions&);
template std::vector<float> transform<float>(MatrixView<float>, MatrixView<float>, const PredictOptions&);
template std::vector<double> transform<double>(MatrixView<double>, MatrixView<double>, const PredictOptions&);
template double score<float>(MatrixView<float>, MatrixView<float>, const PredictOptions&);
template double score<double>(MatrixView<double>, MatrixView<double>, const PredictOptions&);

template KMeansResult<float> fit<float>(CsrView<float>, const KMeansOptions&);
template KMeansResult<double> fit<double>(CsrView<double>, const KMeansOptions&);
template SeedResult<float> kmeans_plusplus<float>(CsrView<float>, std::size_t, const KMeansOptions&, std::size_t);
template SeedResult<double> kmeans_plusplus<double>(CsrView<double>, std::size_t, const KMeansOptions&, std::size_t);
template std::vector<std::int32_t> predict<float>(CsrView<float>, MatrixView<float>, const PredictOptions&);
template std::vector<std::int32_t> predict<double>(CsrView<double>, MatrixView<double>, const PredictOptions&);
template std::vector<float> transform<float>(CsrView<float>, MatrixView<float>, const PredictOptions&);
template std::vector<double> transform<double>(CsrView<double>, MatrixView<double>, const PredictOptions&);
template double score<float>(CsrView<float>, MatrixView<float>, const PredictOptions&);
template double score<double>(CsrView<double>, MatrixView<double>, const PredictOptions&);

}  // namespace flashkm
