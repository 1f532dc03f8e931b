// The CPU engine over sparse CSR rows: validation, the sparse FlashAssign kernels on threads
// (sparse_kernels.hpp), a Sort-Inverse Update over sparse rows, and the seeding interface.
// Every float64 reduction runs in an order fixed by the rows alone, so results do not depend
// on the thread count.
#include "cpu/sparse_engine.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/seeding.hpp"
#include "cpu/aligned_buffer.hpp"
#include "cpu/sparse_kernels.hpp"
#include "flashkm/errors.hpp"

namespace flashkm::detail {
namespace {

// Rows per block of the float64 sums over rows (potentials): their partial sums are added in
// block order, whatever the thread that computed them.
constexpr std::size_t kSumRows = 1024;

// Rows per call of the distance kernel when seeding (a scratch of kSeedRows x m distances).
constexpr std::size_t kSeedRows = 256;

template <class T>
const SparseKernels<T>* find_sparse_table(const std::string& option) {
  std::string wanted = option;
  if (wanted.empty()) {
    if (const char* env = std::getenv("FLASHKM_TARGET")) wanted = env;
  }
  const auto tables = sparse_kernel_tables<T>();
  if (wanted.empty()) return tables.front();
  for (const auto* t : tables) {
    if (wanted == t->name) return t;
  }
  std::string names;
  for (const auto* t : tables) names += std::string(names.empty() ? "" : ", ") + t->name;
  throw InvalidArgument("SIMD target '" + wanted + "' is unknown or not supported by this CPU for sparse input; available: " +
                        names);
}

template <class T>
class SparseEngine final : public Engine<T> {
 public:
  SparseEngine(CsrView<T> X, std::span<const double> weights, int n_threads, const SparseKernels<T>* table)
      : x_(X),
        n_(X.rows),
        dim_(X.cols),
        weights_(weights.empty() ? nullptr : weights.data()),
        threads_(n_threads > 0 ? n_threads : omp_get_max_threads()),
        table_(table),
        shift_(X.cols, 0.0),
        mean_(X.cols, 0.0) {
    validate();
    ref_ = CsrRef<T>{x_.values, x_.col_indices, x_.row_offsets, xnorm_.data()};
  }

  std::size_t rows() const override { return n_; }
  std::size_t cols() const override { return dim_; }
  // Sparse rows stay uncentred: centroids cross the interface in X's own coordinates.
  const double* shift() const override { return shift_.data(); }
  const char* target() const override { return table_->name; }
  const double* weights() const override { return weights_; }
  const double* mean() const override { return mean_.data(); }
  // The mean is kept (for mean()), but the rows are never centred on it.
  void set_mean(const double* mean) override { std::copy_n(mean, dim_, mean_.begin()); }

  double mean_variance() override {
    // Per column: the sum over its non-zeros of (x - m)^2 plus m^2 for each of its zeros.
    std::vector<double> sq(dim_, 0.0);
    std::vector<std::size_t> count(dim_, 0);
    for (std::size_t i = 0; i < n_; ++i) {
      for (std::int64_t p = x_.row_offsets[i]; p < x_.row_offsets[i + 1]; ++p) {
        const auto j = static_cast<std::size_t>(x_.col_indices[p]);
        const double e = static_cast<double>(x_.values[p]) - mean_[j];
        sq[j] += e * e;
        ++count[j];
      }
    }
    double total = 0;
    for (std::size_t j = 0; j < dim_; ++j) {
      const double v = sq[j] + static_cast<double>(n_ - count[j]) * mean_[j] * mean_[j];
      total += v / static_cast<double>(n_);
    }
    return total / static_cast<double>(dim_);
  }

  void row_centred(std::size_t i, double* out) override {
    std::fill_n(out, dim_, 0.0);
    for (std::int64_t p = x_.row_offsets[i]; p < x_.row_offsets[i + 1]; ++p) {
      out[x_.col_indices[p]] = static_cast<double>(x_.values[p]);
    }
  }

  std::vector<FarPoint> farthest(const std::int32_t* labels, const T* dist, std::size_t m) override {
    m = std::min(m, n_);
    std::vector<std::size_t> order(n_);
    for (std::size_t i = 0; i < n_; ++i) order[i] = i;
    auto farther = [&](std::size_t a, std::size_t b) { return dist[a] > dist[b] || (dist[a] == dist[b] && a < b); };
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(m), order.end(), farther);
    std::vector<FarPoint> out(m);
    for (std::size_t t = 0; t < m; ++t) {
      const std::size_t i = order[t];
      out[t].dist = static_cast<double>(dist[i]);
      out[t].index = i;
      out[t].label = labels[i];
      out[t].weight = weights_ ? weights_[i] : 1.0;
      out[t].row.resize(dim_);
      row_centred(i, out[t].row.data());
    }
    return out;
  }

  void set_weights(const double* weights) override { weights_ = weights; }

  std::vector<double> normalising_weights(const double* weights) override {
    std::vector<double> out(n_);
    for_row_tasks(0, n_, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t i = r0; i < r1; ++i) {
        double sq = 0;
        for (std::int64_t p = x_.row_offsets[i]; p < x_.row_offsets[i + 1]; ++p) {
          const double v = static_cast<double>(x_.values[p]);
          sq += v * v;
        }
        const double w = weights ? weights[i] : 1.0;
        out[i] = sq > 0 ? w / std::sqrt(sq) : 0.0;
      }
    });
    return out;
  }

  double total_weight() override {
    if (!weights_) return static_cast<double>(n_);
    double total = 0;
    for (std::size_t i = 0; i < n_; ++i) total += weights_[i];
    return total;
  }

  void set_inner_product(bool on) override { inner_product_ = on; }

  // No bounded assignment over sparse rows (docs/KERNELS.md, "Sparse rows").
  bool begin_run(Prune, std::size_t) override { return false; }
  std::uint64_t last_distances() const override { return last_distances_; }

  void set_centroids(const double* centroids, std::size_t k) override {
    k_ = k;
    pack(centroids, k, packed_);
    if (inner_product_) {
      // Scores ||c||^2 - 2 x.c with the real centroids' norms zeroed: the argmin is the argmax
      // of x.c (padding keeps +inf).
      std::fill_n(norms_of(packed_, k), k, T(0));
    }
  }

  std::size_t assign(std::int32_t* labels, T* dist) override {
    std::size_t changed = 0;
    const T* packed = packed_.data();
    const std::size_t k = k_;
    for_row_tasks(0, n_, [&](std::size_t r0, std::size_t r1) {
      const std::size_t c = table_->assign_rows(ref_, packed, k, dim_, r0, r1, labels, dist);
#pragma omp atomic
      changed += c;
    });
    return changed;
  }

  void lower_closest(const double* centroid, T* closest) override { lower(centroid, closest, nullptr, 0); }

  void potentials(const double* candidates, std::size_t m, const T* closest, double* pot) override {
    AlignedBuffer<T> packed;
    pack(candidates, m, packed);
    const std::size_t nb = (n_ + kSumRows - 1) / kSumRows;
    std::vector<double> part(nb * m, 0.0);
#pragma omp parallel num_threads(threads_)
    {
      std::vector<T> d(kSeedRows * m);
#pragma omp for schedule(dynamic, 1)
      for (std::size_t b = 0; b < nb; ++b) {
        double* p = part.data() + b * m;
        const std::size_t end = std::min(n_, (b + 1) * kSumRows);
        for (std::size_t r = b * kSumRows; r < end; r += kSeedRows) {
          const std::size_t rows = std::min(kSeedRows, end - r);
          table_->sqdist_rows(ref_, packed.data(), m, dim_, r, r + rows, d.data(), m);
          for (std::size_t i = 0; i < rows; ++i) {
            const double wi = weights_ ? weights_[r + i] : 1.0;
            for (std::size_t t = 0; t < m; ++t) p[t] += wi * static_cast<double>(std::min(closest[r + i], d[i * m + t]));
          }
        }
      }
    }
    for (std::size_t t = 0; t < m; ++t) {
      double total = 0;
      for (std::size_t b = 0; b < nb; ++b) total += part[b * m + t];
      pot[t] = total;
    }
  }

  // Seeding keeps each row's closest distance and its centre; every distance is computed (the
  // bounds of the dense engine's seeding are not applied to sparse rows).
  double seed_start(const double* centre, std::size_t k) override {
    seed_closest_.assign(n_, std::numeric_limits<T>::infinity());
    seed_owner_.assign(n_, 0);
    seed_centres_.assign(centre, centre + dim_);
    seed_centres_.reserve(k * dim_);
    seed_count_ = 1;
    lower(centre, seed_closest_.data(), nullptr, 0);
    seed_distances_ = n_;
    return potential(seed_closest_.data(), weights_, n_);
  }

  std::vector<std::size_t> seed_draw(const std::vector<double>& targets) override {
    return search_cumulative(seed_closest_.data(), weights_, n_, targets);
  }

  void seed_potentials(const double* candidates, std::size_t m, double* pot) override {
    seed_cands_.assign(candidates, candidates + m * dim_);
    potentials(candidates, m, seed_closest_.data(), pot);
    seed_distances_ += n_ * m;
  }

  void seed_keep(std::size_t t) override {
    // The same kernel arithmetic per (row, centre) pair as the potentials took (the score of a
    // pair does not depend on how many centroids are packed with it).
    const double* c = seed_cands_.data() + t * dim_;
    seed_centres_.insert(seed_centres_.end(), c, c + dim_);
    lower(c, seed_closest_.data(), seed_owner_.data(), static_cast<std::int32_t>(seed_count_));
    seed_distances_ += n_;
    ++seed_count_;
  }

  std::vector<std::size_t> seed_oversample(double l, double psi, std::uint64_t key) override {
    std::vector<char> drawn(n_, 0);
    const double scale = psi > 0 ? l / psi : 0.0;
    for_row_tasks(0, n_, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t i = r0; i < r1; ++i) {
        const double p = (weights_ ? weights_[i] : 1.0) * static_cast<double>(seed_closest_[i]) * scale;
        drawn[i] = p > 0 && keyed_uniform(key, i) < p;
      }
    });
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < n_; ++i) {
      if (drawn[i]) out.push_back(i);
    }
    return out;
  }

  double seed_add_many(const double* centres, std::size_t m) override {
    // Euclidean FlashAssign whatever the metric (cosine and dot seed on distances too).
    const bool inner = inner_product_;
    inner_product_ = false;
    set_centroids(centres, m);
    inner_product_ = inner;
    std::vector<std::int32_t> lab(n_, 0);
    std::vector<T> dist(n_);
    assign(lab.data(), dist.data());
    seed_distances_ += n_ * m;
    const auto base = static_cast<std::int32_t>(seed_count_);
    for (std::size_t i = 0; i < n_; ++i) {
      if (dist[i] < seed_closest_[i]) {
        seed_closest_[i] = dist[i];
        seed_owner_[i] = base + lab[i];
      }
    }
    seed_centres_.insert(seed_centres_.end(), centres, centres + m * dim_);
    seed_count_ += m;
    return block_potential(seed_closest_.data());
  }

  std::vector<double> seed_owner_weights() override {
    std::vector<double> out(seed_count_, 0.0);
    for (std::size_t i = 0; i < n_; ++i) out[static_cast<std::size_t>(seed_owner_[i])] += weights_ ? weights_[i] : 1.0;
    return out;
  }

  std::uint64_t seed_distances() const override { return seed_distances_; }

  void seed_end() override {
    seed_closest_ = {};
    seed_owner_ = {};
    seed_centres_ = {};
    seed_cands_ = {};
    seed_count_ = 0;
  }

  void sqdistances(T* out) override {
    const T* packed = packed_.data();
    const std::size_t k = k_;
    for_row_tasks(0, n_, [&](std::size_t r0, std::size_t r1) {
      table_->sqdist_rows(ref_, packed, k, dim_, r0, r1, out + r0 * k, k);
    });
  }

  // Sort-Inverse Update over sparse rows: a stable counting sort of the labels gives each
  // cluster its run of rows in increasing order (the inverse mapping); each run is reduced
  // by one thread, row by row in that order, into its cluster's dense float64 sum. Clusters
  // run in parallel; no two threads ever add to the same sum, and each sum's additions happen
  // in row order, so the result is the same for any thread count.
  double update(const std::int32_t* labels, const double* centroids, std::size_t k, double* sums,
                double* wsums) override {
    sort_by_label(labels, k);
    std::fill(sums, sums + k * dim_, 0.0);
    std::fill(wsums, wsums + k, 0.0);
    std::vector<double> inertia(k, 0.0);
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
    for (std::size_t c = 0; c < k; ++c) {
      const double* cen = centroids + c * dim_;
      double cnorm = 0;
      for (std::size_t j = 0; j < dim_; ++j) cnorm += cen[j] * cen[j];
      double* sum = sums + c * dim_;
      double ws = 0, sq = 0;
      for (std::size_t q = run_offsets_[c]; q < run_offsets_[c + 1]; ++q) {
        const std::size_t i = perm_[q];
        const double w = weights_ ? weights_[i] : 1.0;
        // ||x - c||^2 = ||c||^2 + sum over the row's non-zeros of (x_j - c_j)^2 - c_j^2.
        double d = cnorm;
        for (std::int64_t p = x_.row_offsets[i]; p < x_.row_offsets[i + 1]; ++p) {
          const auto j = static_cast<std::size_t>(x_.col_indices[p]);
          const double v = static_cast<double>(x_.values[p]);
          const double e = v - cen[j];
          d += e * e - cen[j] * cen[j];
          sum[j] += weights_ ? w * v : v;
        }
        ws += w;
        sq += weights_ ? w * std::max(0.0, d) : std::max(0.0, d);
      }
      wsums[c] = ws;
      inertia[c] = sq;
    }
    double total = 0;
    for (double v : inertia) total += v;
    return total;
  }

  double assign_update(const double* centroids, std::size_t k, std::int32_t* labels, T* dist, double* sums,
                       double* wsums, std::size_t* changed) override {
    set_centroids(centroids, k);
    *changed = assign(labels, dist);
    last_distances_ = static_cast<std::uint64_t>(n_) * k;
    return update(labels, centroids, k, sums, wsums);
  }

  const char* update_path() const override { return "sparse"; }

 private:
  // Checks the view and the values once (naming the first offender), and takes each row's
  // squared norm (in T, over its non-zeros in order) and the column means (float64, in row
  // order).
  void validate() {
    const std::int64_t* off = x_.row_offsets;
    if (off[0] < 0) throw InvalidArgument("X: row_offsets[0] = " + std::to_string(off[0]) + " is negative");
    for (std::size_t i = 0; i < n_; ++i) {
      if (off[i + 1] < off[i]) {
        throw InvalidArgument("X: row_offsets decrease at row " + std::to_string(i) + " (" + std::to_string(off[i]) +
                              " then " + std::to_string(off[i + 1]) + ")");
      }
    }
    if (off[n_] > off[0] && (x_.values == nullptr || x_.col_indices == nullptr)) {
      throw InvalidArgument("X: values or col_indices pointer is null");
    }
    xnorm_.resize(n_);
    std::vector<double> colsum(dim_, 0.0);
    std::vector<std::size_t> seen(dim_, 0);  // 1 + the last row that used the column
    for (std::size_t i = 0; i < n_; ++i) {
      T norm = T(0);
      for (std::int64_t p = off[i]; p < off[i + 1]; ++p) {
        const std::int32_t col = x_.col_indices[p];
        if (col < 0 || static_cast<std::size_t>(col) >= dim_) {
          throw InvalidArgument("X: column index " + std::to_string(col) + " at row " + std::to_string(i) +
                                " is out of range [0, " + std::to_string(dim_) + ")");
        }
        const auto j = static_cast<std::size_t>(col);
        if (seen[j] == i + 1) {
          throw InvalidArgument("X: column " + std::to_string(j) + " appears twice in row " + std::to_string(i) +
                                " (sum duplicates first)");
        }
        seen[j] = i + 1;
        const T v = x_.values[p];
        if (!std::isfinite(v)) {
          std::ostringstream msg;
          msg << "X contains " << (std::isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf") << " at row " << i << ", column "
              << j;
          throw InvalidData(msg.str());
        }
        norm += v * v;
        colsum[j] += static_cast<double>(v);
      }
      xnorm_[i] = norm;
    }
    for (std::size_t j = 0; j < dim_; ++j) mean_[j] = colsum[j] / static_cast<double>(n_);
  }

  T* norms_of(AlignedBuffer<T>& packed, std::size_t k) const {
    const std::size_t nr = table_->panel_width(k);
    return packed.data() + (k + nr - 1) / nr * nr * dim_;
  }

  void pack(const double* centroids, std::size_t k, AlignedBuffer<T>& packed) const {
    table_->pack(centroids, k, dim_, packed.reserve(table_->packed_size(k, dim_)));
  }

  // closest[i] = min(closest[i], ||x_i - c||^2) for one centroid; with `owner`, a row brought
  // strictly closer records `index` as its owner.
  void lower(const double* centroid, T* closest, std::int32_t* owner, std::int32_t index) {
    AlignedBuffer<T> packed;
    pack(centroid, 1, packed);
    for_row_tasks(0, n_, [&](std::size_t r0, std::size_t r1) {
      T d[kSeedRows];
      for (std::size_t r = r0; r < r1; r += kSeedRows) {
        const std::size_t m = std::min(kSeedRows, r1 - r);
        table_->sqdist_rows(ref_, packed.data(), 1, dim_, r, r + m, d, 1);
        for (std::size_t i = 0; i < m; ++i) {
          if (d[i] < closest[r + i]) {
            closest[r + i] = d[i];
            if (owner) owner[r + i] = index;
          }
        }
      }
    });
  }

  // sum_i w_i closest_i in float64, over fixed blocks of rows added in block order.
  double block_potential(const T* closest) {
    const std::size_t nb = (n_ + kSumRows - 1) / kSumRows;
    std::vector<double> part(nb, 0.0);
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
    for (std::size_t b = 0; b < nb; ++b) {
      double p = 0;
      for (std::size_t i = b * kSumRows; i < std::min(n_, (b + 1) * kSumRows); ++i) {
        p += (weights_ ? weights_[i] : 1.0) * static_cast<double>(closest[i]);
      }
      part[b] = p;
    }
    double psi = 0;
    for (double p : part) psi += p;
    return psi;
  }

  // Stable counting sort of the labels: cluster c's rows are perm_[run_offsets_[c] ..
  // run_offsets_[c + 1]), increasing.
  void sort_by_label(const std::int32_t* labels, std::size_t k) {
    run_offsets_.assign(k + 1, 0);
    for (std::size_t i = 0; i < n_; ++i) ++run_offsets_[static_cast<std::size_t>(labels[i]) + 1];
    for (std::size_t c = 0; c < k; ++c) run_offsets_[c + 1] += run_offsets_[c];
    std::vector<std::size_t> next(run_offsets_.begin(), run_offsets_.end() - 1);
    perm_.resize(n_);
    for (std::size_t i = 0; i < n_; ++i) perm_[next[static_cast<std::size_t>(labels[i])]++] = static_cast<std::uint32_t>(i);
  }

  // Runs fn(a, b) over rows [r0, r1) in parallel tasks (per-row work only: the split varies
  // with the thread count).
  template <class Fn>
  void for_row_tasks(std::size_t r0, std::size_t r1, Fn&& fn) {
    const std::size_t rows = r1 - r0;
    const std::size_t per = rows / (static_cast<std::size_t>(threads_) * 8) + 1;
    const std::size_t chunk = std::clamp<std::size_t>(per, 16, 1024);
    const std::size_t ntasks = (rows + chunk - 1) / chunk;
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
    for (std::size_t t = 0; t < ntasks; ++t) fn(r0 + t * chunk, std::min(r1, r0 + (t + 1) * chunk));
  }

  CsrView<T> x_;
  std::size_t n_;
  std::size_t dim_;
  const double* weights_;
  int threads_;
  const SparseKernels<T>* table_;
  std::vector<double> shift_;  // zeros
  std::vector<double> mean_;
  std::vector<T> xnorm_;
  CsrRef<T> ref_;
  bool inner_product_ = false;
  std::size_t k_ = 0;
  AlignedBuffer<T> packed_;
  std::uint64_t last_distances_ = 0;

  std::vector<std::size_t> run_offsets_;
  std::vector<std::uint32_t> perm_;

  std::vector<T> seed_closest_;
  std::vector<std::int32_t> seed_owner_;
  std::vector<double> seed_centres_;
  std::vector<double> seed_cands_;
  std::size_t seed_count_ = 0;
  std::uint64_t seed_distances_ = 0;
};

}  // namespace

template <class T>
std::unique_ptr<Engine<T>> make_sparse_engine(CsrView<T> X, std::span<const double> weights, int n_threads,
                                              const std::string& target) {
  return std::make_unique<SparseEngine<T>>(X, weights, n_threads, find_sparse_table<T>(target));
}

template std::unique_ptr<Engine<float>> make_sparse_engine<float>(CsrView<float>, std::span<const double>, int,
                                                                  const std::string&);
template std::unique_ptr<Engine<double>> make_sparse_engine<double>(CsrView<double>, std::span<const double>, int,
                                                                    const std::string&);

}  // namespace flashkm::detail
