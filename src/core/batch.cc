// fit_batch: B independent fits, members spread over threads or threads spread over a member.
#include "flashkm/batch.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <exception>
#include <limits>
#include <string>
#include <type_traits>
#include <variant>

#include "core/validate.hpp"
#include "flashkm/errors.hpp"

namespace flashkm {
namespace {

// Checks everything that is the same for every member, so that such errors are not blamed on
// one member. Per-member values (NaN, bad weights) are left to fit().
template <class T>
void check_batch(BatchView<T> X, const KMeansOptions& options, BatchView<T> init) {
  if (X.batch == 0) throw InvalidArgument("X has 0 members (batch size must be >= 1)");
  detail::check_view(X.member(0), "X");
  if (X.rows * X.cols > std::numeric_limits<std::size_t>::max() / X.batch) {
    throw InvalidArgument("X of " + std::to_string(X.batch) + " x " + std::to_string(X.rows) +
                          " x " + std::to_string(X.cols) + " values overflows size_t");
  }
  if (!options.sample_weight.empty() && options.sample_weight.size() != X.batch * X.rows) {
    throw InvalidArgument("sample_weight has " + std::to_string(options.sample_weight.size()) +
                          " values but the batch has " + std::to_string(X.batch) + " x " +
                          std::to_string(X.rows) + " rows");
  }
  const bool single_init_given =
      std::visit([](auto view) { return view.data != nullptr; }, options.init_centroids);
  if (single_init_given) {
    throw InvalidArgument("fit_batch takes explicit centroids in its init_centroids argument "
                          "(B x K x D), not in options.init_centroids");
  }
  if (options.init == InitMethod::kExplicit) {
    if (init.data == nullptr) {
      throw InvalidArgument("init = explicit but no init_centroids were given");
    }
    if (init.batch != X.batch || init.rows != options.n_clusters || init.cols != X.cols) {
      throw InvalidArgument("init_centroids has shape (" + std::to_string(init.batch) + ", " +
                            std::to_string(init.rows) + ", " + std::to_string(init.cols) +
                            ") but (batch, n_clusters, n_features) = (" + std::to_string(X.batch) +
                            ", " + std::to_string(options.n_clusters) + ", " +
                            std::to_string(X.cols) + ")");
    }
  } else if (init.data != nullptr) {
    throw InvalidArgument("init_centroids were given but init is not explicit");
  }
  // The option ranges; the explicit centroids are checked per member (their values may fail).
  KMeansOptions shared = options;
  shared.init = InitMethod::kRandom;
  detail::check_options(shared, X.rows, X.cols, std::is_same_v<T, float>);
  if (!options.target.empty()) {
    const auto names = available_targets();
    if (std::find(names.begin(), names.end(), options.target) == names.end()) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      throw InvalidArgument("SIMD target '" + options.target +
                            "' is unknown or not supported by this CPU; available: " + list);
    }
  }
}

// Fits member b into `out`; returns its error (flashkm errors as the same type, the message
// prefixed with the member) instead of throwing, because an exception must not leave an OpenMP
// region.
template <class T>
std::exception_ptr fit_member(BatchView<T> X, const KMeansOptions& options, BatchView<T> init,
                              std::size_t b, int n_threads, KMeansResult<T>& out) noexcept {
  try {
    const std::string prefix = "member " + std::to_string(b) + ": ";
    try {
      KMeansOptions o = options;
      o.n_threads = n_threads;
      if (init.data != nullptr) o.init_centroids = init.member(b);
      if (!o.sample_weight.empty()) o.sample_weight = o.sample_weight.subspan(b * X.rows, X.rows);
      if (options.callback) {
        o.callback = [&options, b](const IterationStats& s) {
          IterationStats t = s;
          t.member = b;
          return options.callback(t);
        };
      }
      out = fit(X.member(b), o);
    } catch (const InvalidData& e) {
      throw InvalidData(prefix + e.what());
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(prefix + e.what());
    } catch (const Error& e) {
      throw Error(prefix + e.what());
    }
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

}  // namespace

template <class T>
std::vector<KMeansResult<T>> fit_batch(BatchView<T> X, const KMeansOptions& options,
                                       BatchView<T> init_centroids) {
  check_batch(X, options, init_centroids);
  // The caller's callback, serialised, and once it said stop (or threw) every member stops.
  KMeansOptions opts = options;
  std::mutex callback_mutex;
  std::atomic<bool> stop{false};
  if (options.callback) {
    opts.callback = [&](const IterationStats& s) {
      if (stop.load(std::memory_order_relaxed)) return false;
      std::lock_guard<std::mutex> lock(callback_mutex);
      if (stop.load(std::memory_order_relaxed)) return false;
      try {
        if (!options.callback(s)) stop.store(true, std::memory_order_relaxed);
      } catch (...) {
        stop.store(true, std::memory_order_relaxed);
        throw;
      }
      return !stop.load(std::memory_order_relaxed);
    };
  }
  const std::size_t batch = X.batch;
  const int threads = options.n_threads > 0 ? options.n_threads : omp_get_max_threads();
  std::vector<KMeansResult<T>> results(batch);
  std::vector<std::exception_ptr> errors(batch);
  // Results do not depend on the thread count, so the split is free to choose: whole members
  // per thread when there are enough of them (no synchronisation inside a fit, no idle threads
  // in its serial parts), otherwise every thread on one member at a time.
  if (threads > 1 && batch >= static_cast<std::size_t>(threads)) {
    std::atomic<std::size_t> first_failed{batch};
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (std::size_t b = 0; b < batch; ++b) {
      // A member after a failed one cannot change which error is reported: skip it.
      if (b > first_failed.load(std::memory_order_relaxed)) continue;
      errors[b] = fit_member(X, opts, init_centroids, b, 1, results[b]);
      if (errors[b]) {
        std::size_t seen = first_failed.load(std::memory_order_relaxed);
        while (b < seen && !first_failed.compare_exchange_weak(seen, b, std::memory_order_relaxed)) {
        }
      }
    }
  } else {
    for (std::size_t b = 0; b < batch; ++b) {
      errors[b] = fit_member(X, opts, init_centroids, b, options.n_threads, results[b]);
      if (errors[b]) break;
    }
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return results;
}

template std::vector<KMeansResult<float>> fit_batch<float>(BatchView<float>, const KMeansOptions&,
                                                           BatchView<float>);
template std::vector<KMeansResult<double>> fit_batch<double>(BatchView<double>, const KMeansOptions&,
                                                             BatchView<double>);

}  // namespace flashkm
