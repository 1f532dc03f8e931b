// The CPU engine: owns threads and blocking around the per-target kernels (kernel_table.hpp),
// and implements the Sort-Inverse Update (counting sort + fixed-block reductions).
#include "cpu/cpu_engine.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>

#include <hwy/aligned_allocator.h>

#include "cpu/kernel_table.hpp"
#include "flashkm/errors.hpp"

namespace flashkm::detail {
namespace {

// Rows per block of the data passes (mean, variance, potentials). Fixed, so that the order of
// float64 additions -- and hence the result -- does not depend on the thread count.
constexpr std::size_t kStatRows = 4096;

// Rows per call of the one-centroid distance kernel (a stack buffer).
constexpr std::size_t kOneRows = 256;

// Sort-Inverse Update: the sorted order is cut into blocks of this many points (at least one
// row's worth of doubles per point, so the partial sums stay O(N + K*D)). Fixed for the same
// reason as kStatRows.
std::size_t update_block(std::size_t dim) { return std::max<std::size_t>(256, dim); }

template <class T>
const KernelTable<T>* find_table(const std::string& wanted) {
  const auto tables = kernel_tables<T>();
  if (wanted.empty()) return tables.front();
  for (const auto* t : tables) {
    if (wanted == t->name) return t;
  }
  std::string names;
  for (const auto* t : tables) names += std::string(names.empty() ? "" : ", ") + t->name;
  throw InvalidArgument("SIMD target '" + wanted +
                        "' is unknown or not supported by this CPU; available: " + names);
}

std::string requested_target(const std::string& option) {
  if (!option.empty()) return option;
  const char* env = std::getenv("FLASHKM_TARGET");
  return env ? std::string(env) : std::string();
}

template <class T>
class CpuEngine final : public Engine<T> {
 public:
  CpuEngine(MatrixView<T> X, std::span<const double> weights, int n_threads,
            const KernelTable<T>* table)
      : x_(X),
        weights_(weights.empty() ? nullptr : weights.data()),
        threads_(n_threads > 0 ? n_threads : omp_get_max_threads()),
        table_(table),
        shift_(X.cols),
        shift_t_(X.cols) {
    compute_mean();
    pts_ = PointsRef<T>{x_.data, x_.stride, x_.cols, shift_t_.data()};
  }

  std::size_t rows() const override { return x_.rows; }
  std::size_t cols() const override { return x_.cols; }
  const double* shift() const override { return shift_.data(); }
  const char* target() const override { return table_->name; }
  const double* weights() const override { return weights_; }

  void row_centred(std::size_t i, double* out) const override {
    const T* row = x_.row(i);
    for (std::size_t j = 0; j < x_.cols; ++j) out[j] = static_cast<double>(row[j]) - shift_[j];
  }

  double mean_variance() override {
    const std::size_t dim = x_.cols;
    const std::vector<double> sq = block_sums(dim, [&](std::size_t r0, std::size_t r1, double* p) {
      for (std::size_t i = r0; i < r1; ++i) {
        const T* row = x_.row(i);
        for (std::size_t j = 0; j < dim; ++j) {
          const double e = static_cast<double>(row[j]) - mean_[j];
          p[j] += e * e;
        }
      }
    });
    double total = 0;
    for (std::size_t j = 0; j < dim; ++j) total += sq[j] / static_cast<double>(x_.rows);
    return total / static_cast<double>(dim);
  }

  void set_centroids(const double* centroids, std::size_t k) override {
    k_ = k;
    panel_ = k <= table_->narrow.nr ? &table_->narrow : &table_->wide;
    const std::size_t need = panel_->packed_size(k, x_.cols);
    if (need > packed_cap_) {
      packed_ = hwy::AllocateAligned<T>(need);
      packed_cap_ = need;
    }
    panel_->pack_centroids(centroids, k, x_.cols, packed_.get());
  }

  std::size_t assign(std::int32_t* labels, T* dist) override {
    std::size_t changed = 0;
    for_row_tasks([&](std::size_t r0, std::size_t r1) {
      const std::size_t c = panel_->assign_rows(pts_, packed_.get(), k_, r0, r1, labels, dist);
#pragma omp atomic
      changed += c;
    });
    return changed;
  }

  void lower_closest(const double* centroid, T* closest) override {
    std::vector<T> c(centroid, centroid + x_.cols);
    for_row_tasks([&](std::size_t r0, std::size_t r1) {
      T d[kOneRows];
      for (std::size_t r = r0; r < r1; r += kOneRows) {
        const std::size_t m = std::min(kOneRows, r1 - r);
        table_->sqdist_one(pts_, c.data(), r, r + m, d);
        for (std::size_t i = 0; i < m; ++i) closest[r + i] = std::min(closest[r + i], d[i]);
      }
    });
  }

  void potentials(const double* candidates, std::size_t m, const T* closest, double* pot) override {
    std::vector<T> cands(candidates, candidates + m * x_.cols);
    const std::vector<double> total = block_sums(m, [&](std::size_t r0, std::size_t r1, double* p) {
      T d[kOneRows * kMaxFew];
      for (std::size_t r = r0; r < r1; r += kOneRows) {
        const std::size_t rows = std::min(kOneRows, r1 - r);
        for (std::size_t t0 = 0; t0 < m; t0 += kMaxFew) {
          const std::size_t mm = std::min(kMaxFew, m - t0);
          table_->sqdist_few(pts_, cands.data() + t0 * x_.cols, mm, r, r + rows, d);
          for (std::size_t i = 0; i < rows; ++i) {
            const double w = weights_ ? weights_[r + i] : 1.0;
            for (std::size_t t = 0; t < mm; ++t) {
              p[t0 + t] += w * static_cast<double>(std::min(closest[r + i], d[i * mm + t]));
            }
          }
        }
      }
    });
    std::copy(total.begin(), total.end(), pot);
  }

  void sqdistances(T* out) override {
    for_row_tasks([&](std::size_t r0, std::size_t r1) {
      panel_->sqdist_rows(pts_, packed_.get(), k_, r0, r1, out + r0 * k_, k_);
    });
  }

  double update(const std::int32_t* labels, const double* centroids, std::size_t k, double* sums,
                double* wsums) override {
    const std::size_t n = x_.rows;
    const std::size_t dim = x_.cols;
    sort_by_label(labels, k);

    // Cut the sorted order into fixed blocks; a segment is the part of one cluster's run that
    // lies in one block. Segments enumerated cluster by cluster are also in position order, so
    // each cluster's segments are contiguous and each block's segments are contiguous.
    const std::size_t B = update_block(dim);
    const std::size_t nblocks = (n + B - 1) / B;
    seg_begin_.clear();
    seg_cluster_.clear();
    for (std::size_t c = 0; c < k; ++c) {
      for (std::size_t pos = offsets_[c]; pos < offsets_[c + 1];) {
        const std::size_t end = std::min<std::size_t>(offsets_[c + 1], (pos / B + 1) * B);
        seg_begin_.push_back(pos);
        seg_cluster_.push_back(static_cast<std::uint32_t>(c));
        pos = end;
      }
    }
    const std::size_t nseg = seg_begin_.size();
    seg_begin_.push_back(n);
    block_seg_.assign(nblocks + 1, nseg);
    for (std::size_t s = nseg; s-- > 0;) block_seg_[seg_begin_[s] / B] = s;
    for (std::size_t b = nblocks; b-- > 0;) block_seg_[b] = std::min(block_seg_[b], block_seg_[b + 1]);

    // The kernels work in X's own coordinates: raw sums (exact enough in float64 even for a
    // large common offset) and the centroid moved back by the shift.
    set_abs_centroids(centroids, k);
    part_sum_.assign(nseg * dim, 0.0);
    part_w_.assign(nseg, 0.0);
    std::vector<double> block_inertia(nblocks, 0.0);
#pragma omp parallel num_threads(threads_)
    {
      std::vector<double> sq(dim);
#pragma omp for schedule(dynamic, 4)
      for (std::size_t b = 0; b < nblocks; ++b) {
        std::fill(sq.begin(), sq.end(), 0.0);
        for (std::size_t s = block_seg_[b]; s < block_seg_[b + 1]; ++s) {
          const std::size_t c = seg_cluster_[s];
          table_->accumulate_run(pts_, perm_.data() + seg_begin_[s], seg_begin_[s + 1] - seg_begin_[s],
                                 n - seg_begin_[s], weights_, abs_centroids_.data() + c * dim,
                                 part_sum_.data() + s * dim, part_w_.data() + s, sq.data());
        }
        double acc = 0;
        for (std::size_t j = 0; j < dim; ++j) acc += sq[j];
        block_inertia[b] = acc;
      }
      // Combine each cluster's segments in block order.
#pragma omp for schedule(static)
      for (std::size_t c = 0; c < k; ++c) {
        double* out = sums + c * dim;
        std::fill(out, out + dim, 0.0);
        wsums[c] = 0.0;
      }
#pragma omp single
      {
        // Segment -> cluster ranges are monotone; find each cluster's first segment.
        first_seg_.assign(k + 1, nseg);
        for (std::size_t s = nseg; s-- > 0;) first_seg_[seg_cluster_[s]] = s;
        for (std::size_t c = k; c-- > 0;) first_seg_[c] = std::min(first_seg_[c], first_seg_[c + 1]);
      }
#pragma omp for schedule(dynamic, 16)
      for (std::size_t c = 0; c < k; ++c) {
        double* out = sums + c * dim;
        for (std::size_t s = first_seg_[c]; s < first_seg_[c + 1]; ++s) {
          const double* p = part_sum_.data() + s * dim;
          for (std::size_t j = 0; j < dim; ++j) out[j] += p[j];
          wsums[c] += part_w_[s];
        }
        for (std::size_t j = 0; j < dim; ++j) out[j] -= wsums[c] * shift_[j];
      }
    }
    double inertia = 0;
    for (double v : block_inertia) inertia += v;
    return inertia;
  }

  double assign_update(const double* centroids, std::size_t k, std::int32_t* labels, T* dist,
                       double* sums, double* wsums, std::size_t* changed) override {
    set_centroids(centroids, k);
    if (!fused_fits(k)) {
      *changed = assign(labels, dist);
      return update(labels, centroids, k, sums, wsums);
    }
    return assign_update_tiled(centroids, k, labels, dist, sums, wsums, changed);
  }

 private:
  // Rows per tile of the fused step: about 1 MiB of X, so a tile assigned by FlashAssign is
  // still in L2 when its runs are reduced. Depends on D only, so results do not depend on the
  // thread count.
  std::size_t tile_rows() const {
    return std::max<std::size_t>(64, (std::size_t{1} << 20) / (x_.cols * sizeof(T)));
  }

  // The fused step pays K x D partial sums per tile; worth it while they are at most a quarter
  // of the tile's own bytes (K up to 1024 at D = 32 float, 41 at D = 784).
  bool fused_fits(std::size_t k) const {
    return k * sizeof(double) * 4 <= tile_rows() * sizeof(T) && x_.rows >= 2 * tile_rows();
  }

  // FlashAssign and a tile-local Sort-Inverse Update in one pass over X: each tile of rows is
  // assigned, its labels counting-sorted into runs (the tile's inverse mapping) and the runs
  // reduced from cache into the tile's partial sums; partials are added in tile order. Tiles go
  // in waves so that only a few tiles' partials exist at a time.
  double assign_update_tiled(const double* centroids, std::size_t k, std::int32_t* labels,
                             T* dist, double* sums, double* wsums, std::size_t* changed) {
    const std::size_t n = x_.rows;
    const std::size_t dim = x_.cols;
    const std::size_t tr = tile_rows();
    const std::size_t ntiles = (n + tr - 1) / tr;
    const std::size_t wave = 2 * static_cast<std::size_t>(threads_);
    set_abs_centroids(centroids, k);
    std::fill(sums, sums + k * dim, 0.0);
    std::fill(wsums, wsums + k, 0.0);
    part_sum_.assign(wave * k * dim, 0.0);
    part_w_.assign(wave * k, 0.0);
    std::vector<double> tile_inertia(wave);
    std::vector<std::size_t> tile_changed(wave);
    double inertia = 0;
    std::size_t total_changed = 0;
    for (std::size_t t0 = 0; t0 < ntiles; t0 += wave) {
      const std::size_t nw = std::min(wave, ntiles - t0);
#pragma omp parallel num_threads(threads_)
      {
        std::vector<std::uint32_t> off(k + 1), perm(tr);
        std::vector<double> sq(dim);
#pragma omp for schedule(dynamic, 1)
        for (std::size_t w = 0; w < nw; ++w) {
          const std::size_t r0 = (t0 + w) * tr;
          const std::size_t r1 = std::min(n, r0 + tr);
          tile_changed[w] = panel_->assign_rows(pts_, packed_.get(), k, r0, r1, labels, dist);
          std::fill(off.begin(), off.end(), 0u);
          for (std::size_t i = r0; i < r1; ++i) ++off[static_cast<std::size_t>(labels[i]) + 1];
          for (std::size_t c = 0; c < k; ++c) off[c + 1] += off[c];
          std::vector<std::uint32_t> next(off.begin(), off.end() - 1);
          for (std::size_t i = r0; i < r1; ++i) perm[next[labels[i]]++] = static_cast<std::uint32_t>(i);
          double* ps = part_sum_.data() + w * k * dim;
          double* pw = part_w_.data() + w * k;
          std::fill(ps, ps + k * dim, 0.0);
          std::fill(pw, pw + k, 0.0);
          std::fill(sq.begin(), sq.end(), 0.0);
          const std::size_t len = r1 - r0;
          for (std::size_t c = 0; c < k; ++c) {
            if (off[c + 1] == off[c]) continue;
            table_->accumulate_run(pts_, perm.data() + off[c], off[c + 1] - off[c], len - off[c],
                                   weights_, abs_centroids_.data() + c * dim, ps + c * dim, pw + c,
                                   sq.data());
          }
          double acc = 0;
          for (std::size_t j = 0; j < dim; ++j) acc += sq[j];
          tile_inertia[w] = acc;
        }
#pragma omp for schedule(static)
        for (std::size_t c = 0; c < k; ++c) {
          for (std::size_t w = 0; w < nw; ++w) {
            const double* p = part_sum_.data() + (w * k + c) * dim;
            for (std::size_t j = 0; j < dim; ++j) sums[c * dim + j] += p[j];
            wsums[c] += part_w_[w * k + c];
          }
        }
      }
      for (std::size_t w = 0; w < nw; ++w) {
        inertia += tile_inertia[w];
        total_changed += tile_changed[w];
      }
    }
    for (std::size_t c = 0; c < k; ++c) {
      for (std::size_t j = 0; j < dim; ++j) sums[c * dim + j] -= wsums[c] * shift_[j];
    }
    *changed = total_changed;
    return inertia;
  }

  void set_abs_centroids(const double* centroids, std::size_t k) {
    const std::size_t dim = x_.cols;
    abs_centroids_.resize(k * dim);
    for (std::size_t c = 0; c < k; ++c) {
      for (std::size_t j = 0; j < dim; ++j) abs_centroids_[c * dim + j] = centroids[c * dim + j] + shift_[j];
    }
  }

  // Runs fn(r0, r1) over all rows in parallel tasks: enough of them for dynamic balancing, each
  // large enough to amortise its scratch set-up. For per-row work only (the split varies with
  // the thread count).
  template <class Fn>
  void for_row_tasks(Fn&& fn) {
    const std::size_t per = x_.rows / (static_cast<std::size_t>(threads_) * 8) + 1;
    const std::size_t chunk = std::clamp<std::size_t>(per, 64, 8192);
    const std::size_t ntasks = (x_.rows + chunk - 1) / chunk;
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
    for (std::size_t t = 0; t < ntasks; ++t) fn(t * chunk, std::min(x_.rows, (t + 1) * chunk));
  }

  // Counting sort of labels: offsets_[c]..offsets_[c+1] is cluster c's run in perm_, each run in
  // increasing point order (a stable sort, so the result does not depend on how it is split).
  void sort_by_label(const std::int32_t* labels, std::size_t k) {
    const std::size_t n = x_.rows;
    const std::size_t nt = static_cast<std::size_t>(threads_);
    const std::size_t span = (n + nt - 1) / nt;
    hist_.assign(nt * k, 0);
    offsets_.assign(k + 1, 0);
    perm_.resize(n);
#pragma omp parallel num_threads(threads_)
    {
      const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
      const std::size_t lo = std::min(n, t * span);
      const std::size_t hi = std::min(n, lo + span);
      std::uint64_t* h = hist_.data() + t * k;
      for (std::size_t i = lo; i < hi; ++i) ++h[labels[i]];
#pragma omp barrier
#pragma omp single
      {
        std::uint64_t pos = 0;
        for (std::size_t c = 0; c < k; ++c) {
          offsets_[c] = pos;
          for (std::size_t u = 0; u < nt; ++u) {
            const std::uint64_t cnt = hist_[u * k + c];
            hist_[u * k + c] = pos;
            pos += cnt;
          }
        }
        offsets_[k] = pos;
      }
      for (std::size_t i = lo; i < hi; ++i) perm_[h[labels[i]]++] = static_cast<std::uint32_t>(i);
    }
  }

  // Sums over the rows of X of width values per row, in fixed blocks of kStatRows rows run in
  // parallel: fn(r0, r1, part) adds block [r0, r1)'s values into its own zeroed part[width];
  // the blocks' parts are then added in block order, so the totals do not depend on the
  // thread count.
  template <class Fn>
  std::vector<double> block_sums(std::size_t width, Fn&& fn) {
    const std::size_t nb = (x_.rows + kStatRows - 1) / kStatRows;
    std::vector<double> part(nb * width, 0.0);
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
    for (std::size_t b = 0; b < nb; ++b) {
      fn(b * kStatRows, std::min(x_.rows, (b + 1) * kStatRows), part.data() + b * width);
    }
    std::vector<double> total(width, 0.0);
    for (std::size_t j = 0; j < width; ++j) {
      for (std::size_t b = 0; b < nb; ++b) total[j] += part[b * width + j];
    }
    return total;
  }

  void compute_mean() {
    const std::size_t dim = x_.cols;
    // First non-finite value seen, as a flat index; the smallest wins.
    constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
    std::size_t first_bad = kNone;
    const std::vector<double> sums = block_sums(dim, [&](std::size_t r0, std::size_t r1, double* p) {
      for (std::size_t i = r0; i < r1; ++i) {
        const T* row = x_.row(i);
        for (std::size_t j = 0; j < dim; ++j) {
          if (!std::isfinite(row[j])) {
#pragma omp critical(flashkm_first_bad)
            first_bad = std::min(first_bad, i * dim + j);
            return;
          }
          p[j] += static_cast<double>(row[j]);
        }
      }
    });
    if (first_bad != kNone) {
      const std::size_t r = first_bad / dim, c = first_bad % dim;
      const double v = static_cast<double>(x_.row(r)[c]);
      throw InvalidData(std::string("X contains ") + (std::isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf") +
                        " at row " + std::to_string(r) + ", column " + std::to_string(c));
    }
    mean_.assign(dim, 0.0);
    for (std::size_t j = 0; j < dim; ++j) {
      mean_[j] = sums[j] / static_cast<double>(x_.rows);
      shift_t_[j] = static_cast<T>(mean_[j]);
      shift_[j] = static_cast<double>(shift_t_[j]);
    }
  }

  MatrixView<T> x_;
  const double* weights_;
  int threads_;
  const KernelTable<T>* table_;
  const PanelKernels<T>* panel_ = nullptr;  // the panel width chosen for the current K
  std::vector<double> mean_;
  std::vector<double> shift_;
  std::vector<T> shift_t_;
  PointsRef<T> pts_{};

  std::size_t k_ = 0;
  hwy::AlignedFreeUniquePtr<T[]> packed_;
  std::size_t packed_cap_ = 0;

  std::vector<std::uint64_t> hist_;
  std::vector<std::uint64_t> offsets_;
  std::vector<std::uint32_t> perm_;
  std::vector<std::size_t> seg_begin_;
  std::vector<std::uint32_t> seg_cluster_;
  std::vector<std::size_t> block_seg_;
  std::vector<std::size_t> first_seg_;
  std::vector<double> abs_centroids_;
  std::vector<double> part_sum_;
  std::vector<double> part_w_;
};

}  // namespace

template <class T>
std::unique_ptr<Engine<T>> make_cpu_engine(MatrixView<T> X, std::span<const double> weights,
                                           int n_threads, const std::string& target) {
  const KernelTable<T>* table = find_table<T>(requested_target(target));
  return std::make_unique<CpuEngine<T>>(X, weights, n_threads, table);
}

template std::unique_ptr<Engine<float>> make_cpu_engine<float>(MatrixView<float>,
                                                               std::span<const double>, int,
                                                               const std::string&);
template std::unique_ptr<Engine<double>> make_cpu_engine<double>(MatrixView<double>,
                                                                 std::span<const double>, int,
                                                                 const std::string&);

std::vector<std::string> cpu_target_names() {
  std::vector<std::string> names;
  for (const auto* t : kernel_tables<float>()) names.emplace_back(t->name);
  return names;
}

std::string cpu_default_target() { return find_table<float>(requested_target(""))->name; }

}  // namespace flashkm::detail
