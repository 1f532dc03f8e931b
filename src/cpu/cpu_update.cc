// The CPU engine's Sort-Inverse Update (docs/KERNELS.md, "Sort-Inverse Update"): counting sort
// of the labels and fixed-block float64 reductions, alone or interleaved with the assignment (the
// grouped step); and the fixed-block float64 statistics of X (mean, variance).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "cpu/cpu_engine_impl.hpp"
#include "cpu/prefetch.hpp"
#include "flashkm/errors.hpp"

namespace flashkm::detail {

// Sort-Inverse Update: the sorted order of a super-block is cut into blocks of this many points,
// the unit of parallel work. Small enough that a super-block of wide rows still makes 16 blocks;
// the partial sums this adds (D doubles per 256 rows) stay far below the size of X.
constexpr std::size_t kUpdateBlock = 256;

// Parallel blocks wanted per thread in one update group of super-blocks (dynamic balancing).
constexpr std::size_t kBlocksPerThread = 16;

template <class T>
double CpuEngine<T>::mean_variance() {
  const std::size_t dim = dim_;
  const double* mean = mean_.data();
  const std::vector<double> sq = block_sums(dim, [&](const Chunk<T>& ch, std::size_t r0, std::size_t r1, double* p) {
    for (std::size_t i = r0; i < r1; ++i) {
      const T* row = ch.x.row(i);
#pragma omp simd
      for (std::size_t j = 0; j < dim; ++j) {
        const double e = static_cast<double>(row[j]) - mean[j];
        p[j] += e * e;
      }
    }
  });
  double total = 0;
  for (std::size_t j = 0; j < dim; ++j) total += sq[j] / static_cast<double>(n_);
  return total / static_cast<double>(dim);
}

template <class T>
double CpuEngine<T>::update(const std::int32_t* labels, const double* centroids, std::size_t k, double* sums,
                            double* wsums) {
  begin_sums(centroids, k, sums, wsums);
  double inertia = 0;
  qsums_.assign(k, 0.0);
  const std::size_t group = group_rows();
  for_each_chunk([&](const Chunk<T>& ch) {
    for (std::size_t r0 = 0; r0 < ch.x.rows; r0 += group) {
      update_group(ch, r0, std::min(ch.x.rows, r0 + group), labels, k, sums, wsums, qsums_.data(), &inertia);
    }
  });
  end_sums(k, sums, wsums);
  return inertia;
}

template <class T>
double CpuEngine<T>::assign_update(const double* centroids, std::size_t k, double* sums, double* wsums,
                                   std::size_t* changed) {
  std::int32_t* labels = run_.step_labels();
  T* dist = run_.step_dist();
  set_centroids(centroids, k);
  prepare_bounds(centroids, k);
  // Incremental when few labels moved in the last step (decided from labels alone, so the
  // pruned and unpruned paths decide alike): the update reads only the rows that move.
  const bool inc = incremental_next(k) && std::equal(inc_labels_.begin(), inc_labels_.end(), labels);
  if (inc) {
    // A cluster with no member of positive weight holds exact zeros: re-centre it on its
    // current centroid (a relocated one may be far from the old), at no cost in exactness.
    for (std::size_t c = 0; c < k; ++c) {
      if (inc_n_[c] == 0) std::copy(centroids + c * dim_, centroids + (c + 1) * dim_, inc_r_.begin() + static_cast<std::ptrdiff_t>(c * dim_));
    }
  }
  begin_sums(centroids, k, sums, wsums);
  qsums_.assign(k, 0.0);
  double inertia = 0;
  std::size_t total_changed = 0;
  counts_ = {};
  const bool fused = fused_fits(k);
  path_ = fused ? (inc ? "fused+incremental" : "fused") : (inc ? "grouped+incremental" : "grouped");
  const std::size_t group = group_rows();
  for_each_chunk([&](const Chunk<T>& ch) {
    if (fused) {
      assign_update_tiled(ch, k, labels, dist, sums, wsums, qsums_.data(), &inertia, &total_changed, !inc);
    } else {
      // Assign a group of super-blocks, then reduce it while some of it is still in the caches.
      for (std::size_t r0 = 0; r0 < ch.x.rows; r0 += group) {
        const std::size_t r1 = std::min(ch.x.rows, r0 + group);
        total_changed +=
            iter_bounded_ ? bounded_chunk(ch, r0, r1, labels, dist) : assign_chunk(ch, r0, r1, labels, dist);
        if (!inc) update_group(ch, r0, r1, labels, k, sums, wsums, qsums_.data(), &inertia);
      }
    }
    if (inc) inc_apply(ch, labels, k);
  });
  if (inc && inc_degenerate(k)) {
    // A cluster with members of positive weight whose running weight rounded to <= 0 (weights
    // over 2^53 apart): this step's update is done again in full, so it cannot look empty.
    inertia = update(labels, centroids, k, sums, wsums);
    path_ = "grouped";
    inc_refresh(centroids, k, sums, wsums, qsums_.data(), labels);
  } else if (inc) {
    inertia = inc_result(centroids, k, sums, wsums);
    ++inc_steps_;
  } else {
    end_sums(k, sums, wsums);
    inc_refresh(centroids, k, sums, wsums, qsums_.data(), labels);
  }
  // An incremental step started from inc_labels_ == labels, so its moves are the changed labels.
  inc_last_moved_ = total_changed;
  *changed = total_changed;
  if (iter_bounded_) {
    last_distances_ = counts_.distances;
    dist_stale_ = counts_.pruned + counts_.approx > 0;
    if (bounds_valid_) ++bounded_iters_;
    bounds_valid_ = true;
    prev_c_.swap(cur_c_);
    // Auto gives up where the bounds do not pay: a survivor's distance costs about twice the
    // plain kernel's (gathered rows, per-group reductions, the bounds' upkeep; measured
    // 1.8-1.9x, docs/PERFORMANCE.md); AutoPrune (groups.hpp) judges from the counts only.
    if (bounded_iters_ > 0 &&
        !judge_.keep(static_cast<double>(last_distances_) / (static_cast<double>(n_) * static_cast<double>(k))) &&
        auto_prune_) {
      prune_ = false;
    }
  } else {
    last_distances_ = static_cast<std::uint64_t>(n_) * k;
    dist_stale_ = false;
  }
  return inertia;
}

// The kernels sum in X's own coordinates: raw sums (exact enough in float64 even for a large
// common offset) against the centroids moved back by the shift. Sums are carried across
// super-blocks and chunks and centred once at the end.
template <class T>
void CpuEngine<T>::begin_sums(const double* centroids, std::size_t k, double* sums, double* wsums) {
  abs_centroids_.resize(k * dim_);
  for (std::size_t c = 0; c < k; ++c) {
    for (std::size_t j = 0; j < dim_; ++j) abs_centroids_[c * dim_ + j] = centroids[c * dim_ + j] + shift_[j];
  }
  std::fill(sums, sums + k * dim_, 0.0);
  std::fill(wsums, wsums + k, 0.0);
}

template <class T>
void CpuEngine<T>::end_sums(std::size_t k, double* sums, const double* wsums) const {
  for (std::size_t c = 0; c < k; ++c) {
    for (std::size_t j = 0; j < dim_; ++j) sums[c * dim_ + j] -= wsums[c] * shift_[j];
  }
}

// Rows per update group: whole super-blocks, enough of them for kBlocksPerThread blocks per
// thread. Only the parallel schedule depends on it (and on the thread count), never the order
// of additions.
template <class T>
std::size_t CpuEngine<T>::group_rows() const {
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
template <class T>
void CpuEngine<T>::update_group(const Chunk<T>& ch, std::size_t r0, std::size_t r1, const std::int32_t* labels,
                                std::size_t k, double* sums, double* wsums, double* qsums, double* inertia) {
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
  part_q_.assign(nseg, 0.0);
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
      const double* w = run_.lloyd_w(ch.first + a);
      double acc = 0;
      for (std::size_t s = block_seg_[b]; s < block_seg_[b + 1]; ++s) {
        const std::size_t c = seg_cluster_[s];
        std::fill(sq.begin(), sq.end(), 0.0);
        table_->accumulate_run(pts, perm_.data() + seg_begin_[s], seg_begin_[s + 1] - seg_begin_[s],
                               sb_end - seg_begin_[s], w, abs_centroids_.data() + c * dim,
                               part_sum_.data() + s * dim, part_w_.data() + s, sq.data());
        double q = 0;
        for (std::size_t j = 0; j < dim; ++j) q += sq[j];
        part_q_[s] = q;
        acc += q;
      }
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
          qsums[c] += part_q_[s];
        }
      }
    }
  }
  for (double v : block_inertia_) *inertia += v;
}

namespace {
// counts[u * k + c] (part u's items of cluster c) become where they start when the parts' runs
// are laid out cluster by cluster, part by part within each cluster (so a cluster's items stay
// in part order); offsets[c] is cluster c's start, offsets[k] the total.
void cluster_major_starts(std::uint64_t* counts, std::size_t parts, std::size_t k, std::uint64_t* offsets) {
  std::uint64_t pos = 0;
  for (std::size_t c = 0; c < k; ++c) {
    offsets[c] = pos;
    for (std::size_t u = 0; u < parts; ++u) {
      const std::uint64_t cnt = counts[u * k + c];
      counts[u * k + c] = pos;
      pos += cnt;
    }
  }
  offsets[k] = pos;
}
}  // namespace

// Counting sort of n labels: offsets[c]..offsets[c+1] is cluster c's run in perm (indices
// 0..n-1), each run in increasing point order (a stable sort, so the result does not depend
// on how it is split).
template <class T>
void CpuEngine<T>::sort_by_label(const std::int32_t* labels, std::size_t n, std::size_t k, std::uint32_t* perm,
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
    cluster_major_starts(hist_.data(), nt, k, offsets);
    for (std::size_t i = lo; i < hi; ++i) perm[h[labels[i]]++] = static_cast<std::uint32_t>(i);
  }
}

// ---- Incremental update (docs/KERNELS.md, "Incremental update") ----
//
// A full update leaves, per cluster c, its weight W, the sum S of w (x - shift), and about the
// centroid r it was assigned to, U = S - W r and Q = sum of w ||x - shift - r||^2 (the update's
// own squared distances). A later step moves only the rows whose label changed: each cluster
// takes its removals and additions in row order (chunk after chunk, so in-memory and streamed
// data give the same bits), and its inertia about the new centroid c is
// Q + 2 U.(r - c) + W ||r - c||^2 -- small terms once centroids settle, no cancellation of the
// large ones. Every running sum carries its additions' rounding errors (TwoSum), so hundreds of
// moves round about as one full update does. Whether a step is incremental depends on the labels alone (few moved last step,
// fewer than kIncRefresh steps since a full one, and the caller's labels on entry are the
// engine's last ones), so pruned and unpruned runs, which give the same labels, take the same
// steps and the same bits.
namespace {
// s + e += v with the rounding error of the addition carried in e (Knuth's TwoSum), so that
// many small moves do not drift the running sums s + e.
inline void two_sum_into(double& s, double& e, double v) {
  const double t = s + v;
  const double b = t - s;
  e += (s - (t - b)) + (v - b);
  s = t;
}
}  // namespace

template <class T>
bool CpuEngine<T>::incremental_next(std::size_t k) const {
  // At most 1/8 of the rows moved, or 1/32 where K x D < kAutoPruneMinWork (the rows prune =
  // auto leaves unpruned): there the assignment is cheap and the full update rides along with
  // its read of each row, while a move costs two events, each a row fetched at random and two
  // compensated sums per feature. Measured on a Sapphire Rapids-class Xeon, 2 threads, blobs
  // 50,000 x 16 x 16 unpruned (medians of 61 fits, three runs each): 18.4-18.9 ms with 1/8,
  // 16.1-16.6 ms with 1/32, 16.3-16.5 ms with 1/64; pruned blobs 300,000 x 64 x 256 (where a
  // full update reads rows the bounds skipped) 6.98-7.07 s with 1/8 and 7.09-7.16 s with 1/32.
  // The labels alone decide (through the moves), so pruned and unpruned runs still agree.
  const std::size_t F = k * dim_ < kAutoPruneMinWork ? 32 : 8;
  return inc_valid_ && inc_k_ == k && inc_steps_ + 1 < kIncRefresh && inc_last_moved_ * F <= n_;
}

template <class T>
void CpuEngine<T>::inc_refresh(const double* centroids, std::size_t k, const double* sums, const double* wsums,
                               const double* qsums, const std::int32_t* labels) {
  const std::size_t dim = dim_;
  // Each running sum is kept as a value and the error of its additions (second half, zero now).
  inc_s_.assign(2 * k * dim, 0.0);
  std::copy(sums, sums + k * dim, inc_s_.begin());
  inc_w_.assign(2 * k, 0.0);
  std::copy(wsums, wsums + k, inc_w_.begin());
  inc_q_.assign(2 * k, 0.0);
  std::copy(qsums, qsums + k, inc_q_.begin());
  inc_r_.assign(centroids, centroids + k * dim);
  inc_u_.assign(2 * k * dim, 0.0);
  for (std::size_t c = 0; c < k; ++c) {
    for (std::size_t j = 0; j < dim; ++j) inc_u_[c * dim + j] = sums[c * dim + j] - wsums[c] * centroids[c * dim + j];
  }
  inc_n_.assign(k, 0);
  inc_labels_.assign(labels, labels + n_);
  const double* lw = run_.lloyd_w();
  for (std::size_t i = 0; i < n_; ++i) {
    if (!lw || lw[i] > 0) ++inc_n_[static_cast<std::size_t>(labels[i])];
  }
  inc_k_ = k;
  inc_steps_ = 0;
  inc_valid_ = true;
}

// Applies the chunk's moved rows (labels against inc_labels_) to the per-cluster sums. Events
// are (row << 1) | removal, counting-sorted by cluster in row order; each cluster takes its
// moves in row order, whoever sorts them, so the bits depend on neither the batching nor the
// threads. Usually all rows go at once (inc_apply_rows); where the step moved more rows than
// max(N/8, 4096) (2 bytes a row of events at most), they go in batches of consecutive rows
// holding at most that many moves (path "...+incremental+batched"). FLASHKM_PRUNE_MOVE_CAP
// (inc_move_cap_, read by begin_run) lowers that cap, so tests can pin the batches' bits.
template <class T>
void CpuEngine<T>::inc_apply(const Chunk<T>& ch, const std::int32_t* labels, std::size_t k) {
  const std::size_t n = ch.x.rows;
  std::size_t cap = std::max<std::size_t>(n_ / 8, 4096);
  if (inc_move_cap_ > 0) cap = std::min(cap, inc_move_cap_);
  if (inc_apply_rows(ch, labels, k, 0, n, cap)) return;
  path_ = fused_fits(k) ? "fused+incremental+batched" : "grouped+incremental+batched";
  const std::int32_t* lab = labels + ch.first;
  const std::int32_t* old = inc_labels_.data() + ch.first;
  for (std::size_t a = 0; a < n;) {
    std::size_t b = a, batch = 0;
    for (; b < n && batch < cap; ++b) batch += lab[b] != old[b];
    if (batch > 0) inc_apply_rows(ch, labels, k, a, b, cap);
    a = b;
  }
}

// inc_apply over rows [a, b) of the chunk, in one parallel region: each task of consecutive rows
// counts its moves per cluster, they are placed cluster by cluster, task by task
// (cluster_major_starts), and the clusters apply them. Returns false, having changed nothing,
// where the rows hold more than cap moves.
template <class T>
bool CpuEngine<T>::inc_apply_rows(const Chunk<T>& ch, const std::int32_t* labels, std::size_t k, std::size_t a,
                                  std::size_t b, std::size_t cap) {
  const std::int32_t* lab = labels + ch.first;
  std::int32_t* old = inc_labels_.data() + ch.first;
  const std::size_t n = b - a;
  // Tasks of consecutive rows, with a count per cluster each: at most 64 tasks and n / 4
  // counters in all (2 bytes a row), one task where K is that large.
  const std::size_t nt = std::clamp<std::size_t>(
      std::min<std::size_t>(4 * static_cast<std::size_t>(threads_), n / (4 * std::max<std::size_t>(k, 256))), 1, 64);
  const std::size_t per = (n + nt - 1) / nt;
  ev_cnt_.assign(nt * k, 0);
  // Room for the events before the parallel region, so that nothing in it allocates (an
  // allocation failure there could not be thrown to the caller).
  ev_off_.assign(k + 1, 0);
  ev_row_.reserve(2 * cap);
  std::uint64_t moved[64] = {};
  bool over = false;
#pragma omp parallel num_threads(threads_)
  {
#pragma omp for schedule(static)
    for (std::size_t t = 0; t < nt; ++t) {
      std::uint64_t* cnt = ev_cnt_.data() + t * k;
      std::uint64_t m = 0;
      for (std::size_t i = a + t * per; i < std::min(b, a + (t + 1) * per); ++i) {
        if (lab[i] != old[i]) {
          ++cnt[static_cast<std::size_t>(old[i])];
          ++cnt[static_cast<std::size_t>(lab[i])];
          ++m;
        }
      }
      moved[t] = m;
    }
#pragma omp single
    {
      std::uint64_t total = 0;
      for (std::size_t t = 0; t < nt; ++t) total += moved[t];
      over = total > cap;
      if (!over) {
        // Each (task, cluster) count becomes where its events start (2 * moved <= 2 * cap: within
        // the capacity reserved above).
        cluster_major_starts(ev_cnt_.data(), nt, k, ev_off_.data());
        ev_row_.resize(ev_off_[k]);
      }
    }
    if (!over) {
#pragma omp for schedule(static)
      for (std::size_t t = 0; t < nt; ++t) {
        std::uint64_t* fill = ev_cnt_.data() + t * k;
        for (std::size_t i = a + t * per; i < std::min(b, a + (t + 1) * per); ++i) {
          if (lab[i] != old[i]) {
            ev_row_[fill[static_cast<std::size_t>(old[i])]++] = (static_cast<std::uint64_t>(i) << 1) | 1u;
            ev_row_[fill[static_cast<std::size_t>(lab[i])]++] = static_cast<std::uint64_t>(i) << 1;
            old[i] = lab[i];
          }
        }
      }
      inc_apply_clusters(ch, k);
    }
  }
  return !over;
}

// The events ev_row_ / ev_off_ applied cluster by cluster: a worksharing loop, called inside a
// parallel region.
template <class T>
void CpuEngine<T>::inc_apply_clusters(const Chunk<T>& ch, std::size_t k) {
  const std::size_t dim = dim_;
  std::vector<double> dbuf(dim);
#pragma omp for schedule(dynamic, 1)
  for (std::size_t c = 0; c < k; ++c) {
    if (ev_off_[c] == ev_off_[c + 1]) continue;
    double* S = inc_s_.data() + c * dim;
    double* U = inc_u_.data() + c * dim;
    double* Se = inc_s_.data() + (k + c) * dim;  // the running sums' rounding errors
    double* Ue = inc_u_.data() + (k + c) * dim;
    const double* r = inc_r_.data() + c * dim;
    double q = inc_q_[c], W = inc_w_[c], qe = inc_q_[k + c], We = inc_w_[k + c];
    std::uint64_t members = inc_n_[c];
    double* db = dbuf.data();
    const double* sh = shift_.data();
    const double* lw = run_.lloyd_w(ch.first);
    for (std::uint64_t e = ev_off_[c]; e < ev_off_[c + 1]; ++e) {
      const std::size_t i = static_cast<std::size_t>(ev_row_[e] >> 1);
      const bool removal = (ev_row_[e] & 1u) != 0;
      const T* row = ch.x.row(i);
      if (e + 1 < ev_off_[c + 1]) prefetch_lines<0>(ch.x.row(static_cast<std::size_t>(ev_row_[e + 1] >> 1)), dim * sizeof(T));
      const double w = lw ? lw[i] : 1.0;
      const double sw = removal ? -w : w;
      // Two loops: the running sums (independent lanes, which the compiler vectorises) and
      // ||x - r||^2 in four fixed partial sums (its order does not depend on the target).
#pragma omp simd
      for (std::size_t j = 0; j < dim; ++j) {
        const double x = static_cast<double>(row[j]) - sh[j];
        const double d = x - r[j];
        db[j] = d;
        two_sum_into(S[j], Se[j], sw * x);
        two_sum_into(U[j], Ue[j], sw * d);
      }
      double p0 = 0, p1 = 0, p2 = 0, p3 = 0;
      std::size_t j = 0;
      for (; j + 4 <= dim; j += 4) {
        p0 += db[j] * db[j];
        p1 += db[j + 1] * db[j + 1];
        p2 += db[j + 2] * db[j + 2];
        p3 += db[j + 3] * db[j + 3];
      }
      for (; j < dim; ++j) p0 += db[j] * db[j];
      const double d2 = (p0 + p1) + (p2 + p3);
      two_sum_into(q, qe, sw * d2);
      two_sum_into(W, We, sw);
      if (w > 0) members = removal ? members - 1 : members + 1;
      if (members == 0) {  // nothing of positive weight left: exactly the full update's zeros
        std::fill(S, S + dim, 0.0);
        std::fill(U, U + dim, 0.0);
        std::fill(Se, Se + dim, 0.0);
        std::fill(Ue, Ue + dim, 0.0);
        q = qe = W = We = 0;
      }
    }
    inc_q_[c] = q;
    inc_w_[c] = W;
    inc_q_[k + c] = qe;
    inc_w_[k + c] = We;
    inc_n_[c] = members;
  }
}

template <class T>
bool CpuEngine<T>::inc_degenerate(std::size_t k) const {
  for (std::size_t c = 0; c < k; ++c) {
    if (inc_n_[c] > 0 && !(inc_w_[c] + inc_w_[k + c] > 0)) return true;
  }
  return false;
}

// The step's sums and weights, and its inertia against the given centroids.
template <class T>
double CpuEngine<T>::inc_result(const double* centroids, std::size_t k, double* sums, double* wsums) const {
  const std::size_t dim = dim_;
  for (std::size_t i = 0; i < k * dim; ++i) sums[i] = inc_s_[i] + inc_s_[k * dim + i];
  for (std::size_t c = 0; c < k; ++c) wsums[c] = inc_w_[c] + inc_w_[k + c];
  double inertia = 0;
  for (std::size_t c = 0; c < k; ++c) {
    double dd = 0, ud = 0;
    for (std::size_t j = 0; j < dim; ++j) {
      const double d = inc_r_[c * dim + j] - centroids[c * dim + j];
      dd += d * d;
      ud += (inc_u_[c * dim + j] + inc_u_[(k + c) * dim + j]) * d;
    }
    inertia += std::max(0.0, (inc_q_[c] + inc_q_[k + c]) + 2 * ud + wsums[c] * dd);
  }
  return inertia;
}

template <class T>
void CpuEngine<T>::compute_mean() {
  const std::size_t dim = dim_;
  // First non-finite value seen, as a flat index; the smallest wins.
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  std::size_t first_bad = kNone;
  double bad_value = 0;
  const std::vector<double> sums = block_sums(dim, [&](const Chunk<T>& ch, std::size_t r0, std::size_t r1, double* p) {
    // The sums row by row in one vectorised pass (each feature's additions in row order, as
    // before); a value that is not finite leaves its feature's sum not finite, and only then
    // is the block scanned again for its first such value (a sum of finite float64 values
    // that overflows finds none there and goes on, as before).
    for (std::size_t i = r0; i < r1; ++i) {
      const T* row = ch.x.row(i);
      for (std::size_t j = 0; j < dim; ++j) p[j] += static_cast<double>(row[j]);
    }
    bool bad = false;
    for (std::size_t j = 0; j < dim; ++j) bad |= !std::isfinite(p[j]);
    if (!bad) return;
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
    shift_t_[j] = centre_on_mean_ ? static_cast<T>(mean_[j]) : T(0);
    shift_[j] = static_cast<double>(shift_t_[j]);
  }
}

template double CpuEngine<float>::mean_variance();
template double CpuEngine<float>::update(const std::int32_t*, const double*, std::size_t, double*, double*);
template double CpuEngine<float>::assign_update(const double*, std::size_t, double*, double*,
                                                std::size_t*);
template void CpuEngine<float>::begin_sums(const double*, std::size_t, double*, double*);
template void CpuEngine<float>::end_sums(std::size_t, double*, const double*) const;
template std::size_t CpuEngine<float>::group_rows() const;
template void CpuEngine<float>::update_group(const Chunk<float>&, std::size_t, std::size_t, const std::int32_t*,
                                             std::size_t, double*, double*, double*, double*);
template void CpuEngine<float>::sort_by_label(const std::int32_t*, std::size_t, std::size_t, std::uint32_t*,
                                              std::uint64_t*);
template void CpuEngine<float>::compute_mean();
template bool CpuEngine<float>::incremental_next(std::size_t) const;
template void CpuEngine<float>::inc_refresh(const double*, std::size_t, const double*, const double*, const double*,
                                         const std::int32_t*);
template void CpuEngine<float>::inc_apply(const Chunk<float>&, const std::int32_t*, std::size_t);
template void CpuEngine<float>::inc_apply_clusters(const Chunk<float>&, std::size_t);
template bool CpuEngine<float>::inc_apply_rows(const Chunk<float>&, const std::int32_t*, std::size_t, std::size_t,
                                            std::size_t, std::size_t);
template bool CpuEngine<float>::inc_degenerate(std::size_t) const;
template double CpuEngine<float>::inc_result(const double*, std::size_t, double*, double*) const;
template double CpuEngine<double>::mean_variance();
template double CpuEngine<double>::update(const std::int32_t*, const double*, std::size_t, double*, double*);
template double CpuEngine<double>::assign_update(const double*, std::size_t, double*, double*,
                                                 std::size_t*);
template void CpuEngine<double>::begin_sums(const double*, std::size_t, double*, double*);
template void CpuEngine<double>::end_sums(std::size_t, double*, const double*) const;
template std::size_t CpuEngine<double>::group_rows() const;
template void CpuEngine<double>::update_group(const Chunk<double>&, std::size_t, std::size_t, const std::int32_t*,
                                              std::size_t, double*, double*, double*, double*);
template void CpuEngine<double>::sort_by_label(const std::int32_t*, std::size_t, std::size_t, std::uint32_t*,
                                               std::uint64_t*);
template void CpuEngine<double>::compute_mean();
template bool CpuEngine<double>::incremental_next(std::size_t) const;
template void CpuEngine<double>::inc_refresh(const double*, std::size_t, const double*, const double*, const double*,
                                         const std::int32_t*);
template void CpuEngine<double>::inc_apply(const Chunk<double>&, const std::int32_t*, std::size_t);
template void CpuEngine<double>::inc_apply_clusters(const Chunk<double>&, std::size_t);
template bool CpuEngine<double>::inc_apply_rows(const Chunk<double>&, const std::int32_t*, std::size_t, std::size_t,
                                            std::size_t, std::size_t);
template bool CpuEngine<double>::inc_degenerate(std::size_t) const;
template double CpuEngine<double>::inc_result(const double*, std::size_t, double*, double*) const;

}  // namespace flashkm::detail
