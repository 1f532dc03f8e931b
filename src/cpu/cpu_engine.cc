// The CPU engine: owns threads and blocking around the per-target kernels (kernel_table.hpp),
// implements the Sort-Inverse Update (counting sort + fixed-block reductions), and walks the
// data either as one matrix in memory or as the chunks of a RowSource (data larger than memory).
#include "cpu/cpu_engine.hpp"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "cpu/half_source.hpp"
#include "core/seeding.hpp"
#include "cpu/aligned_buffer.hpp"
#include "cpu/amx.hpp"
#include "cpu/bounds.hpp"
#include "cpu/kernel_table.hpp"
#include "cpu/seeding.hpp"
#include "flashkm/errors.hpp"

namespace flashkm::detail {
namespace {

// Every float64 reduction over rows runs over fixed blocks of rows whose sizes depend only on
// the row's size in bytes -- never on the thread count or on how the data arrives -- and adds
// the blocks' results in block order. The block sizes are powers of two, so the largest (the
// update's super-block) is a multiple of the others, and a RowSource delivering chunks of whole
// super-blocks (the granule) reproduces the in-memory result bit for bit.

// Rows per statistics block (mean, variance, k-means++ potentials): about 1 MiB of X, at most
// 4096 rows so that small-D data still yields many parallel blocks.
std::size_t stat_rows(std::size_t row_bytes) {
  return std::clamp<std::size_t>(std::bit_floor(std::max<std::size_t>(1, (std::size_t{1} << 20) / row_bytes)), 1, 4096);
}

// Rows per tile of the fused step: about 1 MiB of X, so a tile assigned by FlashAssign is still
// in L2 when its runs are reduced.
std::size_t fused_tile_rows(std::size_t row_bytes) {
  return std::max<std::size_t>(64, std::bit_floor(std::max<std::size_t>(1, (std::size_t{1} << 20) / row_bytes)));
}

// Rows per super-block of the Sort-Inverse Update: about 16 MiB of X. Labels are sorted and runs
// reduced within a super-block (which also keeps the sorted gather inside a TLB-friendly
// window); clusters' sums are carried from one super-block to the next. Larger super-blocks
// add fewer per-cluster segments (K per super-block); smaller ones need less memory when
// streaming (two chunks of at least one super-block each).
std::size_t super_rows(std::size_t row_bytes) {
  return std::max(fused_tile_rows(row_bytes),
                  std::bit_floor(std::max<std::size_t>(1, (std::size_t{16} << 20) / row_bytes)));
}

// Rows per call of the one-centroid distance kernel (a stack buffer).
constexpr std::size_t kOneRows = 256;

// Sort-Inverse Update: the sorted order of a super-block is cut into blocks of this many points,
// the unit of parallel work. Small enough that a super-block of wide rows still makes 16 blocks;
// the partial sums this adds (D doubles per 256 rows) stay far below the size of X.
constexpr std::size_t kUpdateBlock = 256;

// Parallel blocks wanted per thread in one update group of super-blocks (dynamic balancing).
constexpr std::size_t kBlocksPerThread = 16;

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

// The 16-bit kernels re-score with fused multiply-adds, which these targets' MulAdd is (the
// re-scoring must be the float32 kernels' arithmetic bit for bit).
bool fma_table(const char* name) { return std::string(name).rfind("AVX", 0) == 0; }

std::string requested_target(const std::string& option) {
  if (!option.empty()) return option;
  const char* env = std::getenv("FLASHKM_TARGET");
  return env ? std::string(env) : std::string();
}

// One chunk of rows as the kernels see it: rows [first, first + x.rows) of the data.
template <class T>
struct Chunk {
  MatrixView<T> x;
  std::size_t first = 0;
  PointsRef<T> pts;
};

// The data an engine runs over: a matrix in memory (one chunk) or a RowSource (many).
template <class T>
class Rows {
 public:
  explicit Rows(MatrixView<T> X) : whole_(X), rows_(X.rows), cols_(X.cols) {}
  explicit Rows(RowSource<T>& source) : source_(&source), rows_(source.rows()), cols_(source.cols()) {}

  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }

  // Calls fn(x, first) for each chunk of one pass, in row order.
  template <class Fn>
  void for_each_chunk(std::size_t granule, Fn&& fn) {
    if (!source_) {
      fn(whole_, std::size_t{0});
      return;
    }
    source_->begin_pass(granule);
    std::size_t next = 0;
    for (;;) {
      std::size_t first = 0;
      const MatrixView<T> x = source_->next_chunk(&first);
      if (x.rows == 0) break;
      if (first != next || x.cols != cols_ || x.stride < x.cols || x.rows > rows_ - next ||
          (next + x.rows < rows_ && x.rows % granule != 0)) {
        throw InvalidArgument("row source delivered rows [" + std::to_string(first) + ", " +
                              std::to_string(first + x.rows) + ") x " + std::to_string(x.cols) +
                              " where rows from " + std::to_string(next) + " in whole multiples of " +
                              std::to_string(granule) + " x " + std::to_string(cols_) + " were due");
      }
      fn(x, first);
      next += x.rows;
    }
    if (next != rows_) {
      throw InvalidArgument("row source ended its pass at row " + std::to_string(next) + " of " +
                            std::to_string(rows_));
    }
  }

  void read_row(std::size_t i, T* out) {
    if (source_) {
      source_->read_row(i, out);
    } else {
      std::copy_n(whole_.row(i), cols_, out);
    }
  }

 private:
  MatrixView<T> whole_{};
  RowSource<T>* source_ = nullptr;
  std::size_t rows_;
  std::size_t cols_;
};

template <class T>
class CpuEngine final : public Engine<T> {
 public:
  // amx_mode: 0, or the 16-bit type of the rows for FlashAssign on AMX tiles or AVX-512-BF16
  // (half_kernel) with float32 re-scoring (1 bfloat16, 2 float16; float engines only).
  CpuEngine(Rows<T> rows, std::span<const double> weights, int n_threads, const KernelTable<T>* table,
            std::size_t row_offset, int amx_mode = 0, HalfKernel half_kernel = HalfKernel::kTiles)
      : amx_mode_(amx_mode),
        half_kernel_(half_kernel),
        data_(rows),
        row_offset_(row_offset),
        n_(rows.rows()),
        dim_(rows.cols()),
        row_bytes_(std::max<std::size_t>(1, rows.cols() * sizeof(T))),
        granule_(super_rows(row_bytes_)),
        weights_(weights.empty() ? nullptr : weights.data()),
        threads_(n_threads > 0 ? n_threads : omp_get_max_threads()),
        table_(table),
        shift_(rows.cols()),
        shift_t_(rows.cols()) {
    compute_mean();
  }

  std::size_t rows() const override { return n_; }
  std::size_t cols() const override { return dim_; }
  const double* shift() const override { return shift_.data(); }
  const char* target() const override {
    if (!amx_mode_) return table_->name;
    return half_kernel_ == HalfKernel::kTiles ? kAmxTargetName : kDpbf16TargetName;
  }
  const double* weights() const override { return weights_; }

  const double* mean() const override { return mean_.data(); }

  void set_mean(const double* mean) override {
    rmax_ = -1;  // the rows' norms are taken about the shift
    for (std::size_t j = 0; j < dim_; ++j) {
      mean_[j] = mean[j];
      shift_t_[j] = static_cast<T>(mean_[j]);
      shift_[j] = static_cast<double>(shift_t_[j]);
    }
  }

  std::vector<FarPoint> farthest(const std::int32_t* labels, const T* dist, std::size_t m) override {
    m = std::min(m, n_);
    // A pruned assignment left some rows' distances from an earlier iteration: recompute them
    // all with the plain kernels against the same centroids (the labels cannot change; the
    // bounds proved them). Rare: only iterations that empty a cluster get here.
    std::vector<T> fresh;
    if (dist_stale_) {
      std::vector<std::int32_t> relabel(labels, labels + n_);
      fresh.resize(n_);
      assign(relabel.data(), fresh.data());
      dist = fresh.data();
    }
    std::vector<std::size_t> order(n_);
    for (std::size_t i = 0; i < n_; ++i) order[i] = i;
    auto farther = [&](std::size_t a, std::size_t b) { return dist[a] > dist[b] || (dist[a] == dist[b] && a < b); };
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(m), order.end(), farther);
    std::vector<FarPoint> out(m);
    for (std::size_t t = 0; t < m; ++t) {
      const std::size_t i = order[t];
      out[t].dist = static_cast<double>(dist[i]);
      out[t].index = row_offset_ + i;
      out[t].label = labels[i];
      out[t].weight = weights_ ? weights_[i] : 1.0;
      out[t].row.resize(dim_);
      row_centred(i, out[t].row.data());
    }
    return out;
  }

  void row_centred(std::size_t i, double* out) override {
    row_buf_.resize(dim_);
    data_.read_row(i, row_buf_.data());
    for (std::size_t j = 0; j < dim_; ++j) out[j] = static_cast<double>(row_buf_[j]) - shift_[j];
  }

  double mean_variance() override {
    const std::size_t dim = dim_;
    const std::vector<double> sq = block_sums(dim, [&](const Chunk<T>& ch, std::size_t r0, std::size_t r1, double* p) {
      for (std::size_t i = r0; i < r1; ++i) {
        const T* row = ch.x.row(i);
        for (std::size_t j = 0; j < dim; ++j) {
          const double e = static_cast<double>(row[j]) - mean_[j];
          p[j] += e * e;
        }
      }
    });
    double total = 0;
    for (std::size_t j = 0; j < dim; ++j) total += sq[j] / static_cast<double>(n_);
    return total / static_cast<double>(dim);
  }

  void set_centroids(const double* centroids, std::size_t k) override {
    k_ = k;
    panel_ = panel_for(k);
    panel_->pack_centroids(centroids, k, dim_, packed_.reserve(panel_->packed_size(k, dim_)));
    if (inner_product_) {
      // The kernels score ||c||^2 - 2 x.c; with the real centroids' norms zeroed (padding keeps
      // +inf, see kernel_table.hpp) the argmin is the argmax of x.c.
      std::fill_n(packed_norms(), k, T(0));
    }
    if constexpr (std::is_same_v<T, float>) {
      if (amx_mode_) amx_pack(centroids, k, dim_, packed_norms(), shift_t_.data(), amx_mode_ == 2, kAmxPieces, &amx_);
    }
  }

  void set_inner_product(bool on) override { inner_product_ = on; }

  double total_weight() override {
    if (!weights_) return static_cast<double>(n_);
    double total = 0;
    for (std::size_t i = 0; i < n_; ++i) total += weights_[i];
    return total;
  }

  void set_weights(const double* weights) override { weights_ = weights; }

  std::vector<double> normalising_weights(const double* weights) override {
    std::vector<double> out(n_);
    for_each_chunk([&](const Chunk<T>& ch) {
      for_row_tasks(0, ch.x.rows, [&](std::size_t r0, std::size_t r1) {
        for (std::size_t i = r0; i < r1; ++i) {
          const T* row = ch.x.row(i);
          double sq = 0;
          for (std::size_t j = 0; j < dim_; ++j) sq += static_cast<double>(row[j]) * static_cast<double>(row[j]);
          const std::size_t g = ch.first + i;
          const double w = weights ? weights[g] : 1.0;
          out[g] = sq > 0 ? w / std::sqrt(sq) : 0.0;
        }
      });
    });
    return out;
  }

  std::size_t assign(std::int32_t* labels, T* dist) override {
    std::size_t changed = 0;
    for_each_chunk([&](const Chunk<T>& ch) { changed += assign_chunk(ch, 0, ch.x.rows, labels, dist); });
    return changed;
  }

  void lower_closest(const double* centroid, T* closest) override {
    std::vector<T> c(centroid, centroid + dim_);
    for_each_chunk([&](const Chunk<T>& ch) {
      T* cl = closest + ch.first;
      for_row_tasks(0, ch.x.rows, [&](std::size_t r0, std::size_t r1) {
        T d[kOneRows];
        for (std::size_t r = r0; r < r1; r += kOneRows) {
          const std::size_t m = std::min(kOneRows, r1 - r);
          table_->sqdist_one(ch.pts, c.data(), r, r + m, d);
          for (std::size_t i = 0; i < m; ++i) cl[r + i] = std::min(cl[r + i], d[i]);
        }
      });
    });
  }

  void potentials(const double* candidates, std::size_t m, const T* closest, double* pot) override {
    std::vector<T> cands(candidates, candidates + m * dim_);
    const std::vector<double> total = block_sums(m, [&](const Chunk<T>& ch, std::size_t r0, std::size_t r1, double* p) {
      const T* cl = closest + ch.first;
      const double* w = weights_ ? weights_ + ch.first : nullptr;
      T d[kOneRows * kMaxFew];
      for (std::size_t r = r0; r < r1; r += kOneRows) {
        const std::size_t rows = std::min(kOneRows, r1 - r);
        for (std::size_t t0 = 0; t0 < m; t0 += kMaxFew) {
          const std::size_t mm = std::min(kMaxFew, m - t0);
          table_->sqdist_few(ch.pts, cands.data() + t0 * dim_, mm, r, r + rows, d);
          for (std::size_t i = 0; i < rows; ++i) {
            const double wi = w ? w[r + i] : 1.0;
            for (std::size_t t = 0; t < mm; ++t) {
              p[t0 + t] += wi * static_cast<double>(std::min(cl[r + i], d[i * mm + t]));
            }
          }
        }
      }
    });
    std::copy(total.begin(), total.end(), pot);
  }

  double seed_start(const double* centre, std::size_t k) override {
    seed_closest_.assign(n_, std::numeric_limits<T>::infinity());
    seed_owner_.assign(n_, 0);
    seed_centres_.assign(centre, centre + dim_);
    seed_centres_.reserve(k * dim_);
    seed_count_ = 1;
    seed_window_ = SeedWindow{};
    seed_bounded_ = true;
    seed_norm_.resize(n_);
    for_each_chunk([&](const Chunk<T>& ch) {
      for_row_tasks(0, ch.x.rows, [&](std::size_t r0, std::size_t r1) {
        seed_norms(ch.pts, r0, r1, seed_norm_.data() + ch.first + r0);
      });
    });
    lower_closest(centre, seed_closest_.data());
    seed_distances_ = n_;
    return potential(seed_closest_.data(), weights_, n_);
  }

  std::vector<std::size_t> seed_draw(const std::vector<double>& targets) override {
    return search_cumulative(seed_closest_.data(), weights_, n_, targets);
  }

  void seed_potentials(const double* candidates, std::size_t m, double* pot) override {
    seed_bounded_ = seed_window_.bounded_next();
    seed_cands_.assign(candidates, candidates + m * dim_);
    std::vector<double> cand_norm;
    if (seed_bounded_) {
      seed_thresholds(*table_, dim_, seed_centres_.data(), seed_count_, seed_cands_.data(), m, seed_thr_);
      cand_norm.resize(m);
      seed_norms(centres_ref(seed_cands_.data()), 0, m, cand_norm.data());
    }
    const SeedStep<T> step{seed_cands_.data(), m, seed_bounded_, seed_thr_.data(), cand_norm.data()};
    const std::size_t sr = stat_rows(row_bytes_);
    seed_low_.resize((n_ + sr - 1) / sr);
    seed_overflow_.assign(seed_low_.size(), 0);
    std::uint64_t computed = 0;
    const std::vector<double> total = block_sums(m, [&](const Chunk<T>& ch, std::size_t r0, std::size_t r1, double* p) {
      const std::size_t b = (ch.first + r0) / sr;
      seed_low_[b].clear();
      // Lowerings for at most half the rows are kept (all candidates together); more (the
      // first steps) and keeping the candidate re-reads the block.
      SeedRecords<T> rec{&seed_low_[b], r0, (r1 - r0) / 2};
      const SeedRows<T> rows{seed_closest_.data() + ch.first, seed_owner_.data() + ch.first,
                             weights_ ? weights_ + ch.first : nullptr, seed_norm_.data() + ch.first};
      const std::uint64_t c = seed_block_potentials(*table_, ch.pts, r0, r1, rows, step, p, &rec);
      seed_overflow_[b] = rec.overflow;
#pragma omp atomic
      computed += c;
    });
    seed_distances_ += computed;
    if (seed_bounded_) seed_window_.record(computed, n_ * m);
    std::copy(total.begin(), total.end(), pot);
  }

  void seed_keep(std::size_t t) override {
    const std::size_t at = seed_centres_.size();
    seed_centres_.insert(seed_centres_.end(), seed_cands_.begin() + static_cast<std::ptrdiff_t>(t * dim_),
                         seed_cands_.begin() + static_cast<std::ptrdiff_t>((t + 1) * dim_));
    const T* c = seed_centres_.data() + at;
    const auto index = static_cast<std::int32_t>(seed_count_);
    const auto cand = static_cast<std::uint32_t>(t);
    const std::size_t nb = seed_low_.size(), sr = stat_rows(row_bytes_);
    bool overflow = false;
    // The lowerings the potentials recorded (distinct rows per block, so in any order).
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 16) reduction(|| : overflow)
    for (std::size_t b = 0; b < nb; ++b) {
      if (seed_overflow_[b]) {
        overflow = true;
        continue;
      }
      const std::size_t first = b * sr;
      for (const SeedLowering<T>& low : seed_low_[b]) {
        if (low.cand != cand) continue;
        seed_closest_[first + low.row] = low.dist;
        seed_owner_[first + low.row] = index;
      }
    }
    if (overflow) lower_overflowed(c, index);
    ++seed_count_;
  }

  // keep's pass over the blocks whose lowerings did not fit: as lower_closest, with the bounds
  // when the step had them (unbounded steps: zero thresholds, no norm test).
  void lower_overflowed(const T* c, std::int32_t index) {
    double norm = -1;
    if (seed_bounded_) {
      seed_thresholds(*table_, dim_, seed_centres_.data(), seed_count_, c, 1, seed_thr_);
      seed_norms(centres_ref(c), 0, 1, &norm);
    } else {
      seed_thr_.assign(seed_count_, 0.0);
    }
    const std::size_t sr = stat_rows(row_bytes_);
    std::uint64_t computed = 0;
    for_each_chunk([&](const Chunk<T>& ch) {
      const std::size_t b0 = ch.first / sr, nb = (ch.x.rows + sr - 1) / sr;
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1) reduction(+ : computed)
      for (std::size_t b = 0; b < nb; ++b) {
        if (!seed_overflow_[b0 + b]) continue;
        computed += seed_lower_rows(*table_, ch.pts, b * sr, std::min(ch.x.rows, (b + 1) * sr),
                                    seed_norm_.data() + ch.first, c, norm, seed_thr_.data(), index,
                                    seed_closest_.data() + ch.first, seed_owner_.data() + ch.first);
      }
    });
    seed_distances_ += computed;
  }

  std::vector<std::size_t> seed_oversample(double l, double psi, std::uint64_t key) override {
    std::vector<char> drawn(n_, 0);
    const double scale = psi > 0 ? l / psi : 0.0;
    for_row_tasks(0, n_, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t i = r0; i < r1; ++i) {
        const double p = (weights_ ? weights_[i] : 1.0) * static_cast<double>(seed_closest_[i]) * scale;
        drawn[i] = p > 0 && keyed_uniform(key, row_offset_ + i) < p;
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
    for_row_tasks(0, n_, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t i = r0; i < r1; ++i) {
        if (dist[i] < seed_closest_[i]) {
          seed_closest_[i] = dist[i];
          seed_owner_[i] = base + lab[i];
        }
      }
    });
    seed_centres_.insert(seed_centres_.end(), centres, centres + m * dim_);
    seed_count_ += m;
    const std::size_t sr = stat_rows(row_bytes_);
    const std::size_t nb = (n_ + sr - 1) / sr;
    std::vector<double> part(nb, 0.0);
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
    for (std::size_t b = 0; b < nb; ++b) {
      double p = 0;
      for (std::size_t i = b * sr; i < std::min(n_, (b + 1) * sr); ++i) {
        p += (weights_ ? weights_[i] : 1.0) * static_cast<double>(seed_closest_[i]);
      }
      part[b] = p;
    }
    double psi = 0;
    for (double p : part) psi += p;
    return psi;
  }

  std::vector<double> seed_owner_weights() override {
    std::vector<double> out(seed_count_, 0.0);
    for (std::size_t i = 0; i < n_; ++i) out[static_cast<std::size_t>(seed_owner_[i])] += weights_ ? weights_[i] : 1.0;
    return out;
  }

  std::uint64_t seed_distances() const override { return seed_distances_; }

  const char* update_path() const override { return path_; }

  // m centres (m x dim, as the kernels subtract them) as rows with a zero shift.
  PointsRef<T> centres_ref(const T* centres) {
    seed_zero_.assign(dim_, T(0));
    return PointsRef<T>{centres, dim_, dim_, seed_zero_.data()};
  }

  void seed_end() override {
    seed_closest_ = {};
    seed_owner_ = {};
    seed_norm_ = {};
    seed_centres_ = {};
    seed_cands_ = {};
    seed_thr_ = {};
    seed_low_ = {};
    seed_overflow_ = {};
    seed_count_ = 0;
  }

  void sqdistances(T* out) override {
    for_each_chunk([&](const Chunk<T>& ch) {
      T* o = out + ch.first * k_;
      for_row_tasks(0, ch.x.rows, [&](std::size_t r0, std::size_t r1) {
        panel_->sqdist_rows(ch.pts, packed_.data(), k_, r0, r1, o + r0 * k_, k_);
      });
    });
  }

  double update(const std::int32_t* labels, const double* centroids, std::size_t k, double* sums,
                double* wsums) override {
    begin_sums(centroids, k, sums, wsums);
    double inertia = 0;
    const std::size_t group = group_rows();
    for_each_chunk([&](const Chunk<T>& ch) {
      for (std::size_t r0 = 0; r0 < ch.x.rows; r0 += group) {
        update_group(ch, r0, std::min(ch.x.rows, r0 + group), labels, k, sums, wsums, &inertia);
      }
    });
    end_sums(k, sums, wsums);
    return inertia;
  }

  double assign_update(const double* centroids, std::size_t k, std::int32_t* labels, T* dist,
                       double* sums, double* wsums, std::size_t* changed) override {
    set_centroids(centroids, k);
    prepare_bounds(centroids, k);
    begin_sums(centroids, k, sums, wsums);
    double inertia = 0;
    std::size_t total_changed = 0;
    counts_ = {};
    const bool fused = fused_fits(k);
    path_ = fused ? "fused" : "grouped";
    const std::size_t group = group_rows();
    for_each_chunk([&](const Chunk<T>& ch) {
      if (fused) {
        assign_update_tiled(ch, k, labels, dist, sums, wsums, &inertia, &total_changed);
        return;
      }
      // Assign a group of super-blocks, then reduce it while some of it is still in the caches.
      for (std::size_t r0 = 0; r0 < ch.x.rows; r0 += group) {
        const std::size_t r1 = std::min(ch.x.rows, r0 + group);
        total_changed += iter_bounded_ ? bounded_chunk(ch, r0, r1, labels, dist) : assign_chunk(ch, r0, r1, labels, dist);
        update_group(ch, r0, r1, labels, k, sums, wsums, &inertia);
      }
    });
    end_sums(k, sums, wsums);
    *changed = total_changed;
    if (iter_bounded_) {
      last_distances_ = counts_.distances;
      dist_stale_ = counts_.pruned > 0;
      if (bounds_valid_) ++bounded_iters_;
      bounds_valid_ = true;
      prev_c_.swap(cur_c_);
      // Auto gives up where the bounds do not pay: a survivor's distance costs about twice the
      // plain kernel's (gathered rows, per-group reductions, the bounds' upkeep; measured
      // 1.8-1.9x, docs/PERFORMANCE.md). Every kAutoWindow bounded iterations from the second
      // window on, if the last window computed over a third of all distances on average and
      // no less than 0.9x the window before (the bounds are not tightening), the run goes on
      // unpruned (bitwise the same; only the speed differs). Counts only: deterministic.
      if (bounded_iters_ > 0) fractions_.push_back(static_cast<double>(last_distances_) / (static_cast<double>(n_) * static_cast<double>(k)));
      const std::size_t w = kAutoWindow, m = fractions_.size();
      auto mean = [&](std::size_t a, std::size_t b) {
        double t = 0;
        for (std::size_t i = a; i < b; ++i) t += fractions_[i];
        return t / static_cast<double>(b - a);
      };
      if (auto_prune_ && m >= 2 * w && m % w == 0 && mean(m - w, m) > 1.0 / 3 &&
          mean(m - w, m) >= 0.9 * mean(m - 2 * w, m - w)) {
        prune_ = false;
      }
    } else {
      last_distances_ = static_cast<std::uint64_t>(n_) * k;
      dist_stale_ = false;
    }
    return inertia;
  }

  std::uint64_t last_distances() const override { return last_distances_; }

  bool begin_run(Prune prune, std::size_t k) override {
    prune_ = false;
    bounds_valid_ = false;
    dist_stale_ = false;
    iter_bounded_ = false;
    grouped_ = false;
    bounded_iters_ = 0;
    fractions_.clear();
    auto_prune_ = prune == Prune::kAuto;
    if (prune == Prune::kOff || k == 0) return false;
    // Groups of whole panels, in index order: one panel each (Yinyang's K/10 centroids per
    // group is about one panel of 16 or 32 at the K where grouping pays), fewer and larger
    // groups where their float lower bounds would outgrow X itself (4 (1 + G) bytes per row).
    const PanelKernels<T>* panel = panel_for(k);
    const std::size_t npanels = (k + panel->nr - 1) / panel->nr;
    const std::size_t fit = row_bytes_ / 4 > 1 ? row_bytes_ / 4 - 1 : 1;
    const std::size_t cap = std::min(kMaxGroups, fit);
    const std::size_t per = (npanels + cap - 1) / cap;
    group_size_ = per * panel->nr;
    groups_ = (k + group_size_ - 1) / group_size_;
    if (prune == Prune::kAuto && 4 * (1 + groups_) > row_bytes_) return false;
    // 16-bit rows on AMX tiles: the bounded path scores survivors with the float32 kernels (the
    // same bits, not the tiles' speed); auto leaves them to the tiles, on prunes them.
    if (prune == Prune::kAuto && amx_mode_) return false;
    // The largest row norm, for the guard against scores beyond float range: one pass over X,
    // once per shift (not once per run).
    if (rmax_ < 0) {
      rmax_ = 0;
      for_each_chunk([&](const Chunk<T>& ch) {
        double mx = 0;
#pragma omp parallel for num_threads(threads_) schedule(static) reduction(max : mx)
        for (std::size_t i = 0; i < ch.x.rows; ++i) {
          const T* row = ch.x.row(i);
          double sq = 0;
          for (std::size_t j = 0; j < dim_; ++j) {
            const double v = static_cast<double>(static_cast<T>(row[j] - shift_t_[j]));
            sq += v * v;
          }
          mx = std::max(mx, sq);
        }
        rmax_ = std::max(rmax_, mx);
      });
      rmax_ = std::sqrt(rmax_) * (1 + 0x1p-30);
    }
    ub_.assign(n_, 0.0f);
    lb_.assign(n_ * groups_, 0.0f);
    prune_ = true;
    return true;
  }

 private:
  // The panel width the kernels use for k centroids (both panels follow one contract).
  const PanelKernels<T>* panel_for(std::size_t k) const { return k <= table_->narrow.nr ? &table_->narrow : &table_->wide; }

  // ---- Bounded assignment (docs/KERNELS.md, "Bounded assignment") ----

  // Bounded iterations per window of auto's judgement of the payoff.
  static constexpr std::size_t kAutoWindow = 10;

  // Most lower bounds kept per row (Yinyang groups).
  static constexpr std::size_t kMaxGroups = 64;

  struct BoundCounts {
    std::uint64_t distances = 0;
    std::uint64_t pruned = 0;
  };

  // Per-thread scratch of the bounded assignment.
  struct BoundScratch {
    std::vector<std::pair<std::int32_t, std::uint32_t>> keyed;  // (label, row) of the survivors
    std::vector<std::uint32_t> idx;
    std::vector<T> xp, xnorm, min1, min2, best_s;
    std::vector<std::int32_t> idx1, best_j;
    std::vector<double> eps;
    std::vector<char> computed;
  };

  BoundScratch make_scratch() const {
    BoundScratch s;
    const std::size_t P = table_->center_pad;
    s.idx.resize(P);
    s.xp.resize(P * dim_);
    s.xnorm.resize(P);
    s.min1.resize(P * groups_);
    s.min2.resize(P * groups_);
    s.idx1.resize(P * groups_);
    s.best_s.resize(P);
    s.best_j.resize(P);
    s.eps.resize(P);
    s.computed.resize(groups_);
    return s;
  }

  // Rows per sorting block of the bounded assignment: survivors are sorted by label within it
  // and scored a sliver at a time. A power of two no larger than a fused tile, so the blocks
  // are the same whichever path or chunking delivers the rows (the distance counts too).
  std::size_t bound_block_rows() const { return std::min<std::size_t>(512, fused_tile_rows(row_bytes_)); }

  // The centroids as the kernels multiply them, their norms and drifts, and the iteration's
  // slack; decides whether this assign_update runs bounded.
  void prepare_bounds(const double* centroids, std::size_t k) {
    iter_bounded_ = false;
    if (!prune_) return;
    cur_c_.resize(k * dim_);
    for (std::size_t i = 0; i < k * dim_; ++i) cur_c_[i] = static_cast<T>(centroids[i]);
    const double rel = 1 + static_cast<double>(dim_ + 4) * 0x1p-52;  // double sums of squares
    double nmin = std::numeric_limits<double>::infinity(), nmax = 0;
    for (std::size_t c = 0; c < k; ++c) {
      double sq = 0;
      for (std::size_t j = 0; j < dim_; ++j) {
        const double v = static_cast<double>(cur_c_[c * dim_ + j]);
        sq += v * v;
      }
      nmin = std::min(nmin, sq / rel);
      nmax = std::max(nmax, sq * rel);
    }
    bounds::Slack& sl = slack_;
    sl.cmax = std::sqrt(nmax) * (1 + 0x1p-50);
    sl.factor = 4 * bounds::gamma<T>(2 * dim_ + 4);
    sl.eta = 8 * static_cast<double>(dim_ + 4) * static_cast<double>(std::numeric_limits<T>::denorm_min());
    sl.nmin = inner_product_ ? nmin : 0;
    sl.nmax = inner_product_ ? nmax : 0;
    sl.dn = inner_product_ ? nmax - nmin + std::ldexp(nmax, -50) : 0;
    // Scores and bounds must stay far inside float range (the float bounds, and the kernels'
    // float scores, whose NaN and infinity rules the bounded path does not reproduce).
    const double big = (sl.cmax + rmax_) * (sl.cmax + rmax_);
    if (!(big < 1e30)) {
      bounds_valid_ = false;
      return;
    }
    if (bounds_valid_ && prev_c_.size() != cur_c_.size()) bounds_valid_ = false;
    if (!grouped_ || order_.size() != k) make_groups(centroids, k);
    // The centroids packed in group order, with each position's centroid index.
    {
      std::vector<double> permuted(k * dim_);
      for (std::size_t p = 0; p < k; ++p) {
        std::copy_n(centroids + order_[p] * dim_, dim_, permuted.begin() + static_cast<std::ptrdiff_t>(p * dim_));
      }
      T* bp = bpacked_.reserve(panel_->packed_size(k, dim_));
      panel_->pack_centroids(permuted.data(), k, dim_, bp);
      const std::size_t kpad = (k + panel_->nr - 1) / panel_->nr * panel_->nr;
      if (inner_product_) std::fill_n(bp + kpad * dim_, k, T(0));
      ids_.assign(kpad, std::numeric_limits<T>::infinity());
      for (std::size_t p = 0; p < k; ++p) ids_[p] = static_cast<T>(order_[p]);
    }
    if (bounds_valid_) {
      drift_.assign(k, 0.0);
      gdrift_.assign(groups_, 0.0);
      for (std::size_t c = 0; c < k; ++c) {
        double sq = 0;
        for (std::size_t j = 0; j < dim_; ++j) {
          // Differences of two T values are exact in double.
          const double e = static_cast<double>(cur_c_[c * dim_ + j]) - static_cast<double>(prev_c_[c * dim_ + j]);
          sq += e * e;
        }
        drift_[c] = std::sqrt(sq) * rel * (1 + 0x1p-50);
        const std::size_t g = pos_of_[c] / group_size_;
        gdrift_[g] = std::max(gdrift_[g], drift_[c]);
      }
    }
    iter_bounded_ = true;
  }

  // Yinyang's groups: centroids that are close together, so that a row far from a group is far
  // from all of it. Balanced recursive bisection of the first iteration's centroids (a group is
  // whole panels, so every group but the last holds exactly group_size_): split along the line
  // between two mutually far centroids, at the projection's order statistic. Kept for the run.
  void make_groups(const double* c, std::size_t k) {
    order_.resize(k);
    for (std::size_t i = 0; i < k; ++i) order_[i] = static_cast<std::uint32_t>(i);
    const std::size_t dim = dim_, gs = group_size_;
    auto sq = [&](std::size_t a, std::size_t b) {
      double t = 0;
      for (std::size_t j = 0; j < dim; ++j) {
        const double e = c[a * dim + j] - c[b * dim + j];
        t += e * e;
      }
      return t;
    };
    std::vector<std::pair<double, std::uint32_t>> proj;
    std::vector<std::pair<std::size_t, std::size_t>> todo{{0, k}};
    while (!todo.empty()) {
      // Plain variables, not a structured binding: the lambda below captures them (clang 14).
      const std::size_t lo = todo.back().first, hi = todo.back().second;
      todo.pop_back();
      if (hi - lo <= gs) continue;
      const std::size_t ng = (hi - lo + gs - 1) / gs, left = ng / 2 * gs;
      auto farthest_from = [&](std::size_t a) {
        std::size_t best = order_[lo];
        double bd = -1;
        for (std::size_t p = lo; p < hi; ++p) {
          const double dd = sq(a, order_[p]);
          if (dd > bd) {
            bd = dd;
            best = order_[p];
          }
        }
        return best;
      };
      const std::size_t b = farthest_from(order_[lo]), e = farthest_from(b);
      proj.clear();
      for (std::size_t p = lo; p < hi; ++p) {
        double t = 0;
        for (std::size_t j = 0; j < dim; ++j) t += c[order_[p] * dim + j] * (c[b * dim + j] - c[e * dim + j]);
        proj.emplace_back(t, order_[p]);
      }
      std::sort(proj.begin(), proj.end());
      for (std::size_t p = lo; p < hi; ++p) order_[p] = proj[p - lo].second;
      todo.emplace_back(lo, lo + left);
      todo.emplace_back(lo + left, hi);
    }
    pos_of_.resize(k);
    for (std::size_t p = 0; p < k; ++p) pos_of_[order_[p]] = static_cast<std::uint32_t>(p);
    grouped_ = true;
  }

  // Bounded FlashAssign over rows [r0, r1) of a chunk, in parallel blocks; returns the labels
  // changed and adds to counts_.
  std::size_t bounded_chunk(const Chunk<T>& ch, std::size_t r0, std::size_t r1, std::int32_t* labels, T* dist) {
    const std::size_t bb = bound_block_rows();
    const std::size_t nb = (r1 - r0 + bb - 1) / bb;
    std::size_t changed = 0;
    std::uint64_t distances = 0, pruned = 0;
#pragma omp parallel num_threads(threads_) reduction(+ : changed, distances, pruned)
    {
      BoundScratch s = make_scratch();
      BoundCounts c;
#pragma omp for schedule(dynamic, 1)
      for (std::size_t b = 0; b < nb; ++b) {
        changed += bounded_block(ch, r0 + b * bb, std::min(r1, r0 + (b + 1) * bb), labels + ch.first,
                                 dist + ch.first, s, c);
      }
      distances += c.distances;
      pruned += c.pruned;
    }
    counts_.distances += distances;
    counts_.pruned += pruned;
    return changed;
  }

  // Rows [r0, r1) of a chunk on one thread, in sorting blocks (lab and dst chunk-local).
  std::size_t bounded_rows(const Chunk<T>& ch, std::size_t r0, std::size_t r1, std::int32_t* lab, T* dst,
                           BoundScratch& s, BoundCounts& c) {
    std::size_t changed = 0;
    const std::size_t bb = bound_block_rows();
    for (std::size_t b = r0; b < r1; b += bb) changed += bounded_block(ch, b, std::min(r1, b + bb), lab, dst, s, c);
    return changed;
  }

  // One sorting block. Each row's bounds first follow its centroids' drifts; a row whose upper
  // bound stays below its lower bounds by the scores' rounding slack keeps its label and
  // computes nothing. The others are sorted by label and scored a sliver at a time: first the
  // groups of their own centroids, then every group whose lower bound does not exceed the
  // best score found, by the same micro-kernel and arithmetic as assign_rows. A group skipped
  // for a row provably holds no centroid whose float score could reach the row's best, so the
  // label (lowest index among equal scores) and distance are bitwise assign_rows' own.
  std::size_t bounded_block(const Chunk<T>& ch, std::size_t b0, std::size_t b1, std::int32_t* lab, T* dst,
                            BoundScratch& s, BoundCounts& counts) {
    const std::size_t G = groups_, gs = group_size_, P = table_->center_pad, dim = dim_, k = k_;
    const bounds::Slack& sl = slack_;
    const bool valid = bounds_valid_;
    s.keyed.clear();
    for (std::size_t r = b0; r < b1; ++r) {
      if (!valid) {
        s.keyed.emplace_back(0, static_cast<std::uint32_t>(r));
        continue;
      }
      const std::size_t gr = ch.first + r;
      const std::int32_t a = lab[r];
      const float U = bounds::up_add(ub_[gr], drift_[static_cast<std::size_t>(a)]);
      ub_[gr] = U;
      float* lb = lb_.data() + gr * G;
      float lmin = std::numeric_limits<float>::infinity();
      for (std::size_t g = 0; g < G; ++g) {
        const float l = bounds::down_sub(lb[g], gdrift_[g]);
        lb[g] = l;
        lmin = std::min(lmin, l);
      }
      const double u = U, l = lmin;
      // The row's norm is at most U + cmax (triangle inequality through its centroid).
      if (u * u + 2 * sl.eps(u + sl.cmax) + sl.dn < l * l * bounds::kTestMargin) {
        ++counts.pruned;
        continue;
      }
      s.keyed.emplace_back(static_cast<std::int32_t>(pos_of_[static_cast<std::size_t>(a)]), static_cast<std::uint32_t>(r));
    }
    // Survivors of one centroid, then of its group, go together: a sliver's rows mostly need
    // the same groups.
    if (valid) std::sort(s.keyed.begin(), s.keyed.end());
    std::size_t changed = 0;
    const std::size_t ns = s.keyed.size();
    const double rel_x = 1.0 / (1.0 - bounds::gamma<T>(2 * dim + 4));
    for (std::size_t s0 = 0; s0 < ns; s0 += P) {
      const std::size_t m = std::min(P, ns - s0);
      for (std::size_t i = 0; i < m; ++i) s.idx[i] = s.keyed[s0 + i].second;
      table_->pack_rows(ch.pts, s.idx.data(), m, s.xp.data(), s.xnorm.data());
      std::fill(s.computed.begin(), s.computed.end(), 0);
      for (std::size_t i = 0; i < m; ++i) {
        s.best_s[i] = std::numeric_limits<T>::infinity();
        s.best_j[i] = std::numeric_limits<std::int32_t>::max();
        s.eps[i] = sl.eps(std::sqrt(static_cast<double>(s.xnorm[i]) * rel_x) * (1 + 0x1p-40));
      }
      auto score = [&](std::size_t g) {
        const std::size_t c0 = g * gs, c1 = std::min(k, c0 + gs);
        panel_->group_min(s.xp.data(), dim, bpacked_.data(), ids_.data(), k, c0, c1, m, s.min1.data() + g * P,
                          s.idx1.data() + g * P, s.min2.data() + g * P);
        s.computed[g] = 1;
        counts.distances += m * (c1 - c0);
        for (std::size_t i = 0; i < m; ++i) {
          const T v = s.min1[g * P + i];
          const std::int32_t j = s.idx1[g * P + i];
          if (v < s.best_s[i] || (v == s.best_s[i] && j < s.best_j[i])) {
            s.best_s[i] = v;
            s.best_j[i] = j;
          }
        }
      };
      if (!valid) {
        for (std::size_t g = 0; g < G; ++g) score(g);
      } else {
        for (std::size_t i = 0; i < m; ++i) {
          const std::size_t g = pos_of_[static_cast<std::size_t>(lab[s.idx[i]])] / gs;
          if (!s.computed[g]) score(g);
        }
        for (std::size_t g = 0; g < G; ++g) {
          if (s.computed[g]) continue;
          for (std::size_t i = 0; i < m; ++i) {
            // Every score in g is at least L^2 - ||x||^2 - nmax - eps: skip g if that exceeds
            // the best score found (so none can equal it either).
            const double l = lb_[(ch.first + s.idx[i]) * G + g];
            const double thr = static_cast<double>(s.best_s[i]) + static_cast<double>(s.xnorm[i]) + 2 * s.eps[i] + sl.nmax;
            if (!(l * l * bounds::kTestMargin > thr)) {
              score(g);
              break;
            }
          }
        }
      }
      for (std::size_t i = 0; i < m; ++i) {
        const std::size_t r = s.idx[i], gr = ch.first + r;
        const std::int32_t label = s.best_j[i];
        changed += lab[r] != label;
        lab[r] = label;
        dst[r] = std::max(T(0), s.xnorm[i] + s.best_s[i]);
        const double x = s.xnorm[i], e = s.eps[i];
        ub_[gr] = bounds::up(std::sqrt(std::max(0.0, static_cast<double>(s.best_s[i]) + x + e + sl.nmax)));
        float* lb = lb_.data() + gr * G;
        for (std::size_t g = 0; g < G; ++g) {
          if (!s.computed[g]) continue;
          const T v = s.idx1[g * P + i] == label ? s.min2[g * P + i] : s.min1[g * P + i];
          lb[g] = bounds::down(std::sqrt(std::max(0.0, static_cast<double>(v) + x - e + sl.nmin)));
        }
      }
    }
    return changed;
  }

  template <class Fn>
  void for_each_chunk(Fn&& fn) {
    data_.for_each_chunk(granule_, [&](MatrixView<T> x, std::size_t first) {
      fn(Chunk<T>{x, first, PointsRef<T>{x.data, x.stride, dim_, shift_t_.data()}});
    });
  }

  // FlashAssign over rows [r0, r1) of a chunk; labels and dist are indexed by global row.
  std::size_t assign_chunk(const Chunk<T>& ch, std::size_t r0, std::size_t r1, std::int32_t* labels, T* dist) {
    std::size_t changed = 0;
    std::int32_t* lab = labels + ch.first;
    T* dst = dist + ch.first;
    for_row_tasks(r0, r1, [&](std::size_t a, std::size_t b) {
      const std::size_t c = assign_rows(ch.pts, a, b, lab, dst);
#pragma omp atomic
      changed += c;
    });
    return changed;
  }

  // The packed centroids' squared norms (after the panels; see kernel_table.hpp).
  T* packed_norms() { return packed_.data() + (k_ + panel_->nr - 1) / panel_->nr * panel_->nr * dim_; }

  // FlashAssign over rows [a, b) of a chunk on one thread: on AMX tiles or AVX-512-BF16 for
  // 16-bit rows when enabled, else the SIMD target's kernels (bitwise the same labels and
  // distances).
  std::size_t assign_rows(const PointsRef<T>& pts, std::size_t a, std::size_t b, std::int32_t* lab, T* dst) {
    if constexpr (std::is_same_v<T, float>) {
      if (amx_mode_) {
        return amx_assign_rows(amx_, pts,
                               AmxRescore{table_->center_rows, table_->center_pad, panel_->assign_rows, packed_.data()},
                               a, b, lab, dst, half_kernel_);
      }
    }
    return panel_->assign_rows(pts, packed_.data(), k_, a, b, lab, dst);
  }

  // The fused step pays K x D partial sums per tile; worth it while they are at most a quarter
  // of the tile's own bytes (K up to 1024 at D = 32 float, 32 at D = 784).
  bool fused_fits(std::size_t k) const {
    const std::size_t tr = fused_tile_rows(row_bytes_);
    return k * sizeof(double) * 4 <= tr * sizeof(T) && n_ >= 2 * tr;
  }

  // The kernels sum in X's own coordinates: raw sums (exact enough in float64 even for a large
  // common offset) against the centroids moved back by the shift. Sums are carried across
  // super-blocks and chunks and centred once at the end.
  void begin_sums(const double* centroids, std::size_t k, double* sums, double* wsums) {
    abs_centroids_.resize(k * dim_);
    for (std::size_t c = 0; c < k; ++c) {
      for (std::size_t j = 0; j < dim_; ++j) abs_centroids_[c * dim_ + j] = centroids[c * dim_ + j] + shift_[j];
    }
    std::fill(sums, sums + k * dim_, 0.0);
    std::fill(wsums, wsums + k, 0.0);
  }

  void end_sums(std::size_t k, double* sums, const double* wsums) const {
    for (std::size_t c = 0; c < k; ++c) {
      for (std::size_t j = 0; j < dim_; ++j) sums[c * dim_ + j] -= wsums[c] * shift_[j];
    }
  }

  // Rows per update group: whole super-blocks, enough of them for kBlocksPerThread blocks per
  // thread. Only the parallel schedule depends on it (and on the thread count), never the order
  // of additions.
  std::size_t group_rows() const {
    const std::size_t blocks_per_super = std::max<std::size_t>(1, granule_ / kUpdateBlock);
    const std::size_t want = kBlocksPerThread * static_cast<std::size_t>(threads_);
    return granule_ * ((want + blocks_per_super - 1) / blocks_per_super);
  }

  // Sort-Inverse Update of the super-blocks in rows [r0, r1) of a chunk (r0 on a super-block
  // boundary). Each super-block's labels are counting-sorted on their own and its sorted order is
  // cut into blocks of kUpdateBlock positions; a segment is one cluster's run inside one block.
  // All blocks of the group are reduced in parallel; then each cluster's segments are added to
  // its running sum in (super-block, block) order, and the blocks' inertias to *inertia in block
  // order -- the order a single pass over all of X would use, whatever the grouping or chunking.
  void update_group(const Chunk<T>& ch, std::size_t r0, std::size_t r1, const std::int32_t* labels,
                    std::size_t k, double* sums, double* wsums, double* inertia) {
    const std::size_t dim = dim_;
    const std::size_t S = granule_;
    const std::size_t B = kUpdateBlock;
    const std::size_t nsb = (r1 - r0 + S - 1) / S;
    perm_.resize(r1 - r0);
    offsets_.resize(nsb * (k + 1));
    for (std::size_t sb = 0; sb < nsb; ++sb) {
      const std::size_t a = r0 + sb * S;
      sort_by_label(labels + ch.first + a, std::min(S, r1 - a), k, perm_.data() + sb * S,
                    offsets_.data() + sb * (k + 1));
    }

    // Segments in (super-block, cluster, position) order, which is also position order in perm_
    // (super-block sb's sorted order occupies perm_[sb*S ...]); blocks never straddle two
    // super-blocks.
    seg_begin_.clear();
    seg_cluster_.clear();
    block_first_.clear();  // first perm_ position of each block
    first_seg_.assign(nsb * (k + 1), 0);
    for (std::size_t sb = 0; sb < nsb; ++sb) {
      const std::size_t base = sb * S;
      const std::size_t len = std::min(S, r1 - r0 - base);
      for (std::size_t p = 0; p < len; p += B) block_first_.push_back(base + p);
      const std::uint64_t* off = offsets_.data() + sb * (k + 1);
      for (std::size_t c = 0; c < k; ++c) {
        first_seg_[sb * (k + 1) + c] = seg_begin_.size();
        for (std::size_t pos = off[c]; pos < off[c + 1];) {
          const std::size_t end = std::min<std::size_t>(off[c + 1], (pos / B + 1) * B);
          seg_begin_.push_back(base + pos);
          seg_cluster_.push_back(static_cast<std::uint32_t>(c));
          pos = end;
        }
      }
      first_seg_[sb * (k + 1) + k] = seg_begin_.size();
    }
    const std::size_t nseg = seg_begin_.size();
    const std::size_t nblocks = block_first_.size();
    seg_begin_.push_back(r1 - r0);
    block_first_.push_back(r1 - r0);
    // First segment of each block (segments and blocks are both in position order).
    block_seg_.assign(nblocks + 1, nseg);
    for (std::size_t b = 0, s = 0; b < nblocks; ++b) {
      while (s < nseg && seg_begin_[s] < block_first_[b]) ++s;
      block_seg_[b] = s;
    }

    part_sum_.assign(nseg * dim, 0.0);
    part_w_.assign(nseg, 0.0);
    block_inertia_.assign(nblocks, 0.0);
#pragma omp parallel num_threads(threads_)
    {
      std::vector<double> sq(dim);
#pragma omp for schedule(dynamic, 1)
      for (std::size_t b = 0; b < nblocks; ++b) {
        const std::size_t sb = block_first_[b] / S;
        const std::size_t a = r0 + sb * S;  // the super-block's first row in the chunk
        const std::size_t sb_end = std::min(S, r1 - a) + sb * S;  // its end in perm_
        const PointsRef<T> pts{ch.x.row(a), ch.x.stride, dim, shift_t_.data()};
        const double* w = weights_ ? weights_ + ch.first + a : nullptr;
        std::fill(sq.begin(), sq.end(), 0.0);
        for (std::size_t s = block_seg_[b]; s < block_seg_[b + 1]; ++s) {
          const std::size_t c = seg_cluster_[s];
          table_->accumulate_run(pts, perm_.data() + seg_begin_[s], seg_begin_[s + 1] - seg_begin_[s],
                                 sb_end - seg_begin_[s], w, abs_centroids_.data() + c * dim,
                                 part_sum_.data() + s * dim, part_w_.data() + s, sq.data());
        }
        double acc = 0;
        for (std::size_t j = 0; j < dim; ++j) acc += sq[j];
        block_inertia_[b] = acc;
      }
#pragma omp for schedule(dynamic, 16)
      for (std::size_t c = 0; c < k; ++c) {
        double* out = sums + c * dim;
        for (std::size_t sb = 0; sb < nsb; ++sb) {
          for (std::size_t s = first_seg_[sb * (k + 1) + c]; s < first_seg_[sb * (k + 1) + c + 1]; ++s) {
            const double* p = part_sum_.data() + s * dim;
            for (std::size_t j = 0; j < dim; ++j) out[j] += p[j];
            wsums[c] += part_w_[s];
          }
        }
      }
    }
    for (double v : block_inertia_) *inertia += v;
  }

  // FlashAssign and a tile-local Sort-Inverse Update in one pass over a chunk: each tile of rows
  // is assigned, its labels counting-sorted into runs (the tile's inverse mapping) and the runs
  // reduced from cache into the tile's partial sums; partials are added in tile order. Tiles go
  // in waves so that only a few tiles' partials exist at a time. Tiles' inertias are added to
  // *inertia one by one in tile order, as if all chunks were one.
  void assign_update_tiled(const Chunk<T>& ch, std::size_t k, std::int32_t* labels, T* dist,
                           double* sums, double* wsums, double* inertia, std::size_t* changed) {
    const std::size_t n = ch.x.rows;
    const std::size_t dim = dim_;
    const std::size_t tr = fused_tile_rows(row_bytes_);
    const std::size_t ntiles = (n + tr - 1) / tr;
    const std::size_t wave = 2 * static_cast<std::size_t>(threads_);
    std::int32_t* lab = labels + ch.first;
    T* dst = dist + ch.first;
    const double* wts = weights_ ? weights_ + ch.first : nullptr;
    part_sum_.assign(wave * k * dim, 0.0);
    part_w_.assign(wave * k, 0.0);
    std::vector<double> tile_inertia(wave);
    std::vector<std::size_t> tile_changed(wave);
    for (std::size_t t0 = 0; t0 < ntiles; t0 += wave) {
      const std::size_t nw = std::min(wave, ntiles - t0);
#pragma omp parallel num_threads(threads_)
      {
        std::vector<std::uint32_t> off(k + 1), perm(tr);
        std::vector<double> sq(dim);
        BoundScratch bs = iter_bounded_ ? make_scratch() : BoundScratch{};
        BoundCounts bc;
#pragma omp for schedule(dynamic, 1)
        for (std::size_t w = 0; w < nw; ++w) {
          const std::size_t r0 = (t0 + w) * tr;
          const std::size_t r1 = std::min(n, r0 + tr);
          tile_changed[w] = iter_bounded_ ? bounded_rows(ch, r0, r1, lab, dst, bs, bc)
                                          : assign_rows(ch.pts, r0, r1, lab, dst);
          std::fill(off.begin(), off.end(), 0u);
          for (std::size_t i = r0; i < r1; ++i) ++off[static_cast<std::size_t>(lab[i]) + 1];
          for (std::size_t c = 0; c < k; ++c) off[c + 1] += off[c];
          std::vector<std::uint32_t> next(off.begin(), off.end() - 1);
          // Run indices are local to the tile (the kernel sees the tile's rows from 0).
          for (std::size_t i = r0; i < r1; ++i) perm[next[lab[i]]++] = static_cast<std::uint32_t>(i - r0);
          double* ps = part_sum_.data() + w * k * dim;
          double* pw = part_w_.data() + w * k;
          std::fill(ps, ps + k * dim, 0.0);
          std::fill(pw, pw + k, 0.0);
          std::fill(sq.begin(), sq.end(), 0.0);
          const std::size_t len = r1 - r0;
          const PointsRef<T> tile{ch.x.row(r0), ch.x.stride, dim, shift_t_.data()};
          for (std::size_t c = 0; c < k; ++c) {
            if (off[c + 1] == off[c]) continue;
            table_->accumulate_run(tile, perm.data() + off[c], off[c + 1] - off[c], len - off[c],
                                   wts ? wts + r0 : nullptr, abs_centroids_.data() + c * dim,
                                   ps + c * dim, pw + c, sq.data());
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
#pragma omp critical(flashkm_bound_counts)
        {
          counts_.distances += bc.distances;
          counts_.pruned += bc.pruned;
        }
      }
      for (std::size_t w = 0; w < nw; ++w) {
        *inertia += tile_inertia[w];
        *changed += tile_changed[w];
      }
    }
  }

  // Runs fn(a, b) over rows [r0, r1) in parallel tasks: enough of them for dynamic balancing,
  // each large enough to amortise its scratch set-up. For per-row work only (the split varies
  // with the thread count).
  template <class Fn>
  void for_row_tasks(std::size_t r0, std::size_t r1, Fn&& fn) {
    const std::size_t rows = r1 - r0;
    const std::size_t per = rows / (static_cast<std::size_t>(threads_) * 8) + 1;
    const std::size_t chunk = std::clamp<std::size_t>(per, 64, 8192);
    const std::size_t ntasks = (rows + chunk - 1) / chunk;
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
    for (std::size_t t = 0; t < ntasks; ++t) fn(r0 + t * chunk, std::min(r1, r0 + (t + 1) * chunk));
  }

  // Counting sort of n labels: offsets[c]..offsets[c+1] is cluster c's run in perm (indices
  // 0..n-1), each run in increasing point order (a stable sort, so the result does not depend
  // on how it is split).
  void sort_by_label(const std::int32_t* labels, std::size_t n, std::size_t k, std::uint32_t* perm,
                     std::uint64_t* offsets) {
    // Sized for the threads asked for; the team may get fewer (OMP_THREAD_LIMIT, nesting), so
    // the rows are split by the team's actual size.
    hist_.assign(static_cast<std::size_t>(threads_) * k, 0);
#pragma omp parallel num_threads(threads_)
    {
      const std::size_t nt = static_cast<std::size_t>(omp_get_num_threads());
      const std::size_t span = (n + nt - 1) / nt;
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
          offsets[c] = pos;
          for (std::size_t u = 0; u < nt; ++u) {
            const std::uint64_t cnt = hist_[u * k + c];
            hist_[u * k + c] = pos;
            pos += cnt;
          }
        }
        offsets[k] = pos;
      }
      for (std::size_t i = lo; i < hi; ++i) perm[h[labels[i]]++] = static_cast<std::uint32_t>(i);
    }
  }

  // Sums over all rows of width values per row, in fixed blocks of stat_rows rows run in
  // parallel: fn(chunk, r0, r1, part) adds the chunk's rows [r0, r1) into its own zeroed
  // part[width]; the blocks' parts are then added in block order, so the totals depend neither
  // on the thread count nor on the chunking.
  template <class Fn>
  std::vector<double> block_sums(std::size_t width, Fn&& fn) {
    const std::size_t sr = stat_rows(row_bytes_);
    std::vector<double> total(width, 0.0);
    std::vector<double> part;
    for_each_chunk([&](const Chunk<T>& ch) {
      const std::size_t nb = (ch.x.rows + sr - 1) / sr;
      part.assign(nb * width, 0.0);
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
      for (std::size_t b = 0; b < nb; ++b) {
        fn(ch, b * sr, std::min(ch.x.rows, (b + 1) * sr), part.data() + b * width);
      }
      for (std::size_t j = 0; j < width; ++j) {
        for (std::size_t b = 0; b < nb; ++b) total[j] += part[b * width + j];
      }
    });
    return total;
  }

  void compute_mean() {
    const std::size_t dim = dim_;
    // First non-finite value seen, as a flat index; the smallest wins.
    constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
    std::size_t first_bad = kNone;
    double bad_value = 0;
    const std::vector<double> sums = block_sums(dim, [&](const Chunk<T>& ch, std::size_t r0, std::size_t r1, double* p) {
      for (std::size_t i = r0; i < r1; ++i) {
        const T* row = ch.x.row(i);
        for (std::size_t j = 0; j < dim; ++j) {
          if (!std::isfinite(row[j])) {
#pragma omp critical(flashkm_first_bad)
            if ((ch.first + i) * dim + j < first_bad) {
              first_bad = (ch.first + i) * dim + j;
              bad_value = static_cast<double>(row[j]);
            }
            return;
          }
          p[j] += static_cast<double>(row[j]);
        }
      }
    });
    if (first_bad != kNone) {
      const std::size_t r = row_offset_ + first_bad / dim, c = first_bad % dim;
      const double v = bad_value;
      throw InvalidData(std::string("X contains ") + (std::isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf") +
                        " at row " + std::to_string(r) + ", column " + std::to_string(c));
    }
    mean_.assign(dim, 0.0);
    for (std::size_t j = 0; j < dim; ++j) {
      mean_[j] = sums[j] / static_cast<double>(n_);
      shift_t_[j] = static_cast<T>(mean_[j]);
      shift_[j] = static_cast<double>(shift_t_[j]);
    }
  }

  int amx_mode_;
  HalfKernel half_kernel_;
  AmxCentroids amx_;
  Rows<T> data_;
  std::size_t row_offset_;  // index of row 0 in the whole data set (shards), for messages
  std::size_t n_;
  std::size_t dim_;
  std::size_t row_bytes_;
  std::size_t granule_;  // rows per update super-block; a RowSource's chunks are multiples
  const double* weights_;
  int threads_;
  const KernelTable<T>* table_;
  const PanelKernels<T>* panel_ = nullptr;  // the panel width chosen for the current K
  bool inner_product_ = false;
  std::vector<double> mean_;
  std::vector<double> shift_;
  std::vector<T> shift_t_;
  std::vector<T> row_buf_;

  std::size_t k_ = 0;
  AlignedBuffer<T> packed_;

  // Bounded assignment: per-row bounds on exact distances (ub_: to the row's centroid; lb_:
  // groups_ per row, to every other centroid of each group), valid for the labels of the last
  // assign_update while bounds_valid_.
  bool prune_ = false;         // this run prunes
  bool bounds_valid_ = false;
  bool iter_bounded_ = false;  // the current assign_update runs bounded
  bool dist_stale_ = false;    // some rows' dist were not recomputed by the last assign_update
  std::size_t groups_ = 1;
  std::size_t group_size_ = 1;  // centroids per group (whole panels)
  std::vector<float> ub_, lb_;
  std::vector<T> cur_c_, prev_c_;  // centroids as the kernels multiply them, k x dim
  bool grouped_ = false;           // order_ holds this run's groups
  bool auto_prune_ = false;        // prune = auto: may give up within the run
  int bounded_iters_ = 0;          // iterations of this run that started from valid bounds
  std::vector<double> fractions_;  // their fractions of N*K distances computed
  std::vector<std::uint32_t> order_;   // packed position -> centroid index (groups contiguous)
  std::vector<std::uint32_t> pos_of_;  // centroid index -> packed position
  AlignedBuffer<T> bpacked_;           // the centroids packed in order_
  std::vector<T> ids_;                 // centroid index of each packed position, as T
  std::vector<double> drift_, gdrift_;
  double rmax_ = -1;  // largest norm of a row about the shift (-1: not taken yet)
  bounds::Slack slack_;
  BoundCounts counts_;
  std::uint64_t last_distances_ = 0;
  const char* path_ = "";  // the last assign_update's path (update_path)

  // Seeding (seed_*, cpu/seeding.hpp): each row's closest squared distance to the centres
  // chosen so far and the centre it was measured to; the centres and the step's candidates as
  // the kernels subtract them; the step's thresholds.
  std::vector<T> seed_closest_;
  std::vector<std::int32_t> seed_owner_;
  std::vector<double> seed_norm_;  // the rows' norms about the shift
  std::vector<T> seed_centres_;
  std::vector<T> seed_zero_;
  std::size_t seed_count_ = 0;
  std::vector<T> seed_cands_;
  std::vector<double> seed_thr_;
  std::vector<std::vector<SeedLowering<T>>> seed_low_;  // per statistics block
  std::vector<char> seed_overflow_;                     // per statistics block
  std::uint64_t seed_distances_ = 0;
  SeedWindow seed_window_;
  bool seed_bounded_ = true;  // the current step tests bounds

  std::vector<std::uint64_t> hist_;
  std::vector<std::uint64_t> offsets_;
  std::vector<std::uint32_t> perm_;
  std::vector<std::size_t> seg_begin_;
  std::vector<std::uint32_t> seg_cluster_;
  std::vector<std::size_t> block_seg_;
  std::vector<std::size_t> block_first_;
  std::vector<std::size_t> first_seg_;
  std::vector<double> block_inertia_;
  std::vector<double> abs_centroids_;
  std::vector<double> part_sum_;
  std::vector<double> part_w_;
};

}  // namespace

template <class T>
std::unique_ptr<Engine<T>> make_cpu_engine(MatrixView<T> X, std::span<const double> weights,
                                           int n_threads, const std::string& target, std::size_t row_offset) {
  const KernelTable<T>* table = find_table<T>(requested_target(target));
  return std::make_unique<CpuEngine<T>>(Rows<T>(X), weights, n_threads, table, row_offset);
}

template <class T>
std::unique_ptr<Engine<T>> make_cpu_engine(RowSource<T>& source, std::span<const double> weights,
                                           int n_threads, const std::string& target, std::size_t row_offset) {
  int half = 0;  // the rows' 16-bit type, if they are 16-bit floats (AMX can multiply them)
  if constexpr (std::is_same_v<T, float>) {
    if (const auto* h = dynamic_cast<const HalfBacked*>(&source)) half = h->half_type() == HalfType::kBFloat16 ? 1 : 2;
  }
  const std::string name = requested_target(target);
  int amx = 0;
  HalfKernel kernel = HalfKernel::kTiles;
  const KernelTable<T>* table = nullptr;
  const bool tiles = name == kAmxTargetName, dp = name == kDpbf16TargetName;
  if (tiles || dp) {
    if (!half) {
      throw InvalidArgument("SIMD target '" + name + "' multiplies 16-bit input (float16, bfloat16) only; this data is " +
                            (sizeof(T) == 4 ? "float32" : "float64"));
    }
    if (tiles ? !amx_usable() : !avx512bf16_usable()) {
      throw InvalidArgument("SIMD target '" + name + "' is not supported by this CPU (" +
                            (tiles ? "AMX-BF16 with tile state granted by the kernel" : "AVX-512 with AVX512_BF16") + ")");
    }
    amx = half;
    kernel = tiles ? HalfKernel::kTiles : HalfKernel::kDpbf16;
    table = kernel_tables<T>().front();
    if (!fma_table(table->name)) {
      throw InvalidArgument("SIMD target '" + name + "' needs AVX2 or AVX-512 float32 kernels to re-score with; "
                            "this CPU's best is " + table->name);
    }
  } else {
    table = find_table<T>(name);
    // Unforced, 16-bit rows go to AMX where the CPU has it. AVX512_BF16 is never the default:
    // on the one CPU measured (Sapphire Rapids) it ran at half the float32 kernels' speed.
    if (name.empty() && half && amx_usable() && fma_table(table->name)) amx = half;
  }
  return std::make_unique<CpuEngine<T>>(Rows<T>(source), weights, n_threads, table, row_offset, amx, kernel);
}

std::size_t cpu_granule(std::size_t cols, std::size_t elem_size) {
  return super_rows(std::max<std::size_t>(1, cols * elem_size));
}

template std::unique_ptr<Engine<float>> make_cpu_engine<float>(MatrixView<float>,
                                                               std::span<const double>, int,
                                                               const std::string&, std::size_t);
template std::unique_ptr<Engine<double>> make_cpu_engine<double>(MatrixView<double>,
                                                                 std::span<const double>, int,
                                                                 const std::string&, std::size_t);
template std::unique_ptr<Engine<float>> make_cpu_engine<float>(RowSource<float>&,
                                                               std::span<const double>, int,
                                                               const std::string&, std::size_t);
template std::unique_ptr<Engine<double>> make_cpu_engine<double>(RowSource<double>&,
                                                                 std::span<const double>, int,
                                                                 const std::string&, std::size_t);

std::vector<std::string> cpu_target_names() {
  std::vector<std::string> names;
  for (const auto* t : kernel_tables<float>()) names.emplace_back(t->name);
  return names;
}

std::string cpu_default_target() { return find_table<float>(requested_target(""))->name; }

}  // namespace flashkm::detail
