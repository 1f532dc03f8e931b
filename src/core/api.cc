// The public entry points: validate, build an engine, run the driver, shape the result.
#include <cmath>
#include <limits>
#include <random>
#include <type_traits>
#include <variant>

#include "core/init.hpp"
#include "core/fit_engine.hpp"
#include "core/lloyd.hpp"
#include "core/validate.hpp"
#include "cpu/cpu_engine.hpp"
#include "flashkm/kmeans.hpp"

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
void check_centroids(MatrixView<T> X, MatrixView<T> centroids) {
  detail::check_view(centroids, "centroids");
  if (centroids.cols != X.cols) {
    throw InvalidArgument("centroids have " + std::to_string(centroids.cols) +
                          " columns but X has " + std::to_string(X.cols));
  }
  detail::check_finite(centroids, "centroids");
}

// An engine over X with `centroids` set (centred on X's shift, also returned in `centred`).
template <class T>
std::unique_ptr<detail::Engine<T>> engine_for(MatrixView<T> X, MatrixView<T> centroids,
                                              const PredictOptions& options,
                                              std::vector<double>* centred = nullptr) {
  detail::check_view(X, "X");
  check_centroids(X, centroids);
  detail::check_weights(options.sample_weight, X.rows);
  if (options.n_threads < 0) {
    throw InvalidArgument("n_threads = " + std::to_string(options.n_threads) + " must be >= 0 (0 = all cores)");
  }
  if (std::is_same_v<T, float> && centroids.rows > (std::size_t{1} << 24)) {
    throw InvalidArgument("more than 2^24 centroids are not supported for float32 data");
  }
  auto engine = detail::make_cpu_engine(X, options.sample_weight, options.n_threads, options.target);
  std::vector<double> c = centred_copy(*engine, CentroidsView{centroids});
  engine->set_centroids(c.data(), centroids.rows);
  if (centred) *centred = std::move(c);
  return engine;
}

}  // namespace

namespace detail {

// The driver around an engine: init runs, Lloyd, the best run's result.
template <class T>
KMeansResult<T> fit_engine(std::unique_ptr<detail::Engine<T>> engine, const KMeansOptions& options) {
  const std::size_t dim = engine->cols();
  const std::size_t k = options.n_clusters;
  const double mean_var = engine->mean_variance();
  const double tol_abs = options.tol * mean_var;
  // Squared distances below rounding noise of the data's total variance are duplicates.
  const double zero_dist =
      16 * std::numeric_limits<T>::epsilon() * mean_var * static_cast<double>(dim);

  KMeansResult<T> result;
  result.n_clusters = k;
  result.n_features = dim;
  result.target = engine->target();
  std::mt19937_64 rng(options.seed);
  const int runs = options.init == InitMethod::kExplicit ? 1 : options.n_init;
  detail::LloydRun best;
  for (int r = 0; r < runs; ++r) {
    // A distributed engine chooses initial centroids itself (an empty answer: the driver does).
    std::vector<double> c0 = options.init == InitMethod::kExplicit
                                 ? centred_copy(*engine, options.init_centroids)
                                 : engine->initial_centroids(options.init, k, rng);
    if (c0.empty()) {
      c0 = options.init == InitMethod::kMeansPlusPlus ? detail::init_kmeanspp(*engine, k, rng)
                                                      : detail::init_random(*engine, k, rng);
    }
    detail::LloydRun run = detail::run_lloyd(*engine, std::move(c0), k, options, tol_abs, zero_dist, r, result.history);
    const bool stopped = run.stop == StopReason::kCallback;
    if (r == 0 || run.inertia < best.inertia) {
      best = std::move(run);
      result.best_init = r;
    }
    if (stopped) {
      // The callback stops the whole fit, not one run: the best so far is returned, marked.
      best.stop = StopReason::kCallback;
      break;
    }
  }
  const double* shift = engine->shift();
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

template <class T>
KMeansResult<T> fit(MatrixView<T> X, const KMeansOptions& options) {
  detail::check_view(X, "X");
  detail::check_options(options, X.rows, X.cols, std::is_same_v<T, float>);
  detail::check_weights(options.sample_weight, X.rows);
  return detail::fit_engine(detail::make_cpu_engine(X, options.sample_weight, options.n_threads, options.target), options);
}

template <class T>
KMeansResult<T> fit(RowSource<T>& source, const KMeansOptions& options) {
  detail::check_options(options, source.rows(), source.cols(), std::is_same_v<T, float>);
  detail::check_weights(options.sample_weight, source.rows());
  return detail::fit_engine(detail::make_cpu_engine(source, options.sample_weight, options.n_threads, options.target), options);
}

std::size_t row_source_granule(std::size_t cols, std::size_t elem_size) {
  return detail::cpu_granule(cols, elem_size);
}

template <class T>
std::vector<std::int32_t> predict(MatrixView<T> X, MatrixView<T> centroids, const PredictOptions& options) {
  auto engine = engine_for(X, centroids, options);
  std::vector<std::int32_t> labels(X.rows, -1);
  std::vector<T> dist(X.rows);
  engine->assign(labels.data(), dist.data());
  return labels;
}

template <class T>
std::vector<std::int32_t> predict(RowSource<T>& source, MatrixView<T> centroids, const PredictOptions& options) {
  if (source.rows() == 0 || source.cols() == 0) {
    throw InvalidArgument("X has shape " + std::to_string(source.rows()) + " x " +
                          std::to_string(source.cols()) + "; need at least one row and one column");
  }
  check_centroids(MatrixView<T>(nullptr, source.rows(), source.cols()), centroids);
  if (options.n_threads < 0) {
    throw InvalidArgument("n_threads = " + std::to_string(options.n_threads) + " must be >= 0 (0 = all cores)");
  }
  if (std::is_same_v<T, float> && centroids.rows > (std::size_t{1} << 24)) {
    throw InvalidArgument("more than 2^24 centroids are not supported for float32 data");
  }
  auto engine = detail::make_cpu_engine(source, {}, options.n_threads, options.target);
  std::vector<double> c = centred_copy(*engine, CentroidsView{centroids});
  engine->set_centroids(c.data(), centroids.rows);
  std::vector<std::int32_t> labels(source.rows(), -1);
  std::vector<T> dist(source.rows());
  engine->assign(labels.data(), dist.data());
  return labels;
}

template <class T>
std::vector<T> transform(MatrixView<T> X, MatrixView<T> centroids, const PredictOptions& options) {
  auto engine = engine_for(X, centroids, options);
  std::vector<T> out(X.rows * centroids.rows);
  engine->sqdistances(out.data());
  for (T& v : out) v = std::sqrt(v);
  return out;
}

template <class T>
double score(MatrixView<T> X, MatrixView<T> centroids, const PredictOptions& options) {
  std::vector<double> c;
  auto engine = engine_for(X, centroids, options, &c);
  const std::size_t k = centroids.rows;
  std::vector<std::int32_t> labels(X.rows, -1);
  std::vector<T> dist(X.rows);
  std::vector<double> sums(k * X.cols), wsums(k);
  std::size_t changed = 0;
  // The inertia of the update pass is exact (float64 differences), unlike the kernel's
  // expanded distances.
  return -engine->assign_update(c.data(), k, labels.data(), dist.data(), sums.data(), wsums.data(),
                                &changed);
}

std::vector<std::string> available_targets() { return detail::cpu_target_names(); }

std::string default_target() { return detail::cpu_default_target(); }

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

}  // namespace flashkm
