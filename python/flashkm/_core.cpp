// nanobind bindings of the flashkm C++ API (the private extension module flashkm._core).
// Arrays arrive C-contiguous in float32 or float64 (the Python layer converts once if needed)
// and are used in place; the GIL is released while the engine runs.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <thread>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "_bindings.hpp"
#include "flashkm/flashkm.hpp"

namespace nb = nanobind;
using namespace nb::literals;

using namespace flashkm_py;

namespace {


// Runs on the fitting thread without the GIL: take it back for the Python callback, and let
// Ctrl-C stop a long fit between iterations.
flashkm::IterationCallback python_callback(const std::optional<nb::callable>& callback) {
  return [&callback](const flashkm::IterationStats& s) {
    nb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
    if (!callback) return true;
    nb::object r = (*callback)(stats_dict(s));
    return r.is_none() || nb::cast<bool>(r);
  };
}

// Seeding's progress as a dict, on the fitting thread: the GIL taken back for the call.
flashkm::SeedCallback python_seed_callback(const std::optional<nb::callable>& callback) {
  if (!callback) return {};
  return [&callback](const flashkm::SeedStats& s) {
    nb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
    (*callback)(seed_stats_dict(s));
  };
}


template <class T>
nb::dict fit(const Matrix<T>& X, std::size_t n_clusters, const std::string& init,
             std::optional<Matrix<T>> init_centroids, int n_init, int max_iter, double tol,
             std::uint64_t seed, int n_threads, std::optional<Weights> sample_weight,
             std::optional<nb::callable> callback, const std::string& target, const std::string& metric,
             const std::string& prune, std::optional<nb::callable> seed_callback, int init_rounds,
             double init_oversampling) {
  flashkm::KMeansOptions o = kmeans_options<T>(n_clusters, init, init_centroids, n_init, max_iter, tol, seed,
                                               n_threads, sample_weight, target, metric);
  o.prune = prune_of(prune);
  o.init_rounds = init_rounds;
  o.init_oversampling = init_oversampling;
  o.callback = python_callback(callback);
  o.seed_callback = python_seed_callback(seed_callback);
  flashkm::KMeansResult<T> r;
  {
    nb::gil_scoped_release release;
    r = flashkm::fit(view(X), o);
  }
  return result_dict(std::move(r));
}

// 16-bit rows (float16 or bfloat16, passed as their uint16 bits) without a widened copy;
// float32 centroids and initial centroids.
using HalfMatrix = nb::ndarray<const std::uint16_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

flashkm::HalfView half_view(const HalfMatrix& X, const std::string& kind) {
  if (kind != "float16" && kind != "bfloat16") {
    throw flashkm::InvalidArgument("16-bit kind must be 'float16' or 'bfloat16', got '" + kind + "'");
  }
  return {X.data(), X.shape(0), X.shape(1), X.shape(1),
          kind == "bfloat16" ? flashkm::HalfType::kBFloat16 : flashkm::HalfType::kFloat16};
}

nb::dict fit_half(const HalfMatrix& X, const std::string& kind, std::size_t n_clusters, const std::string& init,
                  std::optional<Matrix<float>> init_centroids, int n_init, int max_iter, double tol,
                  std::uint64_t seed, int n_threads, std::optional<Weights> sample_weight,
                  std::optional<nb::callable> callback, const std::string& target, const std::string& metric,
                  const std::string& prune, std::optional<nb::callable> seed_callback, int init_rounds,
                  double init_oversampling) {
  flashkm::KMeansOptions o = kmeans_options<float>(n_clusters, init, init_centroids, n_init, max_iter, tol, seed,
                                                   n_threads, sample_weight, target, metric);
  o.prune = prune_of(prune);
  o.init_rounds = init_rounds;
  o.init_oversampling = init_oversampling;
  o.callback = python_callback(callback);
  o.seed_callback = python_seed_callback(seed_callback);
  const flashkm::HalfView hv = half_view(X, kind);
  flashkm::KMeansResult<float> r;
  {
    nb::gil_scoped_release release;
    r = flashkm::fit(hv, o);
  }
  return result_dict(std::move(r));
}

nb::ndarray<nb::numpy, std::int32_t> predict_half(const HalfMatrix& X, const std::string& kind, const Matrix<float>& C,
                                                  int n_threads, const std::string& target, const std::string& metric) {
  const flashkm::HalfView hv = half_view(X, kind);
  flashkm::PredictOptions o;
  o.n_threads = n_threads;
  o.target = target;
  o.metric = metric_of(metric);
  std::vector<std::int32_t> labels;
  {
    nb::gil_scoped_release release;
    labels = flashkm::predict(hv, view(C), o);
  }
  const std::size_t n = labels.size();
  return to_numpy(std::move(labels), {n});
}

template <class T>
flashkm::PredictOptions predict_options(int n_threads, const std::string& target,
                                        const std::optional<Weights>& w, const std::string& metric) {
  flashkm::PredictOptions o;
  o.metric = metric_of(metric);
  o.n_threads = n_threads;
  o.target = target;
  o.sample_weight = weights_span(w);
  return o;
}

template <class T>
nb::ndarray<nb::numpy, std::int32_t> predict(const Matrix<T>& X, const Matrix<T>& C, int n_threads,
                                              const std::string& target, const std::string& metric) {
  std::vector<std::int32_t> labels;
  {
    nb::gil_scoped_release release;
    labels = flashkm::predict(view(X), view(C), predict_options<T>(n_threads, target, std::nullopt, metric));
  }
  const std::size_t n = labels.size();
  return to_numpy(std::move(labels), {n});
}

template <class T>
nb::ndarray<nb::numpy, T> transform(const Matrix<T>& X, const Matrix<T>& C, int n_threads,
                                    const std::string& target, const std::string& metric) {
  std::vector<T> d;
  {
    nb::gil_scoped_release release;
    d = flashkm::transform(view(X), view(C), predict_options<T>(n_threads, target, std::nullopt, metric));
  }
  return to_numpy(std::move(d), {X.shape(0), C.shape(0)});
}

template <class T>
double score(const Matrix<T>& X, const Matrix<T>& C, std::optional<Weights> w, int n_threads,
             const std::string& target, const std::string& metric) {
  nb::gil_scoped_release release;
  return flashkm::score(view(X), view(C), predict_options<T>(n_threads, target, w, metric));
}

template <class T>
using Batch = nb::ndarray<const T, nb::ndim<3>, nb::c_contig, nb::device::cpu>;

// B independent fits of a B x N x D array (flashkm::fit_batch), results stacked: labels
// (B, N), centroids (B, K, D), and per-member inertia, n_iter, converged.
template <class T>
nb::dict batch_fit(const Batch<T>& X, std::size_t n_clusters, const std::string& init,
                   std::optional<Batch<T>> init_centroids, int max_iter, double tol,
                   std::uint64_t seed, int n_threads, const std::string& metric) {
  flashkm::KMeansOptions o;
  o.n_clusters = n_clusters;
  o.metric = metric_of(metric);
  flashkm::BatchView<T> init_view{};
  o.init = init_method(init, init_centroids.has_value());
  if (o.init == flashkm::InitMethod::kExplicit) {
    init_view = {init_centroids->data(), init_centroids->shape(0), init_centroids->shape(1),
                 init_centroids->shape(2)};
  }
  o.max_iter = max_iter;
  o.tol = tol;
  o.seed = seed;
  o.n_threads = n_threads;
  // Ctrl-C stops every member between iterations (KeyboardInterrupt). Members run on OpenMP
  // threads, where Python cannot run its signal handlers (only the main thread can), so the
  // batch runs on a thread of its own while this (the calling, main) thread watches for the
  // signal and raises a flag that every member's callback reads.
  std::atomic<bool> stop{false};
  o.callback = [&stop](const flashkm::IterationStats&) { return !stop.load(); };
  const std::size_t b = X.shape(0), n = X.shape(1), d = X.shape(2);
  std::vector<std::int32_t> labels;
  std::vector<T> centroids;
  std::vector<double> inertia(b);
  std::vector<std::int32_t> n_iter(b);
  std::vector<bool> converged(b);
  bool interrupted = false;
  std::exception_ptr error;
  {
    nb::gil_scoped_release release;
    std::vector<flashkm::KMeansResult<T>> results;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::thread worker([&] {
      try {
        results = flashkm::fit_batch(flashkm::BatchView<T>{X.data(), b, n, d}, o, init_view);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu);
      done = true;
      cv.notify_one();
    });
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu);
        if (cv.wait_for(lock, std::chrono::milliseconds(20), [&] { return done; })) break;
      }
      if (interrupted) continue;
      nb::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) {  // the KeyboardInterrupt stays set for the raise below
        interrupted = true;
        stop.store(true);
      }
    }
    worker.join();
    if (interrupted || error) results.clear();
    labels.reserve(results.size() * n);
    centroids.reserve(b * n_clusters * d);
    for (std::size_t i = 0; i < results.size(); ++i) {
      auto& r = results[i];
      labels.insert(labels.end(), r.labels.begin(), r.labels.end());
      centroids.insert(centroids.end(), r.centroids.begin(), r.centroids.end());
      inertia[i] = r.inertia;
      n_iter[i] = r.n_iter;
      converged[i] = r.converged;
      r = {};  // frees the member's copy as soon as it is stacked
    }
  }
  if (interrupted) throw nb::python_error();  // the KeyboardInterrupt PyErr_CheckSignals set
  if (error) std::rethrow_exception(error);
  nb::dict out;
  out["labels"] = to_numpy(std::move(labels), {b, n});
  out["centroids"] = to_numpy(std::move(centroids), {b, n_clusters, d});
  out["inertia"] = to_numpy(std::move(inertia), {b});
  out["n_iter"] = to_numpy(std::move(n_iter), {b});
  nb::list conv;
  for (bool c : converged) conv.append(c);
  out["converged"] = conv;
  return out;
}

// Greedy k-means++ seeds on their own: (centers, indices).
template <class T>
nb::tuple kmeans_plusplus(const Matrix<T>& X, std::size_t n_clusters, std::optional<Weights> sample_weight,
                          std::uint64_t seed, std::size_t n_local_trials, int n_threads,
                          std::optional<nb::callable> seed_callback) {
  flashkm::KMeansOptions o;
  o.seed = seed;
  o.n_threads = n_threads;
  o.sample_weight = weights_span(sample_weight);
  o.seed_callback = python_seed_callback(seed_callback);
  flashkm::SeedResult<T> r;
  {
    nb::gil_scoped_release release;
    r = flashkm::kmeans_plusplus(view(X), n_clusters, o, n_local_trials);
  }
  const std::size_t d = X.shape(1);
  return nb::make_tuple(to_numpy(std::move(r.centers), {n_clusters, d}), to_numpy(std::move(r.indices), {n_clusters}));
}

// Sparse CSR rows (SciPy's data, indices, indptr; the Python layer gives int32 indices and
// int64 indptr), used in place.
template <class T>
using Values = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Indices = nb::ndarray<const std::int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Offsets = nb::ndarray<const std::int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

template <class T>
flashkm::CsrView<T> csr_view(const Values<T>& data, const Indices& indices, const Offsets& indptr, std::size_t cols) {
  if (indptr.shape(0) == 0) throw flashkm::InvalidArgument("indptr is empty");
  const std::size_t rows = indptr.shape(0) - 1;
  const std::int64_t* off = indptr.data();
  if (off[0] < 0 || off[rows] < off[0] || static_cast<std::size_t>(off[rows]) > data.shape(0) ||
      data.shape(0) != indices.shape(0)) {
    throw flashkm::InvalidArgument("indptr, indices and data do not agree: indptr ends at " + std::to_string(off[rows]) +
                                   ", data holds " + std::to_string(data.shape(0)) + " values and indices " +
                                   std::to_string(indices.shape(0)));
  }
  return {data.data(), indices.data(), off, rows, cols};
}

template <class T>
nb::dict fit_sparse(const Values<T>& data, const Indices& indices, const Offsets& indptr, std::size_t cols,
                    std::size_t n_clusters, const std::string& init, std::optional<Matrix<T>> init_centroids,
                    int n_init, int max_iter, double tol, std::uint64_t seed, int n_threads,
                    std::optional<Weights> sample_weight, std::optional<nb::callable> callback,
                    const std::string& target, const std::string& metric, const std::string& prune,
                    std::optional<nb::callable> seed_callback, int init_rounds, double init_oversampling) {
  const flashkm::CsrView<T> X = csr_view(data, indices, indptr, cols);
  flashkm::KMeansOptions o = kmeans_options<T>(n_clusters, init, init_centroids, n_init, max_iter, tol, seed,
                                               n_threads, sample_weight, target, metric);
  o.prune = prune_of(prune);
  o.init_rounds = init_rounds;
  o.init_oversampling = init_oversampling;
  o.callback = python_callback(callback);
  o.seed_callback = python_seed_callback(seed_callback);
  flashkm::KMeansResult<T> r;
  {
    nb::gil_scoped_release release;
    r = flashkm::fit(X, o);
  }
  return result_dict(std::move(r));
}

template <class T>
nb::tuple kmeans_plusplus_sparse(const Values<T>& data, const Indices& indices, const Offsets& indptr,
                                 std::size_t cols, std::size_t n_clusters, std::optional<Weights> sample_weight,
                                 std::uint64_t seed, std::size_t n_local_trials, int n_threads) {
  const flashkm::CsrView<T> X = csr_view(data, indices, indptr, cols);
  flashkm::KMeansOptions o;
  o.seed = seed;
  o.n_threads = n_threads;
  o.sample_weight = weights_span(sample_weight);
  flashkm::SeedResult<T> r;
  {
    nb::gil_scoped_release release;
    r = flashkm::kmeans_plusplus(X, n_clusters, o, n_local_trials);
  }
  return nb::make_tuple(to_numpy(std::move(r.centers), {n_clusters, cols}), to_numpy(std::move(r.indices), {n_clusters}));
}

template <class T>
nb::ndarray<nb::numpy, std::int32_t> predict_sparse(const Values<T>& data, const Indices& indices,
                                                     const Offsets& indptr, std::size_t cols, const Matrix<T>& C,
                                                     int n_threads, const std::string& target,
                                                     const std::string& metric) {
  const flashkm::CsrView<T> X = csr_view(data, indices, indptr, cols);
  std::vector<std::int32_t> labels;
  {
    nb::gil_scoped_release release;
    labels = flashkm::predict(X, view(C), predict_options<T>(n_threads, target, std::nullopt, metric));
  }
  const std::size_t n = labels.size();
  return to_numpy(std::move(labels), {n});
}

template <class T>
nb::ndarray<nb::numpy, T> transform_sparse(const Values<T>& data, const Indices& indices, const Offsets& indptr,
                                           std::size_t cols, const Matrix<T>& C, int n_threads,
                                           const std::string& target, const std::string& metric) {
  const flashkm::CsrView<T> X = csr_view(data, indices, indptr, cols);
  std::vector<T> d;
  {
    nb::gil_scoped_release release;
    d = flashkm::transform(X, view(C), predict_options<T>(n_threads, target, std::nullopt, metric));
  }
  return to_numpy(std::move(d), {X.rows, C.shape(0)});
}

template <class T>
double score_sparse(const Values<T>& data, const Indices& indices, const Offsets& indptr, std::size_t cols,
                    const Matrix<T>& C, std::optional<Weights> w, int n_threads, const std::string& target,
                    const std::string& metric) {
  const flashkm::CsrView<T> X = csr_view(data, indices, indptr, cols);
  nb::gil_scoped_release release;
  return flashkm::score(X, view(C), predict_options<T>(n_threads, target, w, metric));
}

template <class T>
void bind_sparse(nb::module_& m) {
  m.def("fit_sparse", &fit_sparse<T>, "data"_a, "indices"_a, "indptr"_a, "n_cols"_a, "n_clusters"_a, "init"_a,
        "init_centroids"_a.none(), "n_init"_a, "max_iter"_a, "tol"_a, "seed"_a, "n_threads"_a,
        "sample_weight"_a.none(), "callback"_a.none(), "target"_a, "metric"_a = "euclidean", "prune"_a = "auto",
        "seed_callback"_a.none() = nb::none(), "init_rounds"_a = 5, "init_oversampling"_a = 2.0);
  m.def("kmeans_plusplus_sparse", &kmeans_plusplus_sparse<T>, "data"_a, "indices"_a, "indptr"_a, "n_cols"_a,
        "n_clusters"_a, "sample_weight"_a.none(), "seed"_a, "n_local_trials"_a, "n_threads"_a);
  m.def("predict_sparse", &predict_sparse<T>, "data"_a, "indices"_a, "indptr"_a, "n_cols"_a, "centroids"_a,
        "n_threads"_a, "target"_a, "metric"_a = "euclidean");
  m.def("transform_sparse", &transform_sparse<T>, "data"_a, "indices"_a, "indptr"_a, "n_cols"_a, "centroids"_a,
        "n_threads"_a, "target"_a, "metric"_a = "euclidean");
  m.def("score_sparse", &score_sparse<T>, "data"_a, "indices"_a, "indptr"_a, "n_cols"_a, "centroids"_a,
        "sample_weight"_a.none(), "n_threads"_a, "target"_a, "metric"_a = "euclidean");
}

template <class T>
void bind_dtype(nb::module_& m) {
  m.def("fit", &fit<T>, "X"_a, "n_clusters"_a, "init"_a, "init_centroids"_a.none(), "n_init"_a,
        "max_iter"_a, "tol"_a, "seed"_a, "n_threads"_a, "sample_weight"_a.none(),
        "callback"_a.none(), "target"_a, "metric"_a = "euclidean", "prune"_a = "auto",
        "seed_callback"_a.none() = nb::none(), "init_rounds"_a = 5, "init_oversampling"_a = 2.0);
  m.def("kmeans_plusplus", &kmeans_plusplus<T>, "X"_a, "n_clusters"_a, "sample_weight"_a.none(), "seed"_a,
        "n_local_trials"_a, "n_threads"_a, "seed_callback"_a.none() = nb::none());
  m.def("predict", &predict<T>, "X"_a, "centroids"_a, "n_threads"_a, "target"_a, "metric"_a = "euclidean");
  m.def("transform", &transform<T>, "X"_a, "centroids"_a, "n_threads"_a, "target"_a,
        "metric"_a = "euclidean");
  m.def("score", &score<T>, "X"_a, "centroids"_a, "sample_weight"_a.none(), "n_threads"_a,
        "target"_a, "metric"_a = "euclidean");
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "flashkm C++ engine (private; use flashkm.KMeans)";
  register_errors();
  bind_dtype<float>(m);
  bind_dtype<double>(m);
  bind_sparse<float>(m);
  bind_sparse<double>(m);
  m.def("batch_fit", &batch_fit<float>, "X"_a, "n_clusters"_a, "init"_a, "init_centroids"_a.none(),
        "max_iter"_a, "tol"_a, "seed"_a, "n_threads"_a, "metric"_a = "euclidean");
  m.def("batch_fit", &batch_fit<double>, "X"_a, "n_clusters"_a, "init"_a, "init_centroids"_a.none(),
        "max_iter"_a, "tol"_a, "seed"_a, "n_threads"_a, "metric"_a = "euclidean");
  m.def("fit_half", &fit_half, "X"_a, "kind"_a, "n_clusters"_a, "init"_a, "init_centroids"_a.none(), "n_init"_a,
        "max_iter"_a, "tol"_a, "seed"_a, "n_threads"_a, "sample_weight"_a.none(), "callback"_a.none(),
        "target"_a, "metric"_a = "euclidean", "prune"_a = "auto", "seed_callback"_a.none() = nb::none(),
        "init_rounds"_a = 5, "init_oversampling"_a = 2.0);
  m.def("predict_half", &predict_half, "X"_a, "kind"_a, "centroids"_a, "n_threads"_a, "target"_a,
        "metric"_a = "euclidean");
  m.def("available_targets", &flashkm::available_targets,
        "SIMD targets this CPU can run for float32/float64 input, best first, then 'reference'. "
        "FLASHKM_TARGET=<name> forces one.");
  m.def("available_half_targets", &flashkm::available_half_targets,
        "Targets for float16/bfloat16 input; the first is the default: 'AMX_BF16' where the CPU has "
        "AMX-BF16 (tile scores filter, float32 re-scores: bitwise the float32 fit), the SIMD targets "
        "(rows widened to float32), then 'AVX512_BF16' where present (only when named).");
  m.def("default_target", &flashkm::default_target, "The SIMD target float input runs on by default.");
}
