// nanobind bindings of flashkm's MPI engine (the private extension module flashkm._mpi, built
// when MPI is found; used by flashkm.mpi). Each rank passes its own rows; the communicator
// arrives as its Fortran handle (mpi4py: comm.py2f()), so no mpi4py header is needed here.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flashkm/distributed.hpp"
#include "flashkm/flashkm.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

template <class T>
using Matrix = nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Weights = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

template <class T>
nb::ndarray<nb::numpy, T> to_numpy(std::vector<T>&& v, std::initializer_list<std::size_t> shape) {
  auto* owner = new std::vector<T>(std::move(v));
  nb::capsule cap(owner, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(owner->data(), shape, cap);
}

flashkm::Metric metric_of(const std::string& name) {
  if (name == "euclidean") return flashkm::Metric::kEuclidean;
  if (name == "cosine") return flashkm::Metric::kCosine;
  if (name == "dot") return flashkm::Metric::kDot;
  throw flashkm::InvalidArgument("metric must be 'euclidean', 'cosine' or 'dot', got '" + name + "'");
}

flashkm::Prune prune_of(const std::string& name) {
  if (name == "auto") return flashkm::Prune::kAuto;
  if (name == "on") return flashkm::Prune::kOn;
  if (name == "off") return flashkm::Prune::kOff;
  throw flashkm::InvalidArgument("prune must be 'auto', 'on' or 'off', got '" + name + "'");
}

flashkm::InitMethod init_method(const std::string& init, bool have_centroids) {
  if (init == "k-means++") return flashkm::InitMethod::kMeansPlusPlus;
  if (init == "k-means||") return flashkm::InitMethod::kMeansParallel;
  if (init == "random") return flashkm::InitMethod::kRandom;
  if (init == "explicit" && have_centroids) return flashkm::InitMethod::kExplicit;
  throw flashkm::InvalidArgument("init must be 'k-means++', 'k-means||', 'random' or explicit centroids");
}

// mpi::fit over this rank's rows. The callback (Python, with the GIL) may ask to stop; so may
// Ctrl-C. A stop is never an exception here: an exception on one rank would leave the others
// waiting in a collective, while a stop is agreed by all ranks at the end of the iteration.
template <class T>
nb::dict fit(const Matrix<T>& X, std::size_t n_clusters, const std::string& init,
             std::optional<Matrix<T>> init_centroids, int n_init, int max_iter, double tol, std::uint64_t seed,
             int n_threads, std::optional<Weights> sample_weight, std::optional<nb::callable> callback,
             const std::string& metric, const std::string& prune, int comm_fortran) {
  flashkm::KMeansOptions o;
  o.metric = metric_of(metric);
  o.n_clusters = n_clusters;
  o.init = init_method(init, init_centroids.has_value());
  if (o.init == flashkm::InitMethod::kExplicit) {
    o.init_centroids = flashkm::MatrixView<T>(init_centroids->data(), init_centroids->shape(0), init_centroids->shape(1));
  }
  o.n_init = n_init;
  o.max_iter = max_iter;
  o.tol = tol;
  o.seed = seed;
  o.n_threads = n_threads;
  if (sample_weight) o.sample_weight = {sample_weight->data(), sample_weight->shape(0)};
  o.prune = prune_of(prune);
  bool interrupted = false;
  o.callback = [&](const flashkm::IterationStats& s) {
    nb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      PyErr_Clear();
      interrupted = true;
      return false;
    }
    if (!callback) return true;
    nb::dict d;
    d["iteration"] = s.iteration;
    d["inertia"] = s.inertia;
    d["center_shift"] = s.center_shift;
    d["labels_changed"] = s.labels_changed;
    d["distances"] = s.distances;
    d["seconds"] = s.seconds;
    d["init_run"] = s.init_run;
    nb::object r = (*callback)(d);
    return r.is_none() || nb::cast<bool>(r);
  };
  const flashkm::MatrixView<T> view(X.data(), X.shape(0), X.shape(1));
  flashkm::KMeansResult<T> r;
  {
    nb::gil_scoped_release release;
    r = flashkm::mpi::fit(view, o, flashkm::mpi::Comm{comm_fortran});
  }
  nb::list history;
  for (const auto& s : r.history) {
    nb::dict d;
    d["iteration"] = s.iteration;
    d["inertia"] = s.inertia;
    d["center_shift"] = s.center_shift;
    d["labels_changed"] = s.labels_changed;
    d["empty_relocated"] = s.empty_relocated;
    d["distances"] = s.distances;
    d["seconds"] = s.seconds;
    d["init_run"] = s.init_run;
    history.append(d);
  }
  nb::dict out;
  const std::size_t n = r.labels.size();
  out["centroids"] = to_numpy(std::move(r.centroids), {r.n_clusters, r.n_features});
  out["labels"] = to_numpy(std::move(r.labels), {n});
  out["inertia"] = r.inertia;
  out["n_iter"] = r.n_iter;
  out["converged"] = r.converged;
  out["stop_reason"] = flashkm::to_string(r.stop_reason);
  out["best_init"] = r.best_init;
  out["history"] = history;
  out["init_seconds"] = r.init_seconds;
  out["interrupted"] = interrupted;
  return out;
}

template <class T>
void bind(nb::module_& m) {
  m.def("fit", &fit<T>, "X"_a, "n_clusters"_a, "init"_a, "init_centroids"_a.none(), "n_init"_a, "max_iter"_a,
        "tol"_a, "seed"_a, "n_threads"_a, "sample_weight"_a.none(), "callback"_a.none(), "metric"_a, "prune"_a,
        "comm"_a);
}

}  // namespace

NB_MODULE(_mpi, m) {
  m.doc() = "flashkm's MPI engine (private; use flashkm.mpi.KMeans)";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const flashkm::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  bind<float>(m);
  bind<double>(m);
}
