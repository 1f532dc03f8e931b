// Private header of the CPU room: the per-row state of a run that both CPU engines (CpuEngine over
// dense rows, SparseEngine over CSR rows) keep the same way (core/engine.hpp: the engine owns each
// row's label and distance from begin_run to labels()), and the weights its Lloyd steps use.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "core/engine.hpp"

namespace flashkm::detail {

template <class T>
class RunState {
 public:
  /// n rows with the caller's weights (nullptr: every row weighs 1), kept, not copied.
  RunState(std::size_t n, const double* weights) : n_(n), weights_(weights), lloyd_w_(weights) {}
  // lloyd_w_ may point into cosine_w_: not copied.
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  /// Starts a run: every label -1, every distance 0. Cosine's Lloyd steps weigh each row by
  /// w / ||x|| (their sums are then those of the normalised rows): taken at the first run that
  /// needs them from sq_norms(out), which writes each row's squared norm in float64 (a pass
  /// over X that predict and transform, which start no run, never pay). All-zero rows weigh 0.
  template <class SqNorms>
  void begin(bool cosine, SqNorms&& sq_norms) {
    labels_.assign(n_, -1);
    dist_.assign(n_, T(0));
    if (cosine && cosine_w_.size() != n_) {
      cosine_w_.assign(n_, 0.0);
      sq_norms(cosine_w_.data());
      for (std::size_t i = 0; i < n_; ++i) {
        const double sq = cosine_w_[i];
        const double w = weights_ ? weights_[i] : 1.0;
        cosine_w_[i] = sq > 0 ? w / std::sqrt(sq) : 0.0;
      }
      lloyd_w_ = cosine_w_.data();
    }
  }

  /// The run's labels and distances for a Lloyd step; std::logic_error before begin().
  std::int32_t* step_labels() {
    if (labels_.size() != n_) throw std::logic_error("Engine::assign_update called before begin_run");
    return labels_.data();
  }
  T* step_dist() { return dist_.data(); }

  const std::int32_t* labels() const { return labels_.data(); }
  const T* dist() const { return dist_.data(); }
  /// The Lloyd steps' weights: the caller's, or cosine's w / ||x|| once a run took them.
  const double* lloyd_w() const { return lloyd_w_; }
  /// The same from row `first` on (nullptr where every row weighs 1).
  const double* lloyd_w(std::size_t first) const { return lloyd_w_ ? lloyd_w_ + first : nullptr; }

  /// The sum of the caller's weights (n where there are none), in row order.
  double total_weight() const {
    if (!weights_) return static_cast<double>(n_);
    double total = 0;
    for (std::size_t i = 0; i < n_; ++i) total += weights_[i];
    return total;
  }

  /// Engine::farthest over dist (the run's distances, or fresh ones against the same
  /// centroids): the m rows farthest from their centroids, farthest first, ties by lowest
  /// index. row(i, out) writes row i as the centroids see it (dim values); row_offset is the
  /// engine's first row in the whole data set.
  template <class Row>
  std::vector<FarPoint> farthest(const T* dist, std::size_t m, std::size_t row_offset, std::size_t dim,
                                 Row&& row) const {
    m = std::min(m, n_);
    std::vector<std::size_t> order(n_);
    for (std::size_t i = 0; i < n_; ++i) order[i] = i;
    auto farther = [&](std::size_t a, std::size_t b) { return dist[a] > dist[b] || (dist[a] == dist[b] && a < b); };
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(m), order.end(), farther);
    std::vector<FarPoint> out(m);
    for (std::size_t t = 0; t < m; ++t) {
      const std::size_t i = order[t];
      out[t].dist = static_cast<double>(dist[i]);
      out[t].index = row_offset + i;
      out[t].label = labels_[i];
      out[t].weight = lloyd_w_ ? lloyd_w_[i] : 1.0;
      out[t].row.resize(dim);
      row(i, out[t].row.data());
    }
    return out;
  }

 private:
  std::size_t n_;
  const double* weights_;
  const double* lloyd_w_;
  std::vector<double> cosine_w_;
  std::vector<std::int32_t> labels_;
  std::vector<T> dist_;
};

}  // namespace flashkm::detail
