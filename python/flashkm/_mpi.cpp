// nanobind bindings of flashkm's MPI engine (the private extension module flashkm._mpi, built
// when MPI is found; used by flashkm.mpi). Each rank passes its own rows; the communicator
// arrives as its Fortran handle (mpi4py: comm.py2f()), so no mpi4py header is needed here.
#include "_bindings.hpp"
#include "flashkm/distributed.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace flashkm_py;

namespace {

// Seeding progress for the verbose output (flashkm.mpi.KMeans passes it on rank 0 only). It never
// throws: an exception on one rank would leave the others waiting in a collective. An error in
// the callback (Ctrl-C's KeyboardInterrupt while it printed) sets *interrupted, which the
// iteration callback turns into a stop every rank agrees on at the end of the first iteration.
flashkm::SeedCallback seed_reporter(const std::optional<nb::callable>& callback, bool* interrupted) {
  if (!callback) return {};
  return [&callback, interrupted](const flashkm::SeedStats& s) {
    nb::gil_scoped_acquire gil;
    try {
      (*callback)(seed_stats_dict(s));
    } catch (const nb::python_error&) {
      *interrupted = true;
    }
  };
}

// mpi::fit over this rank's rows. The callback (Python, with the GIL) may ask to stop; so may
// Ctrl-C. A stop is never an exception here: an exception on one rank would leave the others
// waiting in a collective, while a stop is agreed by all ranks at the end of the iteration.
template <class T>
nb::dict fit(const Matrix<T>& X, std::size_t n_clusters, const std::string& init,
             std::optional<Matrix<T>> init_centroids, int n_init, int max_iter, double tol, std::uint64_t seed,
             int n_threads, std::optional<Weights> sample_weight, std::optional<nb::callable> callback,
             const std::string& metric, const std::string& prune, int comm_fortran,
             std::optional<nb::callable> seed_callback, int init_rounds, double init_oversampling) {
  flashkm::KMeansOptions o = kmeans_options<T>(n_clusters, init, init_centroids, n_init, max_iter, tol, seed,
                                               n_threads, sample_weight, "", metric);
  o.prune = prune_of(prune);
  o.init_rounds = init_rounds;
  o.init_oversampling = init_oversampling;
  bool interrupted = false;
  o.seed_callback = seed_reporter(seed_callback, &interrupted);
  o.callback = [&](const flashkm::IterationStats& s) {
    nb::gil_scoped_acquire gil;
    if (interrupted || PyErr_CheckSignals() != 0) {
      PyErr_Clear();
      interrupted = true;
      return false;
    }
    if (!callback) return true;
    nb::object r = (*callback)(stats_dict(s));
    return r.is_none() || nb::cast<bool>(r);
  };
  flashkm::KMeansResult<T> r;
  {
    nb::gil_scoped_release release;
    r = flashkm::mpi::fit(view(X), o, flashkm::mpi::Comm{comm_fortran});
  }
  nb::dict out = result_dict(std::move(r));
  out["interrupted"] = interrupted;
  return out;
}

template <class T>
void bind(nb::module_& m) {
  m.def("fit", &fit<T>, "X"_a, "n_clusters"_a, "init"_a, "init_centroids"_a.none(), "n_init"_a, "max_iter"_a,
        "tol"_a, "seed"_a, "n_threads"_a, "sample_weight"_a.none(), "callback"_a.none(), "metric"_a, "prune"_a,
        "comm"_a, "seed_callback"_a.none() = nb::none(), "init_rounds"_a = 5, "init_oversampling"_a = 2.0);
}

}  // namespace

NB_MODULE(_mpi, m) {
  m.doc() = "flashkm's MPI engine (private; use flashkm.mpi.KMeans)";
  register_errors();
  bind<float>(m);
  bind<double>(m);
}
