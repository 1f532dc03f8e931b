// Private header of the CPU room: the CPU engine, CpuEngine<T> (FlashAssign + Sort-Inverse Update
// on OpenMP threads, over a matrix in memory or the chunks of a RowSource). Its member functions
// are defined one concern per file, BLIS style:
//   cpu_engine.cc   construction, the plain Engine overrides, the seeding glue, the factories
//   cpu_assign.cc   FlashAssign's driver: rows to the panel kernels (or AMX) in parallel tasks
//   cpu_bounded.cc  the bounded assignment: Yinyang groups and per-row bounds, survivors scored
//   cpu_fused.cc    the fused step: assignment and update per tile (small K)
//   cpu_update.cc   the Sort-Inverse Update, the grouped step, and the float64 statistics
// rows.hpp walks the data in chunks; run_state.hpp keeps the run's per-row state (as the sparse
// engine does); cpu_targets.hpp picks the kernel table. The templates that
// take a lambda (for_each_chunk, for_row_tasks, block_sums) are defined here, so that every file
// inlines its own.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "core/engine.hpp"
#include "cpu/aligned_buffer.hpp"
#include "cpu/amx.hpp"
#include "cpu/assign_provider.hpp"
#include "cpu/bounds.hpp"
#include "cpu/groups.hpp"
#include "cpu/kernel_table.hpp"
#include "cpu/rows.hpp"
#include "cpu/run_state.hpp"
#include "cpu/seeding.hpp"
#include "cpu/sketch.hpp"
#include "flashkm/matrix_view.hpp"

namespace flashkm::detail {

template <class T>
class CpuEngine final : public Engine<T> {
 public:
  // amx_mode: 0, or the 16-bit type of the rows for FlashAssign on AMX tiles or AVX-512-BF16
  // (half_kernel) with float32 re-scoring (1 bfloat16, 2 float16; float engines only).
  CpuEngine(Rows<T> rows, std::span<const double> weights, int n_threads, const KernelTable<T>* table,
            std::size_t row_offset, int amx_mode = 0, HalfKernel half_kernel = HalfKernel::kTiles);

  // The Engine interface (core/engine.hpp); defined in cpu_engine.cc unless another file is named.
  std::size_t rows() const override;
  std::size_t cols() const override;
  const double* shift() const override;
  const char* target() const override;
  const double* weights() const override;
  const double* mean() const override;
  void set_mean(const double* mean) override;
  std::vector<FarPoint> farthest(std::size_t m) override;
  void row_centred(std::size_t i, double* out) override;
  double mean_variance() override;  // cpu_update.cc
  void set_centroids(const double* centroids, std::size_t k) override;
  double total_weight() override;
  /// The metric, once, by the factory before any other call (core/engine.hpp): the
  /// inner-product metrics take the rows uncentred and argmax x.c; cosine's Lloyd steps weigh
  /// the rows by w / ||x||.
  void fix_metric(Metric metric);
  Metric metric() const override { return metric_; }
  std::size_t assign(std::int32_t* labels, T* dist) override;  // cpu_assign.cc
  void lower_closest(const double* centroid, T* closest) override;
  void potentials(const double* candidates, std::size_t m, const T* closest, double* pot) override;
  double seed_start(const double* centre, std::size_t k) override;
  void set_seed_sketch(bool on) override { seed_sketch_allowed_ = on; }
  std::vector<std::size_t> seed_draw(const std::vector<double>& targets) override;
  void seed_potentials(const double* candidates, std::size_t m, double* pot) override;
  void seed_keep(std::size_t t) override;
  SeedPick seed_first(std::uint64_t key) override;
  void seed_potential(ExactSum& acc) override;
  std::vector<double> seed_oversample(double l, double psi, std::uint64_t key) override;
  void seed_add_many(const double* centres, std::size_t m) override;
  void seed_owner_weights(std::vector<ExactSum>& acc) override;
  void column_sums(std::vector<ExactSum>& acc) override;
  std::uint64_t seed_distances() const override;
  const char* update_path() const override;
  void seed_end() override;
  void sqdistances(T* out) override;  // cpu_assign.cc
  double update(const std::int32_t* labels, const double* centroids, std::size_t k, double* sums,
                double* wsums) override;  // cpu_update.cc
  double assign_update(const double* centroids, std::size_t k, double* sums, double* wsums,
                       std::size_t* changed) override;  // cpu_update.cc
  const std::int32_t* labels() const override { return run_.labels(); }
  std::uint64_t last_distances() const override;
  bool begin_run(Prune prune, std::size_t k) override;  // cpu_bounded.cc

 private:
  // Each row's squared norm, in float64, into out (cosine's Lloyd weights, RunState::begin).
  void row_sq_norms(double* out);

  // The panel width the kernels use for k centroids (both panels follow one contract).
  const PanelKernels<T>* panel_for(std::size_t k) const { return k <= table_->narrow.nr ? &table_->narrow : &table_->wide; }

  // ---- Chunks and parallel row tasks ----

  template <class Fn>
  void for_each_chunk(Fn&& fn) {
    data_.for_each_chunk(granule_, [&](MatrixView<T> x, std::size_t first) {
      fn(Chunk<T>{x, first, PointsRef<T>{x.data, x.stride, dim_, shift_t_.data()}});
    });
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

  // ---- Seeding glue (cpu_engine.cc) ----
  void lower_overflowed(const T* c, std::int32_t index);
  PointsRef<T> centres_ref(const T* centres);

  // ---- FlashAssign (cpu_assign.cc) ----
  std::size_t assign_chunk(const Chunk<T>& ch, std::size_t r0, std::size_t r1, std::int32_t* labels, T* dist);
  // The packed centroids' squared norms (after the panels; see kernel_table.hpp).
  T* packed_norms() { return packed_.data() + (k_ + panel_->nr - 1) / panel_->nr * panel_->nr * dim_; }
  std::size_t assign_rows(const PointsRef<T>& pts, std::size_t a, std::size_t b, std::int32_t* lab, T* dst);

  // ---- Bounded assignment (cpu_bounded.cc; docs/KERNELS.md, "Bounded assignment") ----

  // Most lower bounds kept per row (Yinyang groups).
  static constexpr std::size_t kMaxGroups = 64;  // <= 64: a row's groups to score are one uint64_t

  struct BoundCounts {
    std::uint64_t distances = 0;
    std::uint64_t pruned = 0;
    std::uint64_t approx = 0;  // survivors kept by pair scores: their dist is not the plain kernel's
  };

  // Per-thread scratch of the bounded assignment.
  struct BoundScratch {
    std::vector<std::uint32_t> rows;  // the block's survivors (chunk rows, ascending)
    std::vector<std::uint32_t> own;   // per survivor: its label's group (G where none yet)
    std::vector<std::uint32_t> list;  // the survivors each group scores, group after group
    std::vector<std::uint32_t> start, fill;  // per group: where its survivors start in list
    std::vector<std::uint64_t> need;  // per survivor: the other groups it scores (bit g)
    std::vector<std::uint32_t> best_g;
    std::vector<T> bx, bnorm;         // the survivors packed (centred, row-major) and their norms
    std::vector<const T*> xr;          // a sliver's packed rows, by pointer, for group_min
    std::vector<T> min1, min2, best_s, best_m2;
    std::vector<T> scores;            // per-centroid bounds: a group's scores, group_size_ per row
    std::vector<float> gmin;          // per-centroid bounds: per survivor, each group's smallest
    std::vector<std::uint32_t> pairs;  // pair filter: one survivor's listed positions
    std::vector<T> pscores;            //   and their pair_scores
    std::vector<std::uint8_t> mode;    // per survivor: pair_step's outcome
    std::vector<float> plb;            //   the listed pairs' bounds
    std::vector<std::int32_t> idx1, best_j;
    std::vector<double> eps;
  };

  void prepare_scratch();
  BoundScratch& bound_scratch();
  std::vector<BoundScratch> bscratch_;  // one per thread, kept across iterations
  std::size_t bound_block_rows() const;
  void prepare_bounds(const double* centroids, std::size_t k);
  void make_groups(const double* c, std::size_t k);
  void take_rmax();
  std::size_t bounded_chunk(const Chunk<T>& ch, std::size_t r0, std::size_t r1, std::int32_t* labels, T* dist);
  std::size_t bounded_rows(const Chunk<T>& ch, std::size_t r0, std::size_t r1, std::int32_t* lab, T* dst,
                           BoundScratch& s, BoundCounts& c);
  std::size_t bounded_block(const Chunk<T>& ch, std::size_t b0, std::size_t b1, std::int32_t* lab, T* dst,
                            BoundScratch& s, BoundCounts& counts);
  // pair_step's outcomes for a survivor.
  static constexpr std::uint8_t kPairKept = 0, kPairGroups = 1, kPairOwnFirst = 2;
  std::uint8_t pair_step(std::size_t i, std::size_t first, std::int32_t a, BoundScratch& s, BoundCounts& counts);

  // ---- The fused step (cpu_fused.cc) ----
  bool fused_fits(std::size_t k) const;
  std::size_t fused_tile(std::size_t k) const;
  // accumulate = false: assignment only (the incremental update follows).
  void assign_update_tiled(const Chunk<T>& ch, std::size_t k, std::int32_t* labels, T* dist, double* sums,
                           double* wsums, double* qsums, double* inertia, std::size_t* changed, bool accumulate);

  // ---- Sort-Inverse Update and float64 statistics (cpu_update.cc) ----
  void begin_sums(const double* centroids, std::size_t k, double* sums, double* wsums);
  void end_sums(std::size_t k, double* sums, const double* wsums) const;
  std::size_t group_rows() const;
  void update_group(const Chunk<T>& ch, std::size_t r0, std::size_t r1, const std::int32_t* labels,
                    std::size_t k, double* sums, double* wsums, double* qsums, double* inertia);
  void sort_by_label(const std::int32_t* labels, std::size_t n, std::size_t k, std::uint32_t* perm,
                     std::uint64_t* offsets);
  void compute_mean();

  // ---- Incremental update (cpu_update.cc; docs/KERNELS.md, "Incremental update") ----
  // Full updates every this many steps at most, so that rounding cannot pile up.
  static constexpr int kIncRefresh = 32;
  bool incremental_next(std::size_t k) const;
  void inc_refresh(const double* centroids, std::size_t k, const double* sums, const double* wsums,
                   const double* qsums, const std::int32_t* labels);
  void inc_apply(const Chunk<T>& ch, const std::int32_t* labels, std::size_t k);
  void inc_apply_clusters(const Chunk<T>& ch, std::size_t k);
  bool inc_apply_rows(const Chunk<T>& ch, const std::int32_t* labels, std::size_t k, std::size_t a, std::size_t b,
                      std::size_t cap);
  bool inc_degenerate(std::size_t k) const;
  double inc_result(const double* centroids, std::size_t k, double* sums, double* wsums) const;

  int amx_mode_;  // 16-bit rows on AMX tiles / AVX-512-BF16 (1 bfloat16, 2 float16), else 0
  Rows<T> data_;
  std::size_t row_offset_;  // index of row 0 in the whole data set (shards), for messages
  std::size_t n_;
  std::size_t dim_;
  std::size_t row_bytes_;
  std::size_t granule_;  // rows per update super-block; a RowSource's chunks are multiples
  const double* weights_;       // the sample weights (seeding, total_weight, weights())
  // The run's per-row state (begin_run): each row's label and squared distance to its
  // centroid, and the Lloyd steps' weights (weights_, or cosine's w / ||x||).
  RunState<T> run_;
  Metric metric_ = Metric::kEuclidean;
  bool centre_on_mean_ = true;  // Euclidean: shift_ is the means rounded to T; else zero
  int threads_;
  const KernelTable<T>* table_;
  std::unique_ptr<AssignProvider<T>> provider_;  // FlashAssign: the panels, or AMX for 16-bit rows
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
  std::size_t group_size_ = 1;  // centroids per group (whole panels of bpanel_)
  // Lower bounds per row: one per group (Yinyang), or one per centroid (Elkan, in packed
  // position order) where they fit within a row of X; survivors are scored by whole groups
  // either way.
  bool per_centroid_ = false;
  // Per-centroid bounds: a survivor's other centroids whose bounds fail are first scored one
  // pair at a time (pair_scores, in the target's own order), and only groups holding a pair
  // that could reach the row's best are scored whole (FLASHKM_PRUNE_PAIRS=0: whole groups).
  bool pair_filter_ = false;
  std::vector<T> bcrows_;           // pair filter: the centroids by packed position, row-major
  std::size_t bnorms_at_ = 0;       // where bpacked_ holds the positions' squared norms
  std::size_t nlb_ = 1;
  const PanelKernels<T>* bpanel_ = nullptr;  // the panel the bounded path packs and scores groups with
  std::vector<float> ub_, lb_;
  std::vector<T> cur_c_, prev_c_;  // centroids as the kernels multiply them, k x dim
  bool grouped_ = false;           // order_ holds this run's groups
  bool auto_prune_ = false;        // prune = auto: may give up within the run
  // prune = auto starts the bounds only after an iteration moved at most kStartMoved of the
  // rows (cpu_bounded.cc, prepare_bounds; inc_last_moved_ is the last assign_update's count).
  bool bounds_started_ = false;
  int bounded_iters_ = 0;          // iterations of this run that started from valid bounds
  AutoPrune judge_;                // auto's judgement of their fractions of N*K distances computed
  std::vector<std::uint32_t> order_;   // packed position -> centroid index (groups contiguous)
  std::vector<std::uint32_t> pos_of_;  // centroid index -> packed position
  AlignedBuffer<T> bpacked_;           // the centroids packed in order_
  std::vector<T> ids_;                 // centroid index of each packed position, as T
  // Per-centroid bounds with groups narrower than the wide panel: a block scored whole (the
  // first iteration's, those whose bounds leave nearly everything) is scored with the wide
  // panel, in the same position order (wpacked_; ids_ serves both), a wide panel at a time.
  const PanelKernels<T>* wpanel_ = nullptr;
  AlignedBuffer<T> wpacked_;
  std::vector<double> drift_, gdrift_;
  std::vector<float> gdrift_up_;  // gdrift_ rounded up to float, for bounds::lower_step
  std::vector<float> cdrift_up_;  // per-centroid bounds: each position's drift, rounded up
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
  // The rows' 8-bit sketch (cpu/sketch.hpp) when the seeding filters with it (rows in memory,
  // sketch_pays), and the step's candidates sketched.
  RowSketch seed_sketch_;
  CandSketch seed_csketch_;
  bool seed_sketch_allowed_ = true;  // KMeansOptions::seed_sketch
  bool seed_sketch_on_ = false;
  bool seed_step_sketch_ = false;
  // k-means||'s rounds (seed_add_many): filtered by the sketch while that pays (off after a
  // round that computed more than a quarter of its pairs).
  bool seed_many_sketch_ = true;
  bool seed_add_many_sketched(const double* centres, std::size_t m, std::int32_t base, bool judge);

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
  std::vector<double> part_q_;
  std::vector<double> qsums_;  // per cluster: sum of w ||x - c||^2 of the last full update

  // Incremental update: per cluster, over the rows inc_labels_ puts in it, the weight W, the
  // sum S of w (x - shift), the reference point r (the centroid of the last full update),
  // U = sum of w (x - shift - r) and Q = sum of w ||x - shift - r||^2, and the number of members
  // with positive weight (at 0 the cluster's sums are exactly 0). Valid while inc_valid_; a step
  // applies the rows whose labels moved (each cluster's in row order), so it reads those rows only.
  bool inc_valid_ = false;
  std::size_t inc_k_ = 0;
  int inc_steps_ = 0;               // incremental steps since the last full update
  std::size_t inc_last_moved_ = 0;  // labels changed by the last assign_update (n at a run's start)
  std::size_t inc_move_cap_ = 0;    // FLASHKM_PRUNE_MOVE_CAP, read by begin_run (0: none)
  std::vector<std::int32_t> inc_labels_;
  std::vector<double> inc_s_, inc_u_, inc_r_, inc_q_, inc_w_;  // S, U, Q, W: values, then their errors
  std::vector<std::uint64_t> inc_n_;
  std::vector<std::uint64_t> ev_cnt_;  // inc_apply: per task and cluster, its events' count, then where they start
  std::vector<std::uint64_t> ev_row_, ev_off_;  // this chunk's moves, (row << 1) | removal, by cluster
};

}  // namespace flashkm::detail
