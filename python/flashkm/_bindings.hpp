// Shared by the nanobind modules flashkm._core and flashkm._mpi: array types, conversions of
// results and options between Python and the C++ API.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "flashkm/flashkm.hpp"

namespace flashkm_py {

namespace nb = nanobind;

template <class T>
using Matrix = nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Weights = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// Hands a std::vector to numpy without a copy: the array owns the vector through a capsule.
template <class T>
nb::ndarray<nb::numpy, T> to_numpy(std::vector<T>&& v, std::initializer_list<std::size_t> shape) {
  auto* owner = new std::vector<T>(std::move(v));
  nb::capsule cap(owner, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(owner->data(), shape, cap);
}

template <class T>
flashkm::MatrixView<T> view(const Matrix<T>& a) {
  return {a.data(), a.shape(0), a.shape(1)};
}

inline std::span<const double> weights_span(const std::optional<Weights>& w) {
  if (!w) return {};
  return {w->data(), w->shape(0)};
}

inline nb::dict stats_dict(const flashkm::IterationStats& s) {
  nb::dict d;
  d["iteration"] = s.iteration;
  d["inertia"] = s.inertia;
  d["center_shift"] = s.center_shift;
  d["labels_changed"] = s.labels_changed;
  d["distances"] = s.distances;
  d["empty_relocated"] = s.empty_relocated;
  d["seconds"] = s.seconds;
  d["init_run"] = s.init_run;
  return d;
}

inline nb::dict seed_stats_dict(const flashkm::SeedStats& s) {
  nb::dict d;
  d["phase"] = s.phase;
  d["done"] = s.done;
  d["total"] = s.total;
  d["distances"] = s.distances;
  d["seconds"] = s.seconds;
  d["seconds_left"] = s.seconds_left;
  d["init_run"] = s.init_run;
  return d;
}

inline flashkm::Metric metric_of(const std::string& name) {
  if (name == "euclidean") return flashkm::Metric::kEuclidean;
  if (name == "cosine") return flashkm::Metric::kCosine;
  if (name == "dot") return flashkm::Metric::kDot;
  throw flashkm::InvalidArgument("metric must be 'euclidean', 'cosine' or 'dot', got '" + name + "'");
}

inline flashkm::Prune prune_of(const std::string& name) {
  if (name == "auto") return flashkm::Prune::kAuto;
  if (name == "on") return flashkm::Prune::kOn;
  if (name == "off") return flashkm::Prune::kOff;
  throw flashkm::InvalidArgument("prune must be 'auto', 'on' or 'off', got '" + name + "'");
}

// The init argument: 'k-means++', 'k-means||', 'random', or 'explicit' when centroids are given.
inline flashkm::InitMethod init_method(const std::string& init, bool have_centroids) {
  if (init == "k-means++") return flashkm::InitMethod::kMeansPlusPlus;
  if (init == "k-means||") return flashkm::InitMethod::kMeansParallel;
  if (init == "random") return flashkm::InitMethod::kRandom;
  if (init == "explicit" && have_centroids) return flashkm::InitMethod::kExplicit;
  throw flashkm::InvalidArgument("init must be 'k-means++', 'k-means||', 'random' or explicit centroids");
}

template <class T>
nb::dict result_dict(flashkm::KMeansResult<T>&& r) {
  nb::list history;
  for (const auto& s : r.history) history.append(stats_dict(s));
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
  out["target"] = r.target;
  out["init_seconds"] = r.init_seconds;
  return out;
}

// The fit options every binding sets the same way.
template <class T>
flashkm::KMeansOptions kmeans_options(std::size_t n_clusters, const std::string& init,
                                      const std::optional<Matrix<T>>& init_centroids, int n_init, int max_iter,
                                      double tol, std::uint64_t seed, int n_threads,
                                      const std::optional<Weights>& sample_weight, const std::string& target,
                                      const std::string& metric) {
  flashkm::KMeansOptions o;
  o.metric = metric_of(metric);
  o.n_clusters = n_clusters;
  o.init = init_method(init, init_centroids.has_value());
  if (o.init == flashkm::InitMethod::kExplicit) o.init_centroids = view(*init_centroids);
  o.n_init = n_init;
  o.max_iter = max_iter;
  o.tol = tol;
  o.seed = seed;
  o.n_threads = n_threads;
  o.sample_weight = weights_span(sample_weight);
  o.target = target;
  return o;
}

// flashkm's errors as ValueError (scikit-learn's convention for bad input).
inline void register_errors() {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const flashkm::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
}

}  // namespace flashkm_py
