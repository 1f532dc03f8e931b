// Private header: the interface the Lloyd driver uses to talk to an engine (CPU today; CUDA and
// MPI later). The driver is written once against it (DESIGN.md, "Layers and rooms").
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "core/exact_sum.hpp"
#include "flashkm/options.hpp"

namespace flashkm::detail {

class SeedProgress;  // core/init.hpp

/// A point offered to an empty cluster: farthest from its centroid first.
struct FarPoint {
  double dist = 0;            // squared distance to its centroid
  std::uint64_t index = 0;    // row index in the whole data set
  std::int32_t label = 0;
  double weight = 1;
  std::vector<double> row;    // the row minus shift()
};

/// k-means||'s first centre as one engine (or shard) proposes it.
struct SeedPick {
  double key = -1.0 / 0.0;    // log(u) / w: the largest wins (-inf: no row with positive weight)
  std::uint64_t index = 0;    // row index in the whole data set
  std::vector<double> row;    // the row minus shift()
};

/// An engine owns a prepared data set (validated, centred on `shift()`) and runs the two
/// Lloyd kernels over it. Its data, dtype, sample weights and metric are fixed when the
/// backend's factory makes it (core/backend.hpp): under the inner-product metrics (cosine,
/// dot) the rows are not centred and the label is argmax x.c (the squared centroid norms left
/// out of the score); cosine's Lloyd steps (a run's assign_update, and update after a
/// begin_run) weigh each row by w / ||x|| (the mean of the normalised rows), its seeding and
/// total_weight() by w. Centroids cross this interface centred on shift(), in float64,
/// row-major k x dim. Every result must be independent of the engine's thread count.
template <class T>
class Engine {
 public:
  virtual ~Engine() = default;

  /// Rows this engine holds (its labels are this long); a distributed engine holds one shard of
  /// total_rows().
  virtual std::size_t rows() const = 0;
  virtual std::size_t total_rows() const { return rows(); }
  virtual std::size_t cols() const = 0;
  /// The centring vector: X's column means rounded to T (so that x - shift is exact in T for
  /// data with a large common offset), as float64; zero for the inner-product metrics' engines
  /// and for sparse rows.
  virtual const double* shift() const = 0;
  /// Mean over features of the (unweighted) variance of each column of X.
  virtual double mean_variance() = 0;
  /// Name of the SIMD target whose kernels run.
  virtual const char* target() const = 0;
  /// Sample weights, or nullptr for all ones.
  virtual const double* weights() const = 0;
  /// Row i of X minus shift(), in float64 (a random read when X is streamed).
  virtual void row_centred(std::size_t i, double* out) = 0;
  /// X's column means (float64), and other means to take instead (a distributed engine's global
  /// ones, set once while it is made): mean_variance() is taken about them, and a Euclidean
  /// engine's shift() becomes them rounded to T (the inner-product metrics' engines take the
  /// rows as given: shift() stays zero).
  virtual const double* mean() const = 0;
  virtual void set_mean(const double* mean) = 0;

  /// The m points of the whole data set farthest from their centroids (ties: lowest index),
  /// farthest first, by the labels and distances of the run's last assign_update.
  virtual std::vector<FarPoint> farthest(std::size_t m) = 0;
  /// Sum of the sample weights of the whole data set (rows if unweighted), in float64.
  virtual double total_weight() = 0;
  /// The metric the engine was made for.
  virtual Metric metric() const = 0;
  /// A decision every part of a distributed engine takes together (all must say yes).
  virtual bool agree(bool yes) { return yes; }
  /// Initial centroids (centred) when the engine chooses them itself (a distributed engine);
  /// empty to let the driver's own initialisation run. progress (may be null) hears the
  /// seeding's steps as the driver's own would.
  virtual std::vector<double> initial_centroids(InitMethod, std::size_t, std::mt19937_64&, SeedProgress*) { return {}; }
  /// The seeding this engine runs for `method` and k centroids: `method` itself, but a
  /// distributed engine seeds large-K k-means++ with k-means|| (its k-means++ runs on a
  /// gathered sample that grows with k).
  virtual InitMethod seeding_for(InitMethod method, std::size_t) const { return method; }

  /// Starts a Lloyd run with k centroids: every point's label is unset (-1) and its pruning
  /// bounds are forgotten. The engine keeps each point's state of the run (label, distance to
  /// its centroid, bounds, the incremental update's per-cluster sums) across its assign_update
  /// calls: a step sends K x D centroids and receives O(K x D) results, never N-long arrays (so
  /// a GPU or distributed engine moves only those across its boundary). With `prune` on (or auto and
  /// the engine finds it worthwhile) the following assign_update calls of the run skip the
  /// distances their bounds prove useless, with bitwise the same results. Returns whether
  /// pruning is on. Must be called before the run's first assign_update.
  virtual bool begin_run(Prune prune, std::size_t k) = 0;
  /// Point-centroid distances computed by the last assign_update (over all of an engine's parts).
  virtual std::uint64_t last_distances() const = 0;

  /// Makes these the centroids of the following assign / distance calls.
  virtual void set_centroids(const double* centroids, std::size_t k) = 0;
  /// FlashAssign: labels and squared distances to the nearest centroid; returns how many
  /// labels changed from their values on entry.
  virtual std::size_t assign(std::int32_t* labels, T* dist) = 0;
  /// closest[i] = min(closest[i], ||x_i - c||^2) for one centred centroid c.
  virtual void lower_closest(const double* centroid, T* closest) = 0;
  /// pot[t] = sum_i w_i * min(closest[i], ||x_i - c_t||^2) for m centred candidates c_t
  /// (float64, summed in a fixed order).
  virtual void potentials(const double* candidates, std::size_t m, const T* closest, double* pot) = 0;
  /// Greedy k-means++ seeding with the closest distances kept in the engine: each row's squared
  /// distance to its nearest centre chosen so far, computed as lower_closest computes it. Bounds
  /// (Raff 2021) skip the rows a candidate or a new centre provably cannot bring closer; the
  /// results are bitwise those of lower_closest and potentials on the same closest distances.
  /// seed_start takes the first centre and up to k centres in all; it returns the potential
  /// sum_i w_i closest_i (float64, in row order).
  virtual double seed_start(const double* centre, std::size_t k) = 0;
  /// Whether the following seedings may keep a sketch of the rows (KMeansOptions::seed_sketch:
  /// memory for speed, the same centres either way); engines without one ignore it.
  virtual void set_seed_sketch(bool) {}
  /// For each target, the first row whose running sum of w_i closest_i (float64, taken in
  /// blocks of rows as core/seeding.hpp's search_cumulative takes it) reaches it, clipped to the
  /// last row (numpy.searchsorted on those running sums).
  virtual std::vector<std::size_t> seed_draw(const std::vector<double>& targets) = 0;
  /// As potentials(candidates, m, closest, pot) on the kept closest distances.
  virtual void seed_potentials(const double* candidates, std::size_t m, double* pot) = 0;
  /// Adds candidate t of the last seed_potentials call as the next centre: as
  /// lower_closest(candidate, closest) on the kept closest distances.
  virtual void seed_keep(std::size_t t) = 0;
  /// k-means||'s first centre (Efraimidis-Spirakis): the row with the largest log(u_i) / w_i,
  /// u_i = keyed_uniform(key, i) with i the row's index in the whole data set (an engine over a
  /// shard knows its first row), lowest index on ties (zero weights never win). A distributed
  /// engine picks over all shards. Needs no seed_start.
  virtual SeedPick seed_first(std::uint64_t key) = 0;
  /// k-means||: adds sum_i w_i closest_i (each product rounded to float64, the sum exact) to
  /// `acc` (a distributed engine: over all shards), so psi does not depend on how rows are
  /// split among threads or ranks.
  virtual void seed_potential(ExactSum& acc) = 0;
  /// k-means||: every row drawn independently, row i when u_i < l * w_i * closest_i / psi with
  /// u_i = keyed_uniform(key, i), i the row's index in the whole data set (so the draw depends
  /// on neither threads nor shards); the drawn rows minus shift(), float64, in row order (a
  /// distributed engine: every shard's, in shard order).
  virtual std::vector<double> seed_oversample(double l, double psi, std::uint64_t key) = 0;
  /// k-means||: lowers the kept closest distances against m more centres (FlashAssign), which
  /// become centres count .. count + m - 1.
  virtual void seed_add_many(const double* centres, std::size_t m) = 0;
  /// k-means||: for each centre so far, adds the weights of the rows nearest it to acc[c]
  /// (exact; a distributed engine: over all shards).
  virtual void seed_owner_weights(std::vector<ExactSum>& acc) = 0;
  /// Point-centre distances computed since seed_start (N per centre without bounds, plus N per
  /// candidate).
  virtual std::uint64_t seed_distances() const = 0;
  /// Adds each column's sum over this engine's rows (X's own values, not centred) to acc[j],
  /// exactly (a distributed engine: over all shards).
  virtual void column_sums(std::vector<ExactSum>& acc) = 0;

  /// Frees the seeding state.
  virtual void seed_end() = 0;

  /// Squared distances of every row to every set centroid, rows x k, row-major.
  virtual void sqdistances(T* out) = 0;

  /// Sort-Inverse Update: sums[c] = sum over points labelled c of w * (x - shift) and
  /// weights[c] = sum of their w (float64, in point order, for any thread count); returns the
  /// inertia sum_i w_i ||x_i - centroids[label_i]||^2 against the given (centred) centroids.
  virtual double update(const std::int32_t* labels, const double* centroids, std::size_t k,
                        double* sums, double* weights) = 0;

  /// The path the last assign_update took, for tests and benchmarks: "fused" (each tile of rows
  /// assigned and reduced at once, small K) or "grouped" (a group of super-blocks assigned, then
  /// its Sort-Inverse Update); "" before any.
  virtual const char* update_path() const { return ""; }

  /// One Lloyd step of the run begin_run started: assign against `centroids` (as set_centroids +
  /// assign on the engine's own labels and distances), then update (as update) from those labels. An engine may fuse the two to stream X once, and may update
  /// incrementally from its previous step's sums when few labels moved (then the sums and
  /// inertia equal update's up to rounding; the choice must depend on the labels only, so that
  /// pruning never changes the bits). Returns the inertia; *changed receives the number of
  /// labels that changed.
  virtual double assign_update(const double* centroids, std::size_t k, double* sums, double* weights,
                               std::size_t* changed) = 0;
  /// The labels of this engine's rows (rows() of them; a distributed engine: its shard's) from
  /// the run's last assign_update (-1 after begin_run, before it; no labels before any begin_run).
  /// Valid until the next begin_run or assign_update.
  virtual const std::int32_t* labels() const = 0;
};

}  // namespace flashkm::detail
