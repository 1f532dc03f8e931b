// The CPU engine: construction, the plain Engine overrides, the seeding glue (cpu/seeding.hpp)
// and the factories. Its other concerns have files of their own (cpu_engine_impl.hpp lists them).
#include "cpu/cpu_engine.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/seeding.hpp"
#include "cpu/bounds.hpp"
#include "cpu/cpu_engine_impl.hpp"
#include "cpu/cpu_targets.hpp"
#include "cpu/half_source.hpp"
#include "flashkm/errors.hpp"

namespace flashkm::detail {

namespace {
// k-means|| rounds filtered by the sketch: rows per task (a multiple of kSketchRows), and the
// fewest candidates in a round for the filter to be tried.
constexpr std::size_t kManyRows = 256;
constexpr std::size_t kManySketchMin = 64;

// v rounded down to float, negative values kept (bounds::down clamps at zero); -inf stays,
// NaN gives -inf: no bound.
float float_below(double v) {
  if (!(v == v)) return -std::numeric_limits<float>::infinity();
  float f = static_cast<float>(v);
  if (static_cast<double>(f) > v) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
  return f;
}
}  // namespace

// Rows per call of the one-centroid distance kernel (a stack buffer).
constexpr std::size_t kOneRows = 256;

template <class T>
CpuEngine<T>::CpuEngine(Rows<T> rows, std::span<const double> weights, int n_threads, const KernelTable<T>* table,
                        std::size_t row_offset, int amx_mode, HalfKernel half_kernel)
    : amx_mode_(amx_mode),
      data_(rows),
      row_offset_(row_offset),
      n_(rows.rows()),
      dim_(rows.cols()),
      row_bytes_(std::max<std::size_t>(1, rows.cols() * sizeof(T))),
      granule_(super_rows(row_bytes_)),
      weights_(weights.empty() ? nullptr : weights.data()),
      run_(rows.rows(), weights_),
      threads_(n_threads > 0 ? n_threads : omp_get_max_threads()),
      table_(table),
      shift_(rows.cols()),
      shift_t_(rows.cols()) {
  if constexpr (std::is_same_v<T, float>) {
    if (amx_mode_) provider_ = std::make_unique<HalfProvider>(table, shift_t_, amx_mode_ == 2, half_kernel);
  }
  if (!provider_) provider_ = std::make_unique<PanelProvider<T>>(table);
  compute_mean();
}

template <class T>
std::size_t CpuEngine<T>::rows() const { return n_; }

template <class T>
std::size_t CpuEngine<T>::cols() const { return dim_; }

template <class T>
const double* CpuEngine<T>::shift() const { return shift_.data(); }

template <class T>
const char* CpuEngine<T>::target() const {
  return provider_->name();
}

template <class T>
const double* CpuEngine<T>::weights() const { return weights_; }

template <class T>
const double* CpuEngine<T>::mean() const { return mean_.data(); }

template <class T>
void CpuEngine<T>::set_mean(const double* mean) {
  rmax_ = -1;  // the rows' norms are taken about the shift
  inc_valid_ = false;  // the incremental update's sums are centred on the shift
  for (std::size_t j = 0; j < dim_; ++j) {
    mean_[j] = mean[j];
    shift_t_[j] = centre_on_mean_ ? static_cast<T>(mean_[j]) : T(0);
    shift_[j] = static_cast<double>(shift_t_[j]);
  }
}

template <class T>
std::vector<FarPoint> CpuEngine<T>::farthest(std::size_t m) {
  const T* dist = run_.dist();
  // A pruned assignment left some rows' distances from an earlier iteration: recompute them
  // all with the plain kernels against the same centroids (the labels cannot change; the
  // bounds proved them). Rare: only iterations that empty a cluster get here.
  std::vector<T> fresh;
  if (dist_stale_) {
    std::vector<std::int32_t> relabel(run_.labels(), run_.labels() + n_);
    fresh.resize(n_);
    assign(relabel.data(), fresh.data());
    dist = fresh.data();
  }
  return run_.farthest(dist, m, row_offset_, dim_, [&](std::size_t i, double* out) { row_centred(i, out); });
}

template <class T>
void CpuEngine<T>::row_centred(std::size_t i, double* out) {
  row_buf_.resize(dim_);
  data_.read_row(i, row_buf_.data());
  for (std::size_t j = 0; j < dim_; ++j) out[j] = static_cast<double>(row_buf_[j]) - shift_[j];
}

template <class T>
void CpuEngine<T>::set_centroids(const double* centroids, std::size_t k) {
  k_ = k;
  panel_ = panel_for(k);
  panel_->pack_centroids(centroids, k, dim_, packed_.reserve(panel_->packed_size(k, dim_)));
  if (inner_product_) {
    // The kernels score ||c||^2 - 2 x.c; with the real centroids' norms zeroed (padding keeps
    // +inf, see kernel_table.hpp) the argmin is the argmax of x.c.
    std::fill_n(packed_norms(), k, T(0));
  }
  provider_->prepare(centroids, k, dim_, panel_, packed_.data(), packed_norms());
}

template <class T>
void CpuEngine<T>::fix_metric(Metric metric) {
  metric_ = metric;
  if (metric == Metric::kEuclidean) return;
  inner_product_ = true;
  centre_on_mean_ = false;
  const std::vector<double> means(mean_);
  set_mean(means.data());  // the rows as given (the means kept for mean_variance)
  // Cosine's w / ||x|| weights are taken by the first begin_run (a pass over X that predict and
  // transform do not need).
}

template <class T>
double CpuEngine<T>::total_weight() { return run_.total_weight(); }

template <class T>
void CpuEngine<T>::row_sq_norms(double* out) {
  for_each_chunk([&](const Chunk<T>& ch) {
    for_row_tasks(0, ch.x.rows, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t i = r0; i < r1; ++i) {
        const T* row = ch.x.row(i);
        double sq = 0;
        for (std::size_t j = 0; j < dim_; ++j) sq += static_cast<double>(row[j]) * static_cast<double>(row[j]);
        out[ch.first + i] = sq;
      }
    });
  });
}

template <class T>
void CpuEngine<T>::lower_closest(const double* centroid, T* closest) {
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

template <class T>
void CpuEngine<T>::potentials(const double* candidates, std::size_t m, const T* closest, double* pot) {
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

template <class T>
double CpuEngine<T>::seed_start(const double* centre, std::size_t k) {
  seed_closest_.assign(n_, std::numeric_limits<T>::infinity());
  seed_owner_.assign(n_, 0);
  seed_centres_.assign(centre, centre + dim_);
  seed_centres_.reserve(k * dim_);
  seed_count_ = 1;
  seed_window_ = SeedWindow{};
  seed_many_sketch_ = true;
  seed_bounded_ = true;
  seed_norm_.resize(n_);
  for_each_chunk([&](const Chunk<T>& ch) {
    for_row_tasks(0, ch.x.rows, [&](std::size_t r0, std::size_t r1) {
      seed_norms(ch.pts, r0, r1, seed_norm_.data() + ch.first + r0);
    });
  });
  // The 8-bit sketch of the rows: rows in memory, wide enough for it to pay
  // (FLASHKM_SEED_SKETCH=0 turns it off, to measure without it).
  seed_sketch_on_ = false;
  const char* env = std::getenv("FLASHKM_SEED_SKETCH");
  if (seed_sketch_allowed_ && data_.in_memory() && sketch_pays(dim_, row_bytes_) && !(env && std::string(env) == "0")) {
    seed_sketch_.reset(n_, dim_);
    bool ok = true;
    for_each_chunk([&](const Chunk<T>& ch) {
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 64) reduction(&& : ok)
      for (std::size_t b = 0; b < (ch.x.rows + kSketchRows - 1) / kSketchRows; ++b) {
        ok = seed_sketch_.build(ch.pts, b * kSketchRows, std::min(ch.x.rows, (b + 1) * kSketchRows)) && ok;
      }
    });
    seed_sketch_on_ = ok;
    if (!ok) seed_sketch_ = {};
  }
  lower_closest(centre, seed_closest_.data());
  seed_distances_ = n_;
  return potential(seed_closest_.data(), weights_, n_);
}

template <class T>
std::vector<std::size_t> CpuEngine<T>::seed_draw(const std::vector<double>& targets) {
  return search_cumulative(seed_closest_.data(), weights_, n_, targets);
}

template <class T>
void CpuEngine<T>::seed_potentials(const double* candidates, std::size_t m, double* pot) {
  seed_cands_.assign(candidates, candidates + m * dim_);
  // The sketch filter costs a quarter of a pass over X and proves most pairs useless in any
  // dimension, so its steps are always bounded (and the window is not consulted).
  seed_step_sketch_ = seed_sketch_on_ && seed_csketch_.build(seed_cands_.data(), m, dim_);
  seed_bounded_ = seed_step_sketch_ || seed_window_.bounded_next();
  std::vector<double> cand_norm;
  if (seed_bounded_ && !seed_step_sketch_) {
    seed_thresholds(*table_, dim_, seed_centres_.data(), seed_count_, seed_cands_.data(), m, seed_thr_);
    cand_norm.resize(m);
    seed_norms(centres_ref(seed_cands_.data()), 0, m, cand_norm.data());
  }
  SeedStep<T> step{seed_cands_.data(), m, seed_bounded_, seed_thr_.data(), cand_norm.data()};
  if (seed_step_sketch_) {
    step.sketch = &seed_sketch_;
    step.cand_sketch = &seed_csketch_;
  }
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
  if (seed_bounded_ && !seed_step_sketch_) seed_window_.record(computed, n_ * m);
  std::copy(total.begin(), total.end(), pot);
}

template <class T>
void CpuEngine<T>::seed_keep(std::size_t t) {
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
template <class T>
void CpuEngine<T>::lower_overflowed(const T* c, std::int32_t index) {
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

template <class T>
SeedPick CpuEngine<T>::seed_first(std::uint64_t key) {
  SeedPick p = keyed_first(weights_, n_, key, row_offset_);
  if (p.key > -std::numeric_limits<double>::infinity()) {
    p.row.resize(dim_);
    row_centred(static_cast<std::size_t>(p.index - row_offset_), p.row.data());
  }
  return p;
}

template <class T>
void CpuEngine<T>::seed_potential(ExactSum& acc) {
  // Exact partial sums per task, merged exactly: the same bits for any thread count.
  ExactSum total;
  for_row_tasks(0, n_, [&](std::size_t r0, std::size_t r1) {
    ExactSum part;
    exact_potential(seed_closest_.data() + r0, weights_ ? weights_ + r0 : nullptr, r1 - r0, part);
#pragma omp critical(flashkm_seed_potential)
    total.merge(part);
  });
  acc.merge(total);
}

template <class T>
std::vector<double> CpuEngine<T>::seed_oversample(double l, double psi, std::uint64_t key) {
  std::vector<char> drawn(n_, 0);
  const double scale = psi > 0 ? l / psi : 0.0;
  for_row_tasks(0, n_, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t i = r0; i < r1; ++i) {
      const double p = (weights_ ? weights_[i] : 1.0) * static_cast<double>(seed_closest_[i]) * scale;
      drawn[i] = p > 0 && keyed_uniform(key, row_offset_ + i) < p;
    }
  });
  std::vector<std::size_t> ids;
  for (std::size_t i = 0; i < n_; ++i) {
    if (drawn[i]) ids.push_back(i);
  }
  std::vector<double> rows(ids.size() * dim_);
  for (std::size_t t = 0; t < ids.size(); ++t) row_centred(ids[t], rows.data() + t * dim_);
  return rows;
}

template <class T>
void CpuEngine<T>::seed_add_many(const double* centres, std::size_t m) {
  const auto base = static_cast<std::int32_t>(seed_count_);
  // The candidates go in index order, in parts: a row's closest distance and owner after each
  // part is the smaller of its own and the part's best (lowest index on ties), so after the last
  // part they are the same as one pass over all of them. Where the sketch can filter, the first
  // round (every row measured to one centre so far: most pairs would pass the filter) scores
  // its first eighth by FlashAssign and the rest, against the closer distances that leaves, by
  // the filter; later rounds filter all of theirs.
  const bool may_filter = seed_sketch_on_ && seed_many_sketch_;
  const std::size_t first = may_filter && seed_count_ == 1 ? std::max(kManySketchMin, m / 8) : 0;
  for (std::size_t done = 0; done < m;) {
    const std::size_t len = done == 0 && first > 0 ? std::min(m, first) : m - done;
    const double* part = centres + done * dim_;
    const auto part_base = static_cast<std::int32_t>(static_cast<std::size_t>(base) + done);
    // Euclidean FlashAssign whatever the metric (cosine and dot seed on distances too).
    const bool inner = inner_product_;
    inner_product_ = false;
    set_centroids(part, len);
    inner_product_ = inner;
    const bool sketched = seed_sketch_on_ && seed_many_sketch_ && (seed_count_ > 1 || done > 0) &&
                          len >= kManySketchMin && seed_add_many_sketched(part, len, part_base, seed_count_ > 1);
    if (!sketched) {
      std::vector<std::int32_t> lab(n_, 0);
      std::vector<T> dist(n_);
      assign(lab.data(), dist.data());
      seed_distances_ += n_ * len;
      for_row_tasks(0, n_, [&](std::size_t r0, std::size_t r1) {
        for (std::size_t i = r0; i < r1; ++i) {
          if (dist[i] < seed_closest_[i]) {
            seed_closest_[i] = dist[i];
            seed_owner_[i] = part_base + lab[i];
          }
        }
      });
    }
    done += len;
  }
  seed_centres_.insert(seed_centres_.end(), centres, centres + m * dim_);
  seed_count_ += m;
}

// One k-means|| round over rows in memory with their sketch (docs/KERNELS.md, "Bounded
// seeding"): the same closest distances and owners as the FlashAssign pass above, bit for bit.
// A pair is scored only where the sketch filter cannot prove that FlashAssign's computed
// distance is >= the row's closest one: then it cannot lower it, and (as the computed distance
// grows with the score) neither can any candidate that scores the same or higher. The scored
// pairs are FlashAssign's own arithmetic (group_min over one panel of the packed candidates,
// the rows packed by pack_rows), and the row keeps the lowest score, lowest index on ties, as
// assign_rows does; its distance is max(0, ||x||^2 + score) as there.
template <class T>
bool CpuEngine<T>::seed_add_many_sketched(const double* centres, std::size_t m, std::int32_t base, bool judge) {
  // Rows in memory are one chunk from row 0, numbered as the sketch numbers them; a panel's
  // kept pairs fit one 64-bit word per row.
  if (!data_.in_memory() || panel_->nr > 64) return false;
  const std::size_t dim = dim_;
  std::vector<T> ct(m * dim);  // the candidates as the packed panels hold them
  for (std::size_t i = 0; i < m * dim; ++i) ct[i] = static_cast<T>(centres[i]);
  CandSketch cs;
  if (!cs.build(ct.data(), m, dim)) return false;
  // FlashAssign's computed distance is within eps(||y||) of the exact one (bounds::Slack, as
  // the bounded assignment takes it; doubled for the final addition of ||x||^2).
  double nmin = 0, nmax = 0;
  bounds::norm_range(ct.data(), m, dim, nmin, nmax);
  const bounds::Slack sl = bounds::euclidean_slack<T>(dim, nmax);
  // The filter's separable test (SketchArgs::rr): per candidate its cc, per row its rr.
  constexpr double kLambda = 0x1p-6;
  std::vector<float> cc(m);
  for (std::size_t t = 0; t < m; ++t) {
    const double cd = static_cast<double>(cs.cdelta[t]);
    cc[t] = float_below(static_cast<double>(cs.cb[t]) * (1 - 0x1p-18) - (1 + 1 / kLambda) * cd * cd * (1 + 0x1p-20));
  }
  const std::size_t nr = panel_->nr;
  const std::size_t npanels = (m + nr - 1) / nr;
  std::vector<T> ids(npanels * nr);
  for (std::size_t p = 0; p < ids.size(); ++p) ids[p] = static_cast<T>(p);  // packed in index order
  const std::size_t pad = table_->center_pad;
  const T* packed = packed_.data();
  std::uint64_t computed = 0;
  for_each_chunk([&](const Chunk<T>& ch) {
    // Rows in memory: one chunk, numbered as the sketch numbers them.
    const std::size_t nb = (ch.x.rows + kManyRows - 1) / kManyRows;
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1) reduction(+ : computed)
    for (std::size_t blk = 0; blk < nb; ++blk) {
      const std::size_t r0 = blk * kManyRows, r1 = std::min(ch.x.rows, r0 + kManyRows);
      const std::size_t rows = r1 - r0;
      const std::size_t g0 = ch.first + r0;
      // The rows packed as assign_rows packs them (slivers of pad rows).
      std::vector<T> xp((rows + pad - 1) / pad * pad * dim), xnorm((rows + pad - 1) / pad * pad);
      std::uint32_t idx[kManyRows];
      for (std::size_t i = 0; i < rows; ++i) idx[i] = static_cast<std::uint32_t>(r0 + i);
      for (std::size_t s0 = 0; s0 < rows; s0 += pad) {
        table_->pack_rows(ch.pts, idx + s0, std::min(pad, rows - s0), xp.data() + s0 * dim, xnorm.data() + s0);
      }
      // Each row's closest distance widened by FlashAssign's error (X), turned into the
      // separable test's rr with R = sqrt(X) + delta (double, widened).
      float rr[kManyRows];
      for (std::size_t i = 0; i < rows; ++i) {
        const double cl = static_cast<double>(seed_closest_[g0 + i]);
        const double r = seed_norm_[g0 + i] * (1 + 0x1p-40);
        const double R = std::sqrt(cl + 2 * sl.eps(r)) * (1 + 0x1p-50) + static_cast<double>(seed_sketch_.delta[g0 + i]);
        rr[i] = float_below(static_cast<double>(seed_sketch_.a[g0 + i]) * (1 - 0x1p-18) - (1 + kLambda) * R * R * (1 + 0x1p-20));
      }
      for (std::size_t i = rows; i < kManyRows; ++i) rr[i] = -std::numeric_limits<float>::infinity();
      T best[kManyRows];
      std::int32_t bidx[kManyRows];
      std::fill_n(best, kManyRows, std::numeric_limits<T>::infinity());
      std::fill_n(bidx, kManyRows, -1);
      std::uint64_t bits[kManyRows];
      std::uint32_t mask[kSketchRows];
      const T* xr[kManyRows + 64];
      std::uint32_t who[kManyRows];
      T min1[kManyRows + 64], min2[kManyRows + 64];
      std::int32_t idx1[kManyRows + 64];
      for (std::size_t p = 0; p < npanels; ++p) {
        const std::size_t c0 = p * nr, c1 = std::min(m, c0 + nr);
        std::fill_n(bits, rows, 0);
        for (std::size_t b = g0 / kSketchRows; b * kSketchRows < ch.first + r1; ++b) {
          const std::size_t i0 = b * kSketchRows - g0;  // the block's first row in this range
          for (std::size_t t0 = c0; t0 < c1; t0 += kMaxFew) {
            SketchArgs g{};
            seed_sketch_.point_at(g, b);
            cs.point_at(g, seed_sketch_.quads, t0, std::min(kMaxFew, c1 - t0));
            g.rr = rr + i0;  // the separable test (cl, tau and over are not read)
            g.cc = cc.data() + t0;
            table_->sketch_mask(g, mask);
            const std::size_t n_in = std::min<std::size_t>(kSketchRows, rows - i0);
            for (std::size_t i = 0; i < n_in; ++i) bits[i0 + i] |= static_cast<std::uint64_t>(mask[i]) << (t0 - c0);
          }
        }
        // The rows the filter kept for this panel, scored by FlashAssign's arithmetic.
        std::size_t nk = 0;
        for (std::size_t i = 0; i < rows; ++i) {
          who[nk] = static_cast<std::uint32_t>(i);
          nk += bits[i] != 0;
        }
        if (nk == 0) continue;
        const std::size_t nkp = (nk + pad - 1) / pad * pad;
        for (std::size_t j = 0; j < nkp; ++j) xr[j] = xp.data() + static_cast<std::size_t>(who[std::min(j, nk - 1)]) * dim;
        panel_->group_min(xr, dim, packed, ids.data(), m, c0, c1, nk, min1, idx1, min2, nullptr, 0);
        computed += nk * (c1 - c0);
        for (std::size_t j = 0; j < nk; ++j) {
          const std::size_t i = who[j];
          // Panels in index order: a strictly lower score wins, an equal one keeps the earlier
          // (lower) index, as assign_rows' running comparison does.
          if (min1[j] < best[i] || (bidx[i] < 0 && !(min1[j] > best[i]))) {
            best[i] = min1[j];
            bidx[i] = idx1[j];
          }
        }
      }
      for (std::size_t i = 0; i < rows; ++i) {
        if (bidx[i] < 0) continue;
        const T d = std::max(T(0), xnorm[i] + best[i]);
        if (d < seed_closest_[g0 + i]) {
          seed_closest_[g0 + i] = d;
          seed_owner_[g0 + i] = base + bidx[i];
        }
      }
    }
  });
  seed_distances_ += computed;
  // Only later rounds decide whether the filter pays (the first round's filtered part keeps
  // many pairs, its rows being measured to few centres).
  if (judge && computed * 4 > n_ * m) seed_many_sketch_ = false;
  return true;
}

template <class T>
void CpuEngine<T>::seed_owner_weights(std::vector<ExactSum>& acc) {
  exact_owner_weights(seed_owner_.data(), weights_, n_, acc);
}

template <class T>
void CpuEngine<T>::column_sums(std::vector<ExactSum>& acc) {
  data_.for_each_chunk(granule_, [&](MatrixView<T> x, std::size_t) {
    for_row_tasks(0, x.rows, [&](std::size_t r0, std::size_t r1) {
      std::vector<ExactSum> part(dim_);
      for (std::size_t i = r0; i < r1; ++i) {
        const T* row = x.row(i);
        for (std::size_t j = 0; j < dim_; ++j) part[j].add(static_cast<double>(row[j]));
      }
#pragma omp critical(flashkm_column_sums)
      for (std::size_t j = 0; j < dim_; ++j) acc[j].merge(part[j]);
    });
  });
}

template <class T>
std::uint64_t CpuEngine<T>::seed_distances() const { return seed_distances_; }

template <class T>
const char* CpuEngine<T>::update_path() const { return path_; }

// m centres (m x dim, as the kernels subtract them) as rows with a zero shift.
template <class T>
PointsRef<T> CpuEngine<T>::centres_ref(const T* centres) {
  seed_zero_.assign(dim_, T(0));
  return PointsRef<T>{centres, dim_, dim_, seed_zero_.data()};
}

template <class T>
void CpuEngine<T>::seed_end() {
  seed_closest_ = {};
  seed_owner_ = {};
  seed_norm_ = {};
  seed_centres_ = {};
  seed_cands_ = {};
  seed_thr_ = {};
  seed_low_ = {};
  seed_overflow_ = {};
  seed_sketch_ = {};
  seed_csketch_ = {};
  seed_sketch_on_ = seed_step_sketch_ = false;
  seed_count_ = 0;
}

template <class T>
std::uint64_t CpuEngine<T>::last_distances() const { return last_distances_; }

template class CpuEngine<float>;
template class CpuEngine<double>;

template <class T>
std::unique_ptr<Engine<T>> make_cpu_engine(MatrixView<T> X, std::span<const double> weights,
                                           int n_threads, const std::string& target, std::size_t row_offset,
                                           Metric metric) {
  const KernelTable<T>* table = find_table<T>(requested_target(target));
  auto engine = std::make_unique<CpuEngine<T>>(Rows<T>(X), weights, n_threads, table, row_offset);
  engine->fix_metric(metric);
  return engine;
}

template <class T>
std::unique_ptr<Engine<T>> make_cpu_engine(RowSource<T>& source, std::span<const double> weights,
                                           int n_threads, const std::string& target, std::size_t row_offset,
                                           Metric metric) {
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
  auto engine = std::make_unique<CpuEngine<T>>(Rows<T>(source), weights, n_threads, table, row_offset, amx, kernel);
  engine->fix_metric(metric);
  return engine;
}

std::size_t cpu_granule(std::size_t cols, std::size_t elem_size) {
  return super_rows(std::max<std::size_t>(1, cols * elem_size));
}

template std::unique_ptr<Engine<float>> make_cpu_engine<float>(MatrixView<float>,
                                                               std::span<const double>, int,
                                                               const std::string&, std::size_t, Metric);
template std::unique_ptr<Engine<double>> make_cpu_engine<double>(MatrixView<double>,
                                                                 std::span<const double>, int,
                                                                 const std::string&, std::size_t, Metric);
template std::unique_ptr<Engine<float>> make_cpu_engine<float>(RowSource<float>&,
                                                               std::span<const double>, int,
                                                               const std::string&, std::size_t, Metric);
template std::unique_ptr<Engine<double>> make_cpu_engine<double>(RowSource<double>&,
                                                                 std::span<const double>, int,
                                                                 const std::string&, std::size_t, Metric);

}  // namespace flashkm::detail
