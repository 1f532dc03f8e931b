// Validation of user input: every failure names the value and where it was found.
#include "core/validate.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <variant>

namespace flashkm::detail {

template <class T>
void check_view(MatrixView<T> v, const std::string& what) {
  if (v.data == nullptr) throw InvalidArgument(what + ": data pointer is null");
  if (v.rows == 0) throw InvalidArgument(what + " has 0 rows");
  if (v.cols == 0) throw InvalidArgument(what + " has 0 columns");
  if (v.stride < v.cols) {
    throw InvalidArgument(what + ": row stride " + std::to_string(v.stride) +
                          " is smaller than the number of columns " + std::to_string(v.cols));
  }
  if (v.rows > std::numeric_limits<std::uint32_t>::max()) {
    throw InvalidArgument(what + " has " + std::to_string(v.rows) +
                          " rows; at most 2^32 - 1 are supported in memory");
  }
}

template <class T>
void check_finite(MatrixView<T> v, const std::string& what) {
  for (std::size_t i = 0; i < v.rows; ++i) {
    const T* row = v.row(i);
    for (std::size_t j = 0; j < v.cols; ++j) {
      if (!std::isfinite(row[j])) {
        std::ostringstream msg;
        msg << what << " contains " << row[j] << " at row " << i << ", column " << j;
        throw InvalidData(msg.str());
      }
    }
  }
}

void check_weights(std::span<const double> w, std::size_t n) {
  if (w.empty()) return;
  if (w.size() != n) {
    throw InvalidArgument("sample_weight has " + std::to_string(w.size()) +
                          " values but X has " + std::to_string(n) + " rows");
  }
  double total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(w[i]) || w[i] < 0) {
      std::ostringstream msg;
      msg << "sample_weight[" << i << "] = " << w[i] << " is "
          << (std::isfinite(w[i]) ? "negative" : "not finite");
      throw InvalidData(msg.str());
    }
    total += w[i];
  }
  if (!(total > 0)) throw InvalidData("sample_weight: all " + std::to_string(n) + " weights are zero");
}

void check_threads(int n_threads) {
  if (n_threads < 0) {
    throw InvalidArgument("n_threads = " + std::to_string(n_threads) + " must be >= 0 (0 = all cores)");
  }
}

void check_n_clusters(std::size_t n_clusters, std::size_t n) {
  if (n_clusters < 1 || n_clusters > n) {
    throw InvalidArgument("n_clusters = " + std::to_string(n_clusters) + " must be in [1, " + std::to_string(n) +
                          "] (the number of rows of X)");
  }
}

void check_options(const KMeansOptions& o, std::size_t n, std::size_t dim, bool index_in_float) {
  check_n_clusters(o.n_clusters, n);
  // The float kernels carry centroid indices in float lanes, exact up to 2^24.
  if (index_in_float && o.n_clusters > (std::size_t{1} << 24)) {
    throw InvalidArgument("n_clusters = " + std::to_string(o.n_clusters) +
                          " exceeds 2^24, the largest supported for float32 data");
  }
  if (o.max_iter < 1) throw InvalidArgument("max_iter = " + std::to_string(o.max_iter) + " must be >= 1");
  if (o.n_init < 1) throw InvalidArgument("n_init = " + std::to_string(o.n_init) + " must be >= 1");
  // Checked whatever `init` says: a distributed engine seeds large-K k-means++ with k-means||.
  if (!(o.init_oversampling > 0) || !std::isfinite(o.init_oversampling)) {
    throw InvalidArgument("init_oversampling = " + std::to_string(o.init_oversampling) +
                          " must be a finite number > 0 (rows drawn per k-means|| round, times n_clusters)");
  }
  if (o.init_rounds < 1) {
    throw InvalidArgument("init_rounds = " + std::to_string(o.init_rounds) + " must be >= 1");
  }
  if (!(o.tol >= 0) || !std::isfinite(o.tol)) {
    std::ostringstream msg;
    msg << "tol = " << o.tol << " must be a finite number >= 0";
    throw InvalidArgument(msg.str());
  }
  check_threads(o.n_threads);
  if (o.prune == Prune::kOn && o.metric == Metric::kDot) {
    throw InvalidArgument("prune = on is not available for the dot metric: inner products obey no triangle "
                          "inequality to bound them with (use auto or off)");
  }
  if (o.init == InitMethod::kExplicit) {
    std::visit(
        [&](auto view) {
          check_view(view, "init_centroids");
          if (view.rows != o.n_clusters || view.cols != dim) {
            throw InvalidArgument("init_centroids has shape (" + std::to_string(view.rows) + ", " +
                                  std::to_string(view.cols) + ") but (n_clusters, n_features) = (" +
                                  std::to_string(o.n_clusters) + ", " + std::to_string(dim) + ")");
          }
          check_finite(view, "init_centroids");
        },
        o.init_centroids);
  }
}

template void check_view<float>(MatrixView<float>, const std::string&);
template void check_view<double>(MatrixView<double>, const std::string&);
template void check_finite<float>(MatrixView<float>, const std::string&);
template void check_finite<double>(MatrixView<double>, const std::string&);

}  // namespace flashkm::detail
