// Options for fit/predict and the per-iteration statistics handed to progress callbacks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <variant>

#include "flashkm/matrix_view.hpp"

namespace flashkm {

/// How the initial centroids are chosen.
enum class InitMethod {
  kMeansPlusPlus,  ///< greedy k-means++ as scikit-learn does it (2 + floor(ln k) trials per step)
  kRandom,         ///< k distinct data points (weighted by sample_weight when given)
  kExplicit,       ///< the caller's `init_centroids`
  kMeansParallel,  ///< k-means|| (Bahmani et al. 2012): `init_rounds` rounds each drawing about
                   ///< init_oversampling * K rows, weighted by the rows nearest them, then
                   ///< weighted greedy k-means++ on them
};

/// How points are compared with centroids.
enum class Metric {
  kEuclidean,  ///< squared Euclidean distance; the update is the (weighted) mean: Lloyd
  kCosine,     ///< spherical k-means: the largest cosine similarity wins; the update is the
               ///< direction of the mean of the L2-normalised rows; centroids have unit norm.
               ///< All-zero rows have similarity 0 to every centroid: label 0 (the tie rule),
               ///< no pull on any centroid, and 1 towards the inertia.
  kDot,        ///< the largest inner product x.c wins; the update is the plain mean (centroids
               ///< are not normalised, unlike Flash-KMeans' dot variant, so centroids of large
               ///< norm attract many points and clusters empty easily)
};
// Under kCosine and kDot an empty cluster keeps its centroid (no relocation to far points).

/// Whether Lloyd iterations skip the distances that triangle-inequality bounds prove useless
/// (docs/KERNELS.md, "Bounded assignment"). Pruning changes the speed, never the answer: labels,
/// centroids, inertia, n_iter and every statistic but `distances` and `seconds` are bitwise
/// those of the unpruned run.
enum class Prune {
  kAuto,  ///< prune where it is possible, the bounds fit in memory (at most X's own size) and a
          ///< row's distances cost at least kAutoPruneMinWork multiply-adds (K x D), not 16-bit
          ///< input on AMX tiles; start the bounds after the first iteration that changed
          ///< at most 5% of the labels, and stop within a run where they do not pay
  kOn,    ///< always prune (Euclidean and cosine; InvalidArgument for Metric::kDot)
  kOff,   ///< compute every point-centroid distance in every iteration
};

/// Prune::kAuto leaves rows with K x D below this unpruned: there a row's bounds upkeep costs
/// about as much as all its distances (docs/KERNELS.md, "Bounded assignment").
inline constexpr std::size_t kAutoPruneMinWork = 2048;

/// Why a run stopped.
enum class StopReason {
  kTolerance,  ///< sum of squared centroid shifts <= tol * mean per-feature variance of X
  kStrict,     ///< no label changed in an iteration
  kMaxIter,    ///< max_iter iterations were run
  kCallback,   ///< the progress callback asked to stop
};

/// The reason's name, as the command's --json, the report and Python's stop_reason spell it:
/// "tolerance", "strict", "max_iter" or "callback".
constexpr const char* to_string(StopReason r) {
  switch (r) {
    case StopReason::kTolerance: return "tolerance";
    case StopReason::kStrict: return "strict";
    case StopReason::kMaxIter: return "max_iter";
    case StopReason::kCallback: return "callback";
  }
  return "unknown";
}

/// What happened in one Lloyd iteration.
struct IterationStats {
  int iteration = 0;              ///< 1-based
  double inertia = 0;             ///< sum of w*||x - c||^2 against the centroids used to assign
                                  ///< (cosine: sum w (1 - cos); dot: -sum w x.c)
  double center_shift = 0;        ///< sum over clusters of ||c_new - c_old||^2
  std::size_t labels_changed = 0; ///< points whose label differs from the previous iteration
  std::size_t empty_relocated = 0;///< empty clusters moved to far points in this iteration
  double seconds = 0;             ///< wall time of the iteration
  int init_run = 0;               ///< which of the n_init runs this iteration belongs to
  std::size_t member = 0;         ///< which batch member (fit_batch); 0 for fit
  std::uint64_t distances = 0;    ///< point-centroid distances computed by the assignment:
                                  ///< N * K without pruning, fewer where bounds skip them
};

/// Called after every iteration; return false to stop the run (StopReason::kCallback).
using IterationCallback = std::function<bool(const IterationStats&)>;

/// Seeding's progress, reported after every step of a phase (KMeansOptions::seed_callback).
struct SeedStats {
  const char* phase = "";         ///< "k-means++" (steps: centres chosen) or "k-means||"
                                  ///< (steps: rounds drawn; its k-means++ on the drawn rows follows)
  std::size_t done = 0;           ///< steps of the phase done
  std::size_t total = 0;          ///< steps the phase takes
  std::uint64_t distances = 0;    ///< point-centre distances computed in the phase so far
  double seconds = 0;             ///< since the phase began
  double seconds_left = 0;        ///< estimate for the rest of the phase (its mean step so far)
  int init_run = 0;               ///< which of the n_init runs is seeding
};

/// Called after every seeding step (cannot stop the fit).
using SeedCallback = std::function<void(const SeedStats&)>;

/// Explicit initial centroids, K x D, in either float type.
using CentroidsView = std::variant<MatrixView<double>, MatrixView<float>>;

/// Options of flashkm::fit. Defaults follow scikit-learn's KMeans where it has the option.
struct KMeansOptions {
  std::size_t n_clusters = 8;          ///< K, 1 <= K <= N
  InitMethod init = InitMethod::kMeansPlusPlus;
  CentroidsView init_centroids{};      ///< used when init == kExplicit; must be K x D
  int n_init = 1;                      ///< runs from different seeds; the lowest inertia wins.
                                       ///< Ignored (one run) for explicit centroids.
  int max_iter = 300;                  ///< >= 1
  double tol = 1e-4;                   ///< relative to the mean per-feature variance of X; >= 0
  std::uint64_t seed = 0;              ///< seeds k-means++, k-means|| and random init
  double init_oversampling = 2.0;      ///< k-means||: rows drawn per round, as a multiple of K (> 0)
  int init_rounds = 5;                 ///< k-means||: rounds of drawing (>= 1)
  int n_threads = 0;                   ///< 0 = all cores; results do not depend on it
  std::span<const double> sample_weight{};  ///< empty = all ones; else N values >= 0, not all 0
  IterationCallback callback{};        ///< optional progress callback
  SeedCallback seed_callback{};        ///< optional seeding progress callback
  std::string target{};                ///< SIMD target to force ("" = best available, or the
                                       ///< FLASHKM_TARGET environment variable when set)
  Prune prune = Prune::kAuto;          ///< bounded assignment (see Prune); never changes the result
  bool seed_sketch = true;             ///< seeding (k-means++, k-means||) may keep an 8-bit copy
                                       ///< of the rows (rows in memory, D >= 16: N * D bytes plus
                                       ///< 12 per row) to skip most distances; false saves that
                                       ///< memory. Never changes the result
  Metric metric = Metric::kEuclidean;  ///< cosine / dot: see Metric. The inertia becomes
                                       ///< sum w (1 - cos) and -sum w x.c; tol is absolute on
                                       ///< the (unit) centroids for cosine
};

/// Options of predict / transform / score.
struct PredictOptions {
  int n_threads = 0;
  std::string target{};
  std::span<const double> sample_weight{};  ///< used by score only
  Metric metric = Metric::kEuclidean;       ///< predict / score / transform in this metric
};

}  // namespace flashkm
