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
#include <stdexcept>
#include <string>
#include <vector>

#include "core/seeding.hpp"
#include "cpu/aligned_buffer.hpp"
#include "cpu/bounds.hpp"
#include "cpu/groups.hpp"
#include "cpu/run_state.hpp"
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
        run_(X.rows, weights_),
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

  std::vector<FarPoint> farthest(std::size_t m) override {
    const T* dist = run_.dist();
    // A pruned assignment left some rows' distances from an earlier iteration: recompute them
    // all against the same (group-packed) centroids; the labels cannot change, the bounds
    // proved them. Rare: only iterations that empty a cluster get here.
    std::vector<T> fresh;
    if (dist_stale_) {
      fresh.resize(n_);
      for_row_tasks(0, n_, [&](std::size_t r0, std::size_t r1) {
        Scratch sc(groups_);
        for (std::size_t r = r0; r < r1; ++r) {
          std::int32_t label = 0;
          T best = T(0);
          score_all(r, sc, &label, &best);
          fresh[r] = std::max(T(0), xnorm_[r] + best);
        }
      });
      dist = fresh.data();
    }
    return run_.farthest(dist, m, 0, dim_, [&](std::size_t i, double* out) { row_centred(i, out); });
  }

  /// The metric, once, by the factory before any other call (core/engine.hpp; the rows are
  /// never centred here): the inner-product metrics' argmax x.c, cosine's w / ||x|| weights for
  /// the Lloyd steps.
  Metric metric() const override { return metric_; }
  void fix_metric(Metric metric) {
    metric_ = metric;
    if (metric == Metric::kEuclidean) return;
    inner_product_ = true;
    // Cosine's w / ||x|| weights are taken by the first begin_run (predict does not need them).
  }

  // Each row's squared norm, in float64, into out (cosine's Lloyd weights, RunState::begin).
  void row_sq_norms(double* out) {
    for_row_tasks(0, n_, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t i = r0; i < r1; ++i) {
        double sq = 0;
        for (std::int64_t p = x_.row_offsets[i]; p < x_.row_offsets[i + 1]; ++p) {
          const double v = static_cast<double>(x_.values[p]);
          sq += v * v;
        }
        out[i] = sq;
      }
    });
  }

  double total_weight() override { return run_.total_weight(); }

  // Bounded assignment over sparse rows (docs/KERNELS.md, "Sparse rows"): Yinyang's groups of
  // whole panels of a group packing, scored by group_min; bitwise the plain assignment. Only
  // with prune = on: a survivor's distance costs about 1.8x the plain kernel's here (one pass
  // over the row's non-zeros per group of 16 centroids instead of one per panel of up to 128),
  // and on the data measured the bounds never paid (TF-IDF: 51-95% of the distances still
  // computed in iterations 3-12; topic data: converged in 4-5 iterations, before the bounds
  // tighten; both slower than unpruned), so auto leaves sparse rows unpruned.
  bool begin_run(Prune prune, std::size_t k) override {
    run_.begin(metric_ == Metric::kCosine, [&](double* sq) { row_sq_norms(sq); });
    prune_ = false;
    bounds_valid_ = false;
    dist_stale_ = false;
    iter_bounded_ = false;
    order_.clear();
    if (prune != Prune::kOn || k == 0) return false;
    // Panels of at least 16 centroids (Yinyang's K/10 per group, rounded to whole vectors),
    // and as many panels per group as keep the groups at most 64 and their float lower bounds
    // (4 (1 + G) bytes per row) within X's own bytes per row.
    const std::size_t L = table_->lanes;
    std::size_t nr = L;
    while (nr < 16 && nr < 8 * L) nr *= 2;
    const double nnz = static_cast<double>(x_.row_offsets[n_] - x_.row_offsets[0]);
    const auto row_bytes = static_cast<std::size_t>(nnz * static_cast<double>(sizeof(T) + 4) / static_cast<double>(n_)) + 8;
    const std::size_t fit = row_bytes / 4 > 1 ? row_bytes / 4 - 1 : 1;
    const std::size_t cap = std::min<std::size_t>(64, fit);
    const std::size_t npanels = (k + nr - 1) / nr;
    panel_nr_ = nr;
    panels_per_group_ = (npanels + cap - 1) / cap;
    group_size_ = panels_per_group_ * nr;
    groups_ = (k + group_size_ - 1) / group_size_;
    if (rmax_ < 0) {
      T mx = T(0);
      for (std::size_t i = 0; i < n_; ++i) mx = std::max(mx, xnorm_[i]);
      // Generous: only the guard against scores beyond float range uses it.
      rmax_ = 2 * std::sqrt(static_cast<double>(mx)) + 1;
    }
    ub_.assign(n_, 0.0f);
    lb_.assign(n_ * groups_, 0.0f);
    prune_ = true;
    return true;
  }
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

  SeedPick seed_first(std::uint64_t key) override {
    SeedPick p = keyed_first(weights_, n_, key, 0);
    if (p.key > -std::numeric_limits<double>::infinity()) {
      p.row.resize(dim_);
      row_centred(static_cast<std::size_t>(p.index), p.row.data());
    }
    return p;
  }

  void seed_potential(ExactSum& acc) override { exact_potential(seed_closest_.data(), weights_, n_, acc); }

  std::vector<double> seed_oversample(double l, double psi, std::uint64_t key) override {
    const auto ids = keyed_oversample(seed_closest_.data(), weights_, n_, l, psi, key, 0);
    std::vector<double> rows(ids.size() * dim_);
    for (std::size_t t = 0; t < ids.size(); ++t) row_centred(ids[t], rows.data() + t * dim_);
    return rows;
  }

  void seed_add_many(const double* centres, std::size_t m) override {
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
  }

  void seed_owner_weights(std::vector<ExactSum>& acc) override {
    exact_owner_weights(seed_owner_.data(), weights_, n_, acc);
  }

  void column_sums(std::vector<ExactSum>& acc) override {
    for (std::size_t i = 0; i < n_; ++i) {
      for (std::int64_t p = x_.row_offsets[i]; p < x_.row_offsets[i + 1]; ++p) {
        acc[static_cast<std::size_t>(x_.col_indices[p])].add(static_cast<double>(x_.values[p]));
      }
    }
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
    const double* lw = run_.lloyd_w();
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
    for (std::size_t c = 0; c < k; ++c) {
      const double* cen = centroids + c * dim_;
      double cnorm = 0;
      for (std::size_t j = 0; j < dim_; ++j) cnorm += cen[j] * cen[j];
      double* sum = sums + c * dim_;
      double ws = 0, sq = 0;
      for (std::size_t q = run_offsets_[c]; q < run_offsets_[c + 1]; ++q) {
        const std::size_t i = perm_[q];
        const double w = lw ? lw[i] : 1.0;
        // ||x - c||^2 = ||c||^2 + sum over the row's non-zeros of (x_j - c_j)^2 - c_j^2.
        double d = cnorm;
        for (std::int64_t p = x_.row_offsets[i]; p < x_.row_offsets[i + 1]; ++p) {
          const auto j = static_cast<std::size_t>(x_.col_indices[p]);
          const double v = static_cast<double>(x_.values[p]);
          const double e = v - cen[j];
          d += e * e - cen[j] * cen[j];
          sum[j] += lw ? w * v : v;
        }
        ws += w;
        sq += lw ? w * std::max(0.0, d) : std::max(0.0, d);
      }
      wsums[c] = ws;
      inertia[c] = sq;
    }
    double total = 0;
    for (double v : inertia) total += v;
    return total;
  }

  double assign_update(const double* centroids, std::size_t k, double* sums, double* wsums,
                       std::size_t* changed) override {
    std::int32_t* labels = run_.step_labels();
    T* dist = run_.step_dist();
    iter_bounded_ = false;
    if (prune_) prepare_bounds(centroids, k);
    if (iter_bounded_) {
      std::uint64_t distances = 0, pruned = 0;
      *changed = bounded_assign(labels, dist, &distances, &pruned);
      last_distances_ = distances;
      dist_stale_ = pruned > 0;
      bounds_valid_ = true;
    } else {
      set_centroids(centroids, k);
      *changed = assign(labels, dist);
      last_distances_ = static_cast<std::uint64_t>(n_) * k;
      dist_stale_ = false;
    }
    return update(labels, centroids, k, sums, wsums);
  }

  const std::int32_t* labels() const override { return run_.labels(); }

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

  // ---- Bounded assignment (docs/KERNELS.md, "Sparse rows") ----

  // Per-task scratch: one row's group minima.
  struct Scratch {
    std::vector<T> min1, min2;
    std::vector<std::int32_t> idx1;
    std::vector<char> computed;
    explicit Scratch(std::size_t g) : min1(g), min2(g), idx1(g), computed(g) {}
  };

  // The error bound eps of row r's float scores and float squared norm (bounds.hpp): its dot
  // products sum nnz terms (2 nnz roundings without fused multiply-adds), the centroids' float
  // norms are off by at most errc_ (measured), the final fma rounds once.
  double row_eps(std::size_t r, double* rnorm) const {
    const auto nnz = static_cast<std::size_t>(x_.row_offsets[r + 1] - x_.row_offsets[r]);
    const double g = bounds::gamma<T>(2 * nnz + 4);
    const double rn = std::sqrt(static_cast<double>(xnorm_[r]) / (1 - g)) * (1 + 0x1p-40);
    *rnorm = rn;
    const double c = slack_.cmax;
    return 4 * g * (c + rn) * (c + rn) + errc_ +
           8 * static_cast<double>(nnz + 4) * static_cast<double>(std::numeric_limits<T>::denorm_min());
  }

  // Group g (its panels) for row r into the scratch.
  void score_group(std::size_t r, std::size_t g, Scratch& sc) const {
    const std::size_t p0 = g * panels_per_group_;
    const std::size_t p1 = std::min(p0 + panels_per_group_, (k_b_ + panel_nr_ - 1) / panel_nr_);
    T m1, m2;
    std::int32_t i1;
    table_->group_min(ref_, r, bpacked_.data(), panel_nr_, k_b_, dim_, ids_.data(), p0, &m1, &i1, &m2);
    for (std::size_t p = p0 + 1; p < p1; ++p) {
      T n1, n2;
      std::int32_t j1;
      table_->group_min(ref_, r, bpacked_.data(), panel_nr_, k_b_, dim_, ids_.data(), p, &n1, &j1, &n2);
      // The winner's runner-up or the loser's best, whichever is lower.
      if (n1 < m1 || (n1 == m1 && j1 < i1)) {
        m2 = std::min(n2, m1);
        m1 = n1;
        i1 = j1;
      } else {
        m2 = std::min(m2, n1);
      }
    }
    sc.min1[g] = m1;
    sc.idx1[g] = i1;
    sc.min2[g] = m2;
    sc.computed[g] = 1;
  }

  // The smallest score over the computed groups, lowest centroid index on equal scores.
  void best_of(const Scratch& sc, std::int32_t* label, T* best) const {
    T b = std::numeric_limits<T>::infinity();
    std::int32_t j = std::numeric_limits<std::int32_t>::max();
    for (std::size_t g = 0; g < groups_; ++g) {
      if (!sc.computed[g]) continue;
      if (sc.min1[g] < b || (sc.min1[g] == b && sc.idx1[g] < j)) {
        b = sc.min1[g];
        j = sc.idx1[g];
      }
    }
    *label = j;
    *best = b;
  }

  // Every group for row r: the plain assignment's label and score.
  void score_all(std::size_t r, Scratch& sc, std::int32_t* label, T* best) const {
    for (std::size_t g = 0; g < groups_; ++g) score_group(r, g, sc);
    best_of(sc, label, best);
  }

  // Packs the centroids in group order, measures their norms, drifts and float norm errors,
  // and decides whether this assign_update runs bounded.
  void prepare_bounds(const double* centroids, std::size_t k) {
    iter_bounded_ = false;
    if (order_.size() != k) {
      order_ = coherent_order(centroids, k, dim_, group_size_);
      pos_of_.resize(k);
      for (std::size_t p = 0; p < k; ++p) pos_of_[order_[p]] = static_cast<std::uint32_t>(p);
      bounds_valid_ = false;
    }
    k_b_ = k;
    const std::size_t nr = panel_nr_, kpad = (k + nr - 1) / nr * nr;
    T* bp = bpacked_.reserve(kpad * dim_ + kpad);
    table_->pack_width(centroids, order_.data(), k, dim_, nr, bp);
    T* norms = bp + kpad * dim_;
    ids_.assign(kpad, std::numeric_limits<T>::infinity());
    for (std::size_t p = 0; p < k; ++p) ids_[p] = static_cast<T>(order_[p]);
    // Per centroid, in double: the squared norm of its rounded values (relative error at most
    // gamma_D of double), the error of the kernels' float norm, and the drift from the last
    // bounded iteration's rounded values (differences of two T values are exact in double).
    const bool had = bounds_valid_ && prev_c_.size() == k * dim_;
    if (!had) prev_c_.assign(k * dim_, T(0));
    const double gd = bounds::gamma<double>(dim_ + 4);
    const double rel = 1 + gd;
    std::vector<double> sq(k), err(k), drift(k);
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
    for (std::size_t c = 0; c < k; ++c) {
      const double* cr = centroids + c * dim_;
      T* pr = prev_c_.data() + c * dim_;
      double s = 0, e2 = 0;
      for (std::size_t j = 0; j < dim_; ++j) {
        const T v = static_cast<T>(cr[j]);
        const double vd = static_cast<double>(v);
        s += vd * vd;
        const double e = vd - static_cast<double>(pr[j]);
        e2 += e * e;
        pr[j] = v;
      }
      sq[c] = s;
      err[c] = std::abs(static_cast<double>(norms[pos_of_[c]]) - s) + s * gd;
      drift[c] = std::sqrt(e2) * rel * (1 + 0x1p-50);
    }
    double nmin = std::numeric_limits<double>::infinity(), nmax = 0, errc = 0;
    for (std::size_t c = 0; c < k; ++c) {
      nmin = std::min(nmin, sq[c] / rel);
      nmax = std::max(nmax, sq[c] * rel);
      errc = std::max(errc, err[c]);
    }
    bounds::Slack& sl = slack_;
    sl.cmax = std::sqrt(nmax) * (1 + 0x1p-50);
    sl.nmin = inner_product_ ? nmin : 0;
    sl.nmax = inner_product_ ? nmax : 0;
    sl.dn = inner_product_ ? nmax - nmin + std::ldexp(nmax, -50) : 0;
    errc_ = inner_product_ ? 0.0 : errc * (1 + 0x1p-40);
    if (inner_product_) std::fill_n(norms, k, T(0));
    // Scores and bounds must stay far inside float range.
    const double big = (sl.cmax + rmax_) * (sl.cmax + rmax_);
    if (!(big < 1e30)) {
      bounds_valid_ = false;
      prev_c_.clear();
      return;
    }
    if (had) {
      drift_.swap(drift);
      gdrift_.assign(groups_, 0.0);
      for (std::size_t c = 0; c < k; ++c) {
        const std::size_t g = pos_of_[c] / group_size_;
        gdrift_[g] = std::max(gdrift_[g], drift_[c]);
      }
    } else {
      bounds_valid_ = false;
    }
    iter_bounded_ = true;
  }

  // One bounded assignment over every row. Each row's bounds first follow its centroids'
  // drifts; a row whose upper bound stays below its lower bounds by the scores' rounding
  // slack keeps its label and computes nothing. Otherwise its own centroid's group is scored,
  // then every group whose lower bound does not exclude it given the best score so far. A
  // group skipped provably holds no centroid whose float score could reach the row's best, so
  // the label (lowest index on equal scores) and distance are bitwise assign's own.
  std::size_t bounded_assign(std::int32_t* labels, T* dist, std::uint64_t* distances_out, std::uint64_t* pruned_out) {
    const std::size_t G = groups_, gs = group_size_, k = k_b_;
    const bounds::Slack& sl = slack_;
    const bool valid = bounds_valid_;
    std::size_t changed = 0;
    std::uint64_t distances = 0, pruned = 0;
    for_row_tasks(0, n_, [&](std::size_t r0, std::size_t r1) {
      Scratch sc(G);
      std::size_t ch = 0;
      std::uint64_t dc = 0, pc = 0;
      for (std::size_t r = r0; r < r1; ++r) {
        double rn = 0;
        const double e = row_eps(r, &rn);
        float* lb = lb_.data() + r * G;
        std::fill(sc.computed.begin(), sc.computed.end(), 0);
        std::int32_t label = 0;
        T best = T(0);
        if (valid) {
          const std::int32_t a = labels[r];
          const float U = bounds::up_add(ub_[r], drift_[static_cast<std::size_t>(a)]);
          ub_[r] = U;
          float lmin = std::numeric_limits<float>::infinity();
          for (std::size_t g = 0; g < G; ++g) {
            const float l = bounds::down_sub(lb[g], gdrift_[g]);
            lb[g] = l;
            lmin = std::min(lmin, l);
          }
          const double u = U, l = lmin;
          if (u * u + 2 * e + sl.dn < l * l * bounds::kTestMargin) {
            ++pc;
            continue;
          }
          const std::size_t own = pos_of_[static_cast<std::size_t>(a)] / gs;
          score_group(r, own, sc);
          best_of(sc, &label, &best);
          const double xn = xnorm_[r];
          for (std::size_t g = 0; g < G; ++g) {
            if (sc.computed[g]) continue;
            // Every score in g is at least L^2 - ||x||^2 - nmax - eps: skip g if that exceeds
            // the best score found (so none can equal it either).
            const double lg = lb[g];
            if (!(lg * lg * bounds::kTestMargin > static_cast<double>(best) + xn + 2 * e + sl.nmax)) {
              score_group(r, g, sc);
              best_of(sc, &label, &best);
            }
          }
        } else {
          score_all(r, sc, &label, &best);
        }
        std::size_t scored = 0;
        for (std::size_t g = 0; g < G; ++g) {
          if (sc.computed[g]) scored += std::min(k, (g + 1) * gs) - g * gs;
        }
        dc += scored;
        ch += labels[r] != label;
        labels[r] = label;
        dist[r] = std::max(T(0), xnorm_[r] + best);
        const double x = xnorm_[r];
        ub_[r] = bounds::up(std::sqrt(std::max(0.0, static_cast<double>(best) + x + e + sl.nmax)));
        for (std::size_t g = 0; g < G; ++g) {
          if (!sc.computed[g]) continue;
          const T v = sc.idx1[g] == label ? sc.min2[g] : sc.min1[g];
          lb[g] = bounds::down(std::sqrt(std::max(0.0, static_cast<double>(v) + x - e + sl.nmin)));
        }
      }
#pragma omp atomic
      changed += ch;
#pragma omp atomic
      distances += dc;
#pragma omp atomic
      pruned += pc;
    });
    *distances_out = distances;
    *pruned_out = pruned;
    return changed;
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
  const double* weights_;  // the sample weights (seeding, total_weight, weights())
  // The run's per-row state (begin_run): each row's label and squared distance to its
  // centroid, and the Lloyd steps' weights (weights_, or cosine's w / ||x||).
  RunState<T> run_;
  Metric metric_ = Metric::kEuclidean;
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

  // Bounded assignment state (per run; the bounds per row).
  bool prune_ = false;
  bool bounds_valid_ = false;
  bool iter_bounded_ = false;
  bool dist_stale_ = false;
  std::size_t panel_nr_ = 0, panels_per_group_ = 1, group_size_ = 0, groups_ = 0, k_b_ = 0;
  std::vector<std::uint32_t> order_, pos_of_;
  std::vector<T> ids_;
  AlignedBuffer<T> bpacked_;
  std::vector<T> prev_c_;  // the last bounded iteration's rounded centroids (k x dim)
  std::vector<double> drift_, gdrift_;
  std::vector<float> ub_, lb_;
  double rmax_ = -1;
  double errc_ = 0;
  bounds::Slack slack_;

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
                                              const std::string& target, Metric metric) {
  auto engine = std::make_unique<SparseEngine<T>>(X, weights, n_threads, find_sparse_table<T>(target));
  engine->fix_metric(metric);
  return engine;
}

template std::unique_ptr<Engine<float>> make_sparse_engine<float>(CsrView<float>, std::span<const double>, int,
                                                                  const std::string&, Metric);
template std::unique_ptr<Engine<double>> make_sparse_engine<double>(CsrView<double>, std::span<const double>, int,
                                                                    const std::string&, Metric);

}  // namespace flashkm::detail
