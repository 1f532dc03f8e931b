// The CPU engine's bounded assignment (docs/KERNELS.md, "Bounded assignment"): Yinyang groups of
// centroids, per-row float bounds that account for rounding, and the surviving rows scored by the
// same micro-kernel as the plain assignment, so that labels and distances are bitwise its own.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <omp.h>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "cpu/cpu_engine_impl.hpp"
#include "cpu/groups.hpp"

namespace flashkm::detail {

// A pair costs about kPairCost of a group's lanes: it reads its centroid's whole row (from L2 at
// best) for one distance, where group_min's tiles share each load among 12 rows or 16 centroids.
// Measured at 768-D on a Zen 4 (50k and 200k x 768 x 256): 2 to 8 within a few percent, 5 the
// fastest.
constexpr std::size_t kPairCost = 5;

// A block is scored whole (bounded_block) where its survivors' estimate reaches this fraction of
// its rows times K.
constexpr double kWholeAbove = 0.9;

// prune = auto starts the bounds at the first iteration after one that changed at most this
// fraction of the labels (prune = on starts them at the first). While many labels move, the
// centroids move far: the first bounded iteration scores every distance (dearer than the plain
// kernel: groups, bounds) and the bounds it sets loosen by the drifts that follow, so starting
// later leaves tighter bounds for the rest of the run. Measured on a Sapphire Rapids-class Xeon,
// 2 threads, from the same k-means++ centres (bench_prune_iters with the start forced in a
// throwaway build, medians of 3): blobs 100,000 x 128 x 1024 2.47 s from iteration 1,
// 2.17-2.25 s from 4-8 (7 here); Fashion-MNIST K = 256 3.39 s from 1, 3.04-3.14 s from 5-8
// (7 here); Fashion-MNIST K = 10 and blobs 300,000 x 64 x 256 the same within 3% from 1 to 10.
constexpr double kStartMoved = 0.05;

template <class T>
bool CpuEngine<T>::begin_run(Prune prune, std::size_t k) {
  run_.begin(metric_ == Metric::kCosine, [&](double* sq) { row_sq_norms(sq); });
  prune_ = false;
  inc_valid_ = false;  // a run starts with a full update
  bounds_valid_ = false;
  dist_stale_ = false;
  iter_bounded_ = false;
  grouped_ = false;
  bounded_iters_ = 0;
  bounds_started_ = false;
  inc_last_moved_ = n_;  // the first iteration moves every row (no incremental step follows it)
  judge_.reset(AutoPrune::break_even_for(dim_));
  auto_prune_ = prune == Prune::kAuto;
  {
    // FLASHKM_PRUNE_MOVE_CAP=m (an integer >= 1): the incremental update's moves per parallel
    // pass lowered to at most m (inc_apply), so tests can pin the batches' bits.
    inc_move_cap_ = 0;
    if (const char* env = std::getenv("FLASHKM_PRUNE_MOVE_CAP")) {
      char* end = nullptr;
      const unsigned long long m = std::strtoull(env, &end, 10);
      if (end != env && *end == '\0' && env[0] != '-') inc_move_cap_ = static_cast<std::size_t>(m);
    }
  }
  if (prune == Prune::kOff || k == 0) return false;
  // Groups of whole panels: one panel each (Yinyang's K/10 centroids per group is about one
  // panel at the K where grouping pays), fewer and larger groups where their float lower bounds
  // would outgrow X itself (4 (1 + G) bytes per row) or one uint64_t of group bits. The groups
  // are cut from the one-vector panel where that makes them smaller than the wide panel's
  // (each lower bound then covers fewer centroids, so fewer groups fail their test), else from
  // the wide panel (the same groups, scored by the faster kernel). Both panels give every pair
  // bitwise the same score, the plain assignment's.
  const std::size_t fit = row_bytes_ / 4 > 1 ? row_bytes_ / 4 - 1 : 1;
  const std::size_t cap = std::min(kMaxGroups, fit);
  auto group_of = [&](const PanelKernels<T>* panel) {
    const std::size_t npanels = (k + panel->nr - 1) / panel->nr;
    return (npanels + cap - 1) / cap * panel->nr;
  };
  const PanelKernels<T>* panel = panel_for(k);
  group_size_ = group_of(panel);
  if (panel != &table_->narrow) {
    const std::size_t gn = group_of(&table_->narrow);
    if (gn < group_size_) {
      panel = &table_->narrow;
      group_size_ = gn;
    }
  }
  bpanel_ = panel;
  groups_ = (k + group_size_ - 1) / group_size_;
  {
    // FLASHKM_PRUNE_WHOLE=0: no block scored whole by the wide panel (to measure).
    const char* env = std::getenv("FLASHKM_PRUNE_WHOLE");
    wpanel_ = panel_for(k) != bpanel_ && !(env != nullptr && std::string(env) == "0") ? panel_for(k) : nullptr;
  }
  if (prune == Prune::kAuto && 4 * (1 + groups_) > row_bytes_) return false;
  // Rows whose distances are cheap (K x D below kAutoPruneMinWork = 2048 multiply-adds): a
  // row's upkeep (its bounds' drift, its test, a survivor's packing and pairs) costs about as
  // much as all its distances, so the bounds do not pay even where they skip nearly all of
  // them. Measured on AMD EPYC (Zen 3, AVX2), 2 threads, overlapping blobs of 50,000 rows:
  // pruned fits ran at 0.30-0.82x the unpruned one for K x D from 64 to 1024 (50k x 32 x 16:
  // 0.30x, with 2-4% of the distances in its last iterations), 0.50-0.99x at 2048 and
  // 0.78-1.24x at 4096, where the fraction judge takes over; Fashion-MNIST K = 10 (7840) wins
  // 2.6x. Auto then runs unpruned from the start, with no trial.
  if (prune == Prune::kAuto && k * dim_ < kAutoPruneMinWork) return false;
  // 16-bit rows on AMX tiles: the bounded path scores survivors with the float32 kernels (the
  // same bits, not the tiles' speed); auto leaves them to the tiles, on prunes them.
  if (prune == Prune::kAuto && amx_mode_) return false;
  // One lower bound per centroid (Elkan) where K of them and the upper bound fit in a row of X
  // (4 (1 + K) bytes, so D > K for float32 rows): after the centroids move, each bound drops by
  // its own centroid's drift, not its group's largest, and a group is scored only where one of
  // its own centroids' bounds fails, so far fewer groups are scored where the distances crowd
  // (high D). The groups, their scoring and the answer are the same either way.
  // FLASHKM_PRUNE_BOUNDS=groups or =centroids forces one kind (centroids even beyond that
  // memory), to measure and test both.
  {
    const char* env = std::getenv("FLASHKM_PRUNE_BOUNDS");
    const std::string force = env != nullptr ? env : "";
    per_centroid_ = k > 1 && (force == "centroids" || (force != "groups" && 4 * (1 + k) <= row_bytes_));
  }
  nlb_ = per_centroid_ ? k : groups_;
  {
    // Pairs pay only where a group holds more lanes than a pair costs (kPairCost): 8- and
    // 16-lane panels (AVX2 and AVX-512 float, AVX-512 double), not the narrower targets', where
    // each survivor's own pair would be a distance on top of its groups.
    const char* env = std::getenv("FLASHKM_PRUNE_PAIRS");
    pair_filter_ = per_centroid_ && groups_ > 1 && group_size_ > kPairCost && !(env != nullptr && std::string(env) == "0");
  }
  ub_.assign(n_, 0.0f);
  lb_.assign(n_ * nlb_, 0.0f);
  prune_ = true;
  return true;
}

// Sizes every thread's scratch of the bounded assignment for this iteration's shape (serial;
// kept across iterations, so an iteration neither allocates nor clears megabytes of it).
template <class T>
void CpuEngine<T>::prepare_scratch() {
  if (bscratch_.size() < static_cast<std::size_t>(threads_)) bscratch_.resize(static_cast<std::size_t>(threads_));
  const std::size_t P = table_->center_pad, bb = bound_block_rows();
  const std::size_t bp = (bb + P - 1) / P * P;
  for (BoundScratch& s : bscratch_) {
    s.rows.reserve(bb);
    s.own.resize(bb);
    s.list.reserve(bb * groups_);
    s.need.resize(bb);
    s.start.resize(groups_ + 1);
    s.fill.resize(groups_);
    s.best_g.resize(bb);
    s.bx.resize(bp * dim_);
    s.bnorm.resize(bp);
    s.xr.resize(bp);
    s.min1.resize(bp);
    s.min2.resize(bp);
    s.idx1.resize(bp);
    s.best_s.resize(bb);
    s.best_m2.resize(bb);
    s.best_j.resize(bb);
    s.eps.resize(bb);
    s.scores.resize(per_centroid_ ? bp * std::max(group_size_, wpanel_ != nullptr ? wpanel_->nr : 0) : 0);
    s.gmin.resize(per_centroid_ ? bb * groups_ : 0);
    s.pairs.resize(pair_filter_ ? k_ : 0);
    s.pscores.resize(pair_filter_ ? k_ : 0);
    s.mode.resize(pair_filter_ ? bb : 0);
    s.plb.resize(pair_filter_ ? k_ : 0);
  }
}

// The calling thread's scratch (prepare_scratch sized it).
template <class T>
typename CpuEngine<T>::BoundScratch& CpuEngine<T>::bound_scratch() {
  return bscratch_[static_cast<std::size_t>(omp_get_thread_num())];
}

// The largest row norm about the shift, for the guard against scores beyond float range: one
// pass over X, once per shift (not once per run), when a run's bounds first start (a run
// that never starts them never reads it). Each row's sum of squares in double in eight
// interleaved partial sums (one chain of dependent additions would bound the pass by their
// latency): D terms in any order round by at most D 2^-53 of the sum, far inside the 2^-30
// added.
template <class T>
void CpuEngine<T>::take_rmax() {
  if (rmax_ >= 0) return;
  double all = 0;
  const std::size_t dim = dim_;
  const T* sh = shift_t_.data();
  for_each_chunk([&](const Chunk<T>& ch) {
    double mx = 0;
#pragma omp parallel for num_threads(threads_) schedule(static) reduction(max : mx)
    for (std::size_t i = 0; i < ch.x.rows; ++i) {
      const T* row = ch.x.row(i);
      double a[8] = {};
      std::size_t j = 0;
      for (; j + 8 <= dim; j += 8) {
        for (std::size_t l = 0; l < 8; ++l) {
          const double v = static_cast<double>(static_cast<T>(row[j + l] - sh[j + l]));
          a[l] += v * v;
        }
      }
      for (; j < dim; ++j) {
        const double v = static_cast<double>(static_cast<T>(row[j] - sh[j]));
        a[0] += v * v;
      }
      const double sq = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
      mx = std::max(mx, sq);
    }
    all = std::max(all, mx);
  });
  rmax_ = std::sqrt(all) * (1 + 0x1p-30);
}

// Rows per block of the bounded assignment: its survivors are packed together and each group
// scores those that need it, a sliver at a time (larger blocks leave fewer part-empty slivers;
// 1024 rows of 64 floats pack into 256 KiB, within a core's L2). A power of two no larger than
// a fused tile, so the blocks are the same whichever path or chunking delivers the rows (the
// distance counts too).
template <class T>
std::size_t CpuEngine<T>::bound_block_rows() const { return std::min<std::size_t>(1024, fused_tile_rows(row_bytes_)); }

// The centroids as the kernels multiply them, their norms and drifts, and the iteration's
// slack; decides whether this assign_update runs bounded.
template <class T>
void CpuEngine<T>::prepare_bounds(const double* centroids, std::size_t k) {
  iter_bounded_ = false;
  if (!prune_) return;
  if (auto_prune_ && !bounds_started_ &&
      static_cast<double>(inc_last_moved_) > kStartMoved * static_cast<double>(n_)) {
    return;
  }
  bounds_started_ = true;
  take_rmax();
  cur_c_.resize(k * dim_);
  for (std::size_t i = 0; i < k * dim_; ++i) cur_c_[i] = static_cast<T>(centroids[i]);
  double nmin = 0, nmax = 0;
  bounds::norm_range(cur_c_.data(), k, dim_, nmin, nmax);
  bounds::Slack& sl = slack_;
  sl = bounds::euclidean_slack<T>(dim_, nmax);
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
    T* bp = bpacked_.reserve(bpanel_->packed_size(k, dim_));
    bpanel_->pack_centroids(permuted.data(), k, dim_, bp);
    const std::size_t kpad = (k + bpanel_->nr - 1) / bpanel_->nr * bpanel_->nr;
    if (inner_product_) std::fill_n(bp + kpad * dim_, k, T(0));
    const bool wide = per_centroid_ && wpanel_ != nullptr;
    const std::size_t wkpad = wide ? (k + wpanel_->nr - 1) / wpanel_->nr * wpanel_->nr : 0;
    // The positions' ids, padded with +inf to the wider of the two panels (both read them).
    ids_.assign(std::max(kpad, wkpad), std::numeric_limits<T>::infinity());
    for (std::size_t p = 0; p < k; ++p) ids_[p] = static_cast<T>(order_[p]);
    bnorms_at_ = kpad * dim_;
    if (wide) {
      T* wp = wpacked_.reserve(wpanel_->packed_size(k, dim_));
      wpanel_->pack_centroids(permuted.data(), k, dim_, wp);
      if (inner_product_) std::fill_n(wp + wkpad * dim_, k, T(0));
    }
    if (pair_filter_) {
      // The values the panels hold (pack_centroids rounds each the same way), row by row.
      bcrows_.resize(k * dim_);
      for (std::size_t i = 0; i < k * dim_; ++i) bcrows_[i] = static_cast<T>(permuted[i]);
    }
  }
  if (bounds_valid_) {
    drift_.assign(k, 0.0);
    gdrift_.assign(groups_, 0.0);
    const double rel = 1 + static_cast<double>(dim_ + 4) * 0x1p-52;  // double sums of squares
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
    gdrift_up_.resize(groups_);
    for (std::size_t g = 0; g < groups_; ++g) gdrift_up_[g] = bounds::up(gdrift_[g]);
    if (per_centroid_) {
      cdrift_up_.resize(k);
      for (std::size_t p = 0; p < k; ++p) cdrift_up_[p] = bounds::up(drift_[order_[p]]);
    }
  }
  prepare_scratch();
  iter_bounded_ = true;
}

// Yinyang's groups of the first iteration's centroids (groups.hpp; a group is whole panels, so
// every group but the last holds exactly group_size_), kept for the run.
template <class T>
void CpuEngine<T>::make_groups(const double* c, std::size_t k) {
  order_ = coherent_order(c, k, dim_, group_size_);
  // Each group's centroids in index order (group_min's contract: ids ascend within a panel).
  for (std::size_t g0 = 0; g0 < k; g0 += group_size_) {
    std::sort(order_.begin() + static_cast<std::ptrdiff_t>(g0), order_.begin() + static_cast<std::ptrdiff_t>(std::min(k, g0 + group_size_)));
  }
  pos_of_.resize(k);
  for (std::size_t p = 0; p < k; ++p) pos_of_[order_[p]] = static_cast<std::uint32_t>(p);
  grouped_ = true;
}

// Bounded FlashAssign over rows [r0, r1) of a chunk, in parallel blocks; returns the labels
// changed and adds to counts_.
template <class T>
std::size_t CpuEngine<T>::bounded_chunk(const Chunk<T>& ch, std::size_t r0, std::size_t r1, std::int32_t* labels,
                                        T* dist) {
  const std::size_t bb = bound_block_rows();
  const std::size_t nb = (r1 - r0 + bb - 1) / bb;
  std::size_t changed = 0;
  std::uint64_t distances = 0, pruned = 0, approx = 0;
#pragma omp parallel num_threads(threads_) reduction(+ : changed, distances, pruned, approx)
  {
    BoundScratch& s = bound_scratch();
    BoundCounts c;
#pragma omp for schedule(dynamic, 1)
    for (std::size_t b = 0; b < nb; ++b) {
      changed += bounded_block(ch, r0 + b * bb, std::min(r1, r0 + (b + 1) * bb), labels + ch.first,
                               dist + ch.first, s, c);
    }
    distances += c.distances;
    pruned += c.pruned;
    approx += c.approx;
  }
  counts_.distances += distances;
  counts_.pruned += pruned;
  counts_.approx += approx;
  return changed;
}

// Rows [r0, r1) of a chunk on one thread, in sorting blocks (lab and dst chunk-local).
template <class T>
std::size_t CpuEngine<T>::bounded_rows(const Chunk<T>& ch, std::size_t r0, std::size_t r1, std::int32_t* lab, T* dst,
                                       BoundScratch& s, BoundCounts& c) {
  std::size_t changed = 0;
  const std::size_t bb = bound_block_rows();
  for (std::size_t b = r0; b < r1; b += bb) changed += bounded_block(ch, b, std::min(r1, b + bb), lab, dst, s, c);
  return changed;
}

// One block of rows. Each row's bounds first follow its centroids' drifts; a row whose upper
// bound stays below its lower bounds by the scores' rounding slack keeps its label and
// computes nothing. The survivors are packed once, then scored group by group: each group
// takes exactly the survivors that need it (first every survivor's own group, then each
// other group for the rows whose lower bound does not exclude it against the best score found
// so far), gathered into slivers for the same micro-kernel and arithmetic as assign_rows. A
// group skipped for a row provably holds no centroid whose float score could reach the row's
// best, so the label (lowest index among equal scores) and distance are bitwise assign_rows'
// own; the minimum over the groups does not depend on the order they are scored in.
template <class T>
std::size_t CpuEngine<T>::bounded_block(const Chunk<T>& ch, std::size_t b0, std::size_t b1, std::int32_t* lab, T* dst,
                                        BoundScratch& s, BoundCounts& counts) {
  const std::size_t G = groups_, gs = group_size_, P = table_->center_pad, dim = dim_, k = k_;
  const bool pc = per_centroid_;
  const std::size_t NL = nlb_;  // lower bounds per row: G, or K per centroid (position order)
  const bounds::Slack& sl = slack_;
  const bool valid = bounds_valid_;
  const auto none = static_cast<std::uint32_t>(G);
  s.rows.clear();
  for (std::size_t r = b0; r < b1; ++r) {
    if (!valid) {
      s.own[s.rows.size()] = none;
      s.rows.push_back(static_cast<std::uint32_t>(r));
      continue;
    }
    const std::size_t gr = ch.first + r;
    const std::int32_t a = lab[r];
    const float U = bounds::up_add(ub_[gr], drift_[static_cast<std::size_t>(a)]);
    ub_[gr] = U;
    // Per centroid: each group's smallest bound kept in the survivor's slot, for the groups'
    // test below (only its own group's bounds change before then, and it is not tested).
    const float lmin =
        pc ? table_->lower_step_groups(lb_.data() + gr * NL, cdrift_up_.data(), NL, gs, s.gmin.data() + s.rows.size() * G)
           : bounds::lower_step(lb_.data() + gr * G, gdrift_up_.data(), G);
    const double u = U, l = lmin;
    // The row's norm is at most U + cmax (triangle inequality through its centroid).
    if (u * u + 2 * sl.eps(u + sl.cmax) + sl.dn < l * l * bounds::kTestMargin) {
      ++counts.pruned;
      continue;
    }
    s.own[s.rows.size()] = pos_of_[static_cast<std::size_t>(a)] / gs;
    s.rows.push_back(static_cast<std::uint32_t>(r));
  }
  const std::size_t ns = s.rows.size();
  if (ns == 0) return 0;
  // The survivors packed once, a sliver at a time, exactly as assign_rows packs them.
  for (std::size_t s0 = 0; s0 < ns; s0 += P) {
    table_->pack_rows(ch.pts, s.rows.data() + s0, std::min(P, ns - s0), s.bx.data() + s0 * dim,
                      s.bnorm.data() + s0);
  }
  const double rel_x = 1.0 / (1.0 - bounds::gamma<T>(2 * dim + 4));
  for (std::size_t i = 0; i < ns; ++i) {
    s.best_s[i] = std::numeric_limits<T>::infinity();
    s.best_m2[i] = std::numeric_limits<T>::infinity();
    s.best_j[i] = std::numeric_limits<std::int32_t>::max();
    s.best_g[i] = none;
    s.eps[i] = sl.eps(std::sqrt(static_cast<double>(s.bnorm[i]) * rel_x) * (1 + 0x1p-40));
  }
  // Scores positions [c0, c1) of `packed` (one panel of pk, or group g's panels of bpanel_) for
  // the survivors s.list[l0, l1): lowers their best and sets their bounds on those positions
  // from the scores (per centroid) or on group g from its smallest score (the best's group gets
  // its runner-up's at the end). A wide panel holds several groups, so its ids need not ascend
  // with the lanes: where its smallest score is held twice (runner-up equal), the lowest index
  // holding it is found among the scores (a group's ids ascend, so there it is already idx1).
  auto score_panel = [&](const PanelKernels<T>* pk, const T* packed, std::size_t g, std::size_t c0, std::size_t c1,
                         std::size_t lds, std::size_t l0, std::size_t l1) {
    const std::size_t m = l1 - l0, mpad = (m + P - 1) / P * P;
    for (std::size_t q = 0; q < mpad; ++q) s.xr[q] = s.bx.data() + static_cast<std::size_t>(s.list[l0 + (q < m ? q : 0)]) * dim;
    pk->group_min(s.xr.data(), dim, packed, ids_.data(), k, c0, c1, m, s.min1.data(), s.idx1.data(), s.min2.data(),
                  pc ? s.scores.data() : nullptr, lds);
    counts.distances += m * (c1 - c0);
    for (std::size_t q = 0; q < m; ++q) {
      const std::size_t i = s.list[l0 + q];
      const T v = s.min1[q];
      std::int32_t j = s.idx1[q];
      const double x = s.bnorm[i];
      if (pc) {
        const T* sc = s.scores.data() + q * lds;
        if (s.min2[q] == v) {
          for (std::size_t p = c0; p < c1; ++p) {
            if (sc[p - c0] == v) j = std::min(j, static_cast<std::int32_t>(ids_[p]));
          }
        }
        // Every centroid's bound from its own score (the best's is cleared at the end).
        table_->bounds_from_scores(sc, c1 - c0, x - s.eps[i] + sl.nmin, lb_.data() + (ch.first + s.rows[i]) * NL + c0);
      } else {
        lb_[(ch.first + s.rows[i]) * G + g] =
            bounds::down(std::sqrt(std::max(0.0, static_cast<double>(v) + x - s.eps[i] + sl.nmin)));
      }
      if (v < s.best_s[i] || (v == s.best_s[i] && j < s.best_j[i])) {
        s.best_s[i] = v;
        s.best_j[i] = j;
        s.best_m2[i] = s.min2[q];
        s.best_g[i] = static_cast<std::uint32_t>(g);
      }
    }
  };
  auto score = [&](std::size_t g, std::size_t l0, std::size_t l1) {
    score_panel(bpanel_, bpacked_.data(), g, g * gs, std::min(k, g * gs + gs), gs, l0, l1);
  };
  // The groups other than its own that survivor i's upper bound does not exclude (each group's
  // smallest per-centroid bound against U^2 + 3 eps: the best score is at most its own
  // centroid's, within eps of U^2): the most its pairs and groups can need beyond its own.
  auto upper_open = [&](std::size_t i) {
    const double u = ub_[ch.first + s.rows[i]];
    return bounds::not_above(s.gmin.data() + i * G, G, bounds::root_up(u * u + 3 * s.eps[i] + sl.nmax)) &
           ~(std::uint64_t{1} << s.own[i]);
  };
  // Each group's survivors, in row order: s.list[s.start[g], s.start[g + 1]).
  auto bucket = [&](auto&& groups_of) {
    std::fill(s.start.begin(), s.start.begin() + static_cast<std::ptrdiff_t>(G + 1), 0u);
    for (std::size_t i = 0; i < ns; ++i) {
      for (std::uint64_t m = groups_of(i); m; m &= m - 1) ++s.start[static_cast<std::size_t>(__builtin_ctzll(m)) + 1];
    }
    for (std::size_t g = 0; g < G; ++g) s.start[g + 1] += s.start[g];
    std::copy_n(s.start.begin(), G, s.fill.begin());
    s.list.resize(s.start[G]);
    for (std::size_t i = 0; i < ns; ++i) {
      for (std::uint64_t m = groups_of(i); m; m &= m - 1) {
        s.list[s.fill[static_cast<std::size_t>(__builtin_ctzll(m))]++] = static_cast<std::uint32_t>(i);
      }
    }
    for (std::size_t g = 0; g < G; ++g) {
      if (s.start[g + 1] > s.start[g]) score(g, s.start[g], s.start[g + 1]);
    }
  };
  const std::uint64_t all = G == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << G) - 1;
  // A block whose survivors' bounds leave nearly every distance to compute (the first
  // iterations, while the centroids move far) is scored whole with the wide panel, the pairs'
  // and groups' upkeep skipped and every bound set afresh (the first iteration's blocks always
  // are): survivors x K distances, within the block's rows x K, at the wide tile's rate. The
  // estimate is each survivor's own group and the groups its upper bound leaves (an upper limit
  // on what its pairs and groups would score).
  bool whole = false;
  if (per_centroid_ && wpanel_ != nullptr) {
    if (!valid) {
      whole = true;
    } else {
      std::size_t est = 0;
      for (std::size_t i = 0; i < ns; ++i) est += 1 + bits_set64(upper_open(i));
      whole = static_cast<double>(est * gs) >= kWholeAbove * static_cast<double>(ns * k);
    }
  }
  const bool pairs = valid && pair_filter_ && !whole;
  // The other groups each survivor's lower bounds do not exclude against its best so far (its
  // own group scored). Every score in g is at least L^2 - ||x||^2 - nmax - eps: g is skipped if
  // that exceeds the best score found (so none can equal it either).
  auto need_after_own = [&](std::size_t i) {
    // Per centroid: a group is needed where one of its centroids' bounds does not exclude it.
    const float* lb = pc ? s.gmin.data() + i * G : lb_.data() + (ch.first + s.rows[i]) * G;
    const double thr = static_cast<double>(s.best_s[i]) + static_cast<double>(s.bnorm[i]) + 2 * s.eps[i] + sl.nmax;
    return bounds::not_above(lb, G, bounds::root_up(thr)) & ~(std::uint64_t{1} << s.own[i]);
  };
  if (whole) {
    // Every survivor against every centroid, a wide panel at a time: the same pair scores,
    // bitwise, as the groups' (and the plain assignment's), at the wide tile's rate (per
    // centroid bounds only, so no group's bound is set: g = G is never used).
    s.list.resize(ns);
    for (std::size_t i = 0; i < ns; ++i) s.list[i] = static_cast<std::uint32_t>(i);
    const std::size_t nr = wpanel_->nr;
    for (std::size_t c0 = 0; c0 < k; c0 += nr) score_panel(wpanel_, wpacked_.data(), G, c0, std::min(k, c0 + nr), nr, 0, ns);
  } else if (pairs) {
    // Each survivor's pairs first (pair_step): kept by them, or the groups they leave open (its
    // own among them), or its own group and then the others as below; then the groups.
    // A survivor takes its pairs only where the block's distances stay within its rows times K
    // whatever they prove: they take at most K / kPairCost + 1 more than K (its own pair, pairs
    // costing at most 1 / kPairCost of their groups, then those groups and its own; K / 2 + 1 is
    // asked for), which must come from what the block saved so far: K for each row the bounds
    // pruned, K less the distances of each survivor before it (for those left to their groups,
    // the most their groups can take).
    std::int64_t saved = static_cast<std::int64_t>((b1 - b0 - ns) * k);
    const auto K = static_cast<std::int64_t>(k);
    for (std::size_t i = 0; i < ns; ++i) {
      if (saved < K / 2 + 1) {
        // Its own group, then at most the groups its upper bound leaves (need_after_own's
        // threshold is below upper_open's).
        const std::uint64_t others = upper_open(i);
        s.mode[i] = kPairOwnFirst;
        saved += K - static_cast<std::int64_t>((1 + bits_set64(others)) * gs);
        continue;
      }
      const std::uint64_t before = counts.distances;
      s.mode[i] = pair_step(i, ch.first, lab[s.rows[i]], s, counts);
      std::int64_t used = static_cast<std::int64_t>(counts.distances - before);
      if (s.mode[i] == kPairOwnFirst) used += K;
      if (s.mode[i] == kPairGroups) used += static_cast<std::int64_t>(bits_set64(s.need[i]) * gs);
      saved += K - used;
    }
    bucket([&](std::size_t i) {
      return s.mode[i] == kPairGroups ? s.need[i] : s.mode[i] == kPairOwnFirst ? std::uint64_t{1} << s.own[i] : 0;
    });
    for (std::size_t i = 0; i < ns; ++i) s.need[i] = s.mode[i] == kPairOwnFirst ? need_after_own(i) : 0;
    bucket([&](std::size_t i) { return s.need[i]; });
  } else if (valid) {
    // First every survivor's own group, then the others its bounds do not exclude.
    bucket([&](std::size_t i) { return std::uint64_t{1} << s.own[i]; });
    for (std::size_t i = 0; i < ns; ++i) s.need[i] = need_after_own(i);
    bucket([&](std::size_t i) { return s.need[i]; });
  } else {
    bucket([&](std::size_t) { return all; });
  }
  std::size_t changed = 0;
  for (std::size_t i = 0; i < ns; ++i) {
    const std::size_t r = s.rows[i], gr = ch.first + r;
    // The best score is group_min's or, for a row kept by its pairs, its own pair score: within
    // eps of the exact one as a group's would be, so the upper bound holds, but not the plain
    // kernel's bits (its dist is left stale, as a pruned row's).
    dst[r] = std::max(T(0), s.bnorm[i] + s.best_s[i]);
    const double x = s.bnorm[i], e = s.eps[i];
    ub_[gr] = bounds::up(std::sqrt(std::max(0.0, static_cast<double>(s.best_s[i]) + x + e + sl.nmax)));
    if (pairs && s.mode[i] == kPairKept) {
      ++counts.approx;  // the label stays; its pairs set their own bounds
      continue;
    }
    const std::int32_t label = s.best_j[i];
    changed += lab[r] != label;
    lab[r] = label;
    if (pc) {
      // The upper bound covers the row's own centroid.
      lb_[gr * NL + pos_of_[static_cast<std::size_t>(label)]] = std::numeric_limits<float>::infinity();
    } else {
      lb_[gr * G + s.best_g[i]] =
          bounds::down(std::sqrt(std::max(0.0, static_cast<double>(s.best_m2[i]) + x - e + sl.nmin)));
    }
  }
  return changed;
}

// The pairs of survivor i (per-centroid bounds, the label a), before any group is scored. Its
// own centroid's pair score s_a first; then every other centroid whose bound does not exclude it
// against s_a, one pair at a time. pair_scores rounds in its own order, so a pair's group_min
// score is only known within delta of its pair score (below):
//   - centroid p can reach a's group_min score only if its exact distance^2 is at most
//     s_a + delta(s_a) + ||x||^2 + 2 eps (the bounds' test against a group_min score);
//   - where s_p - delta(s_p) > s_a + delta(s_a), p's group_min score is above a's: neither lower
//     nor equal, and the label cannot go to p.
// Returns kPairKept where every listed pair is above that (the label stays a; the row's best is
// s_a), else kPairGroups with s.need[i] the groups to score whole: a's own (for the exact best
// and its bounds) and those holding a pair not proved above. Pairs of groups not scored whole
// take their bounds from their pair scores, as group_min's scores give theirs. Where the pairs
// left would cost more than their groups, kPairGroups with their groups and its own.
// kPairOwnFirst (own group, then the others, as without pairs) where s_a is not finite.
template <class T>
std::uint8_t CpuEngine<T>::pair_step(std::size_t i, std::size_t first, std::int32_t a, BoundScratch& s,
                                     BoundCounts& counts) {
  const std::size_t G = groups_, gs = group_size_, k = k_;
  const bounds::Slack& sl = slack_;
  const std::size_t gr = first + s.rows[i];
  float* lrow = lb_.data() + gr * nlb_;
  const float* gmin = s.gmin.data() + i * G;
  const T* x = s.bx.data() + i * dim_;
  const T* norms = bpacked_.data() + bnorms_at_;
  const std::uint32_t pa = pos_of_[static_cast<std::size_t>(a)];
  const std::uint64_t own = std::uint64_t{1} << (pa / gs);
  const double xs = static_cast<double>(s.bnorm[i]), e = s.eps[i];
  // Positions of the groups not excluded at tl whose own bounds fail at tl too (not a's):
  // s.pairs[0, np), in `listed` groups.
  std::size_t np = 0, ng = 0;
  std::uint64_t listed = 0;
  auto list = [&](float tl) {
    np = ng = 0;
    listed = 0;
    for (std::uint64_t m = bounds::not_above(gmin, G, tl); m; m &= m - 1) {
      const std::size_t g = static_cast<std::size_t>(__builtin_ctzll(m));
      const std::size_t c0 = g * gs, c1 = std::min(k, c0 + gs), np0 = np;
      for (std::size_t p = c0; p < c1; ++p) {
        s.pairs[np] = static_cast<std::uint32_t>(p);
        np += p != pa && !(lrow[p] > tl);
      }
      if (np > np0) {
        listed |= std::uint64_t{1} << g;
        ++ng;
      }
    }
  };
  T sa;
  table_->pair_scores(x, dim_, bcrows_.data(), norms, &pa, 1, &sa);
  counts.distances += 1;
  const double sad = static_cast<double>(sa);
  if (!(std::abs(sad) < 1e30)) return kPairOwnFirst;  // not finite: as without pairs
  // group_min's score of a pair is within delta(its pair score) of that pair score: both use
  // the same norm ||c||^2, their dot products differ by at most 2 gamma_{2D+8} |x||c| (each
  // within gamma_{2D+8} |x||c| of the exact one, fused or not, in any order of at most 2D + 8
  // roundings a term), and each final fma rounds once.
  const double rx = std::sqrt(std::max(0.0, xs) / (1.0 - bounds::gamma<T>(2 * dim_ + 4))) * (1 + 0x1p-40);
  const double g4 = 4 * bounds::gamma<T>(2 * dim_ + 8) * rx * sl.cmax;
  const double u2 = 2.0001 * std::ldexp(1.0, -std::numeric_limits<T>::digits);
  auto delta = [&](double v) { return (g4 + u2 * std::abs(v)) * (1 + 0x1p-20); };
  const double sa_up = sad + delta(sad);  // at least a's group_min score
  // p can reach it only if its exact distance^2 is within 2 eps of sa_up + ||x||^2 (the bounds'
  // test against a group_min score, as need_after_own takes it).
  list(bounds::root_up(sa_up + xs + 2 * e + sl.nmax));
  s.best_s[i] = sa;
  if (np == 0) return kPairKept;
  s.best_s[i] = std::numeric_limits<T>::infinity();  // unless the pairs prove it, the groups find the best
  if (np * kPairCost > ng * gs) {
    s.need[i] = listed | own;
    return kPairGroups;
  }
  table_->pair_scores(x, dim_, bcrows_.data(), norms, s.pairs.data(), np, s.pscores.data());
  counts.distances += np;
  std::uint64_t still = 0;
  for (std::size_t q = 0; q < np; ++q) {
    // p's group_min score is above a's where its pair score less delta is above sa_up (with the
    // double arithmetic's own rounding to spare). A NaN score proves nothing: its group is scored.
    const double v = static_cast<double>(s.pscores[q]);
    if (!(v - delta(v) > sa_up + (std::abs(v) + std::abs(sa_up)) * 0x1p-50)) {
      still |= std::uint64_t{1} << (s.pairs[q] / gs);
    }
  }
  const std::uint64_t whole = still != 0 ? (still | own) : 0;
  // Every pair's bound in one call (the same bits as one at a time), then those of the groups
  // not scored whole put in place.
  table_->bounds_from_scores(s.pscores.data(), np, xs - e + sl.nmin, s.plb.data());
  for (std::size_t q = 0; q < np; ++q) {
    const std::size_t p = s.pairs[q];
    if (!((whole >> (p / gs)) & 1)) lrow[p] = s.plb[q];
  }
  if (whole == 0) {
    s.best_s[i] = sa;
    return kPairKept;
  }
  s.need[i] = whole;
  return kPairGroups;
}

template bool CpuEngine<float>::begin_run(Prune, std::size_t);
template void CpuEngine<float>::prepare_scratch();
template CpuEngine<float>::BoundScratch& CpuEngine<float>::bound_scratch();
template std::size_t CpuEngine<float>::bound_block_rows() const;
template void CpuEngine<float>::prepare_bounds(const double*, std::size_t);
template void CpuEngine<float>::make_groups(const double*, std::size_t);
template void CpuEngine<float>::take_rmax();
template std::size_t CpuEngine<float>::bounded_chunk(const Chunk<float>&, std::size_t, std::size_t, std::int32_t*,
                                                     float*);
template std::size_t CpuEngine<float>::bounded_rows(const Chunk<float>&, std::size_t, std::size_t, std::int32_t*,
                                                    float*, BoundScratch&, BoundCounts&);
template std::uint8_t CpuEngine<float>::pair_step(std::size_t, std::size_t, std::int32_t, BoundScratch&,
                                                   BoundCounts&);
template std::size_t CpuEngine<float>::bounded_block(const Chunk<float>&, std::size_t, std::size_t, std::int32_t*,
                                                     float*, BoundScratch&, BoundCounts&);
template bool CpuEngine<double>::begin_run(Prune, std::size_t);
template void CpuEngine<double>::prepare_scratch();
template CpuEngine<double>::BoundScratch& CpuEngine<double>::bound_scratch();
template std::size_t CpuEngine<double>::bound_block_rows() const;
template void CpuEngine<double>::prepare_bounds(const double*, std::size_t);
template void CpuEngine<double>::make_groups(const double*, std::size_t);
template void CpuEngine<double>::take_rmax();
template std::size_t CpuEngine<double>::bounded_chunk(const Chunk<double>&, std::size_t, std::size_t, std::int32_t*,
                                                      double*);
template std::size_t CpuEngine<double>::bounded_rows(const Chunk<double>&, std::size_t, std::size_t, std::int32_t*,
                                                     double*, BoundScratch&, BoundCounts&);
template std::uint8_t CpuEngine<double>::pair_step(std::size_t, std::size_t, std::int32_t, BoundScratch&,
                                                    BoundCounts&);
template std::size_t CpuEngine<double>::bounded_block(const Chunk<double>&, std::size_t, std::size_t, std::int32_t*,
                                                      double*, BoundScratch&, BoundCounts&);

}  // namespace flashkm::detail
