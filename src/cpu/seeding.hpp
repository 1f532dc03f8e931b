// Private header: greedy k-means++ with triangle-inequality bounds (Raff, "Exact Acceleration of
// K-Means++ and K-Means||", IJCAI 2021), bitwise the plain seeding (docs/KERNELS.md, "Bounded
// seeding").
//
// Each row keeps its closest squared distance cl (as the one-centroid kernel computed it) and
// the centre `owner` it was measured to. A candidate or new centre c can lower cl only if
// ||c - owner|| < 2 ||x - owner||; the thresholds below turn that into a test on cl alone,
// with every float rounding of the kernels accounted for, so that a skipped row's computed
// distance would provably have been >= cl (and min(cl, d) = cl bit for bit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cpu/kernel_table.hpp"
#include "cpu/sketch.hpp"

namespace flashkm::detail {

/// thr[a * m + t]: a row owned by centre a whose closest distance is <= thr cannot be brought
/// closer by candidate t (its computed distance to t is >= its closest distance). Centres and
/// candidates are given as the kernels subtract them (T, count x dim and m x dim).
template <class T>
void seed_thresholds(const KernelTable<T>& table, std::size_t dim, const T* centres, std::size_t count,
                     const T* cands, std::size_t m, std::vector<double>& thr);

/// The norms of rows [r0, r1) centred as the kernels centre them, into out[0 .. r1 - r0), and of
/// centres (pts over them with a zero shift): the norm filter's inputs.
template <class T>
void seed_norms(const PointsRef<T>& pts, std::size_t r0, std::size_t r1, double* out);

/// The rows' seeding state, indexed like the rows of the pass (w may be null).
template <class T>
struct SeedRows {
  const T* closest;
  const std::int32_t* owner;
  const double* w;
  const double* norm;
};

/// One step's candidates (m x dim, as the kernels subtract them) and, when it tests bounds, their
/// thresholds (thr[a * m + t], seed_thresholds) and norms; otherwise every pair is scored.
template <class T>
struct SeedStep {
  const T* cands;
  std::size_t m;
  bool bounded;
  const double* thr;
  const double* cand_norm;
  /// With a sketch (bounded steps over rows in memory, pts numbering the whole data set), the
  /// sketch filter (kernel_table.hpp, sketch_mask) replaces the threshold and norm tests.
  const RowSketch* sketch = nullptr;
  const CandSketch* cand_sketch = nullptr;
};

/// A row that candidate `cand` brings closer: its distance as sqdist_one (lower_closest)
/// measures it, below the row's closest distance.
template <class T>
struct SeedLowering {
  std::uint32_t row;  // from the block's first row
  std::uint32_t cand;
  T dist;
};

/// Where a block's lowerings go: at most cap of them, else overflow (and out is cleared).
template <class T>
struct SeedRecords {
  std::vector<SeedLowering<T>>* out;
  std::size_t first;  // the block's first row, as pts numbers them
  std::size_t cap;
  bool overflow = false;
};

/// Adds to p[t] (t < m), row by row in order over rows [r0, r1) of pts, w_r * min(cl_r, d_rt)
/// exactly as the plain potentials do, computing d_rt (sqdist_few) only where neither the
/// threshold (cl_r > thr) nor the norm filter (| ‖y_r‖ - ‖c_t‖ | too large) proves d_rt >= cl_r,
/// or, with a sketch, where the sketch filter does not prove it.
/// With rec, also records every pair whose distance is below cl_r (sqdist_few's distances are
/// bitwise sqdist_one's, as lower_closest takes them). Returns distances computed.
template <class T>
std::uint64_t seed_block_potentials(const KernelTable<T>& table, const PointsRef<T>& pts, std::size_t r0,
                                    std::size_t r1, const SeedRows<T>& rows, const SeedStep<T>& step, double* p,
                                    SeedRecords<T>* rec);

/// closest_r = min(closest_r, d(x_r, c)) as sqdist_one computes it, over rows [r0, r1), where
/// the same two tests do not prove d >= closest_r (centre_norm < 0: the threshold test alone);
/// a row brought strictly closer gets owner `index`. Returns distances computed.
template <class T>
std::uint64_t seed_lower_rows(const KernelTable<T>& table, const PointsRef<T>& pts, std::size_t r0,
                              std::size_t r1, const double* row_norm, const T* centre, double centre_norm,
                              const double* thr, std::int32_t index, T* closest, std::int32_t* owner);

/// When seeding tests bounds: while they skip enough. After a window of kSteps bounded steps
/// that computed more than kGiveUp of their pairs (overlapping data in high dimension, where the
/// triangle inequality proves little), kRest steps run with every distance, then bounds are
/// tried again (they tighten as centres are added). The centres are the same either way.
class SeedWindow {
 public:
  bool bounded_next() {
    if (rest_ == 0) return true;
    --rest_;
    return false;
  }
  void record(std::uint64_t computed, std::uint64_t pairs) {
    computed_ += static_cast<double>(computed);
    pairs_ += static_cast<double>(pairs);
    if (++steps_ < kSteps) return;
    if (computed_ > kGiveUp * pairs_) rest_ = kRest;
    steps_ = 0;
    computed_ = pairs_ = 0;
  }

 private:
  static constexpr int kSteps = 4;
  static constexpr double kGiveUp = 0.85;
  static constexpr int kRest = 64;
  int rest_ = 0;
  int steps_ = 0;
  double computed_ = 0, pairs_ = 0;
};

}  // namespace flashkm::detail
