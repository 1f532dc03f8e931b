// Private header: initial centroids (greedy k-means++, random distinct points).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <random>
#include <utility>
#include <vector>

#include "core/engine.hpp"
#include "flashkm/matrix_view.hpp"

namespace flashkm::detail {

/// Hears of seeding as it goes: `done` of `total` steps of a phase ("k-means++": centres chosen;
/// "k-means||": rounds drawn), `distances` point-centre distances computed so far in it.
class SeedProgress {
 public:
  virtual ~SeedProgress() = default;
  virtual void step(const char* phase, std::size_t done, std::size_t total, std::uint64_t distances) = 0;
};

/// k-means||'s last step: k centres for the weighted candidate rows (centred, float64), in the
/// same frame, from a seed.
using Recluster = std::function<std::vector<double>(MatrixView<double> rows, std::span<const double> weights,
                                                    std::size_t k, std::uint64_t seed, SeedProgress* progress)>;

/// Greedy k-means++ (Arthur & Vassilvitskii 2007, with scikit-learn's 2 + floor(ln k) local
/// trials per step and the candidate that lowers the potential most). Weighted by the
/// engine's sample weights. Returns k centred centroids, row-major, float64.
/// What else k-means++ takes and gives.
struct KppOptions {
  SeedProgress* progress = nullptr;        ///< hears of every centre chosen
  std::size_t trials = 0;                  ///< candidates per step; 0: 2 + floor(ln k)
  std::vector<std::size_t>* rows = nullptr;  ///< receives the chosen rows' indices
};

/// The engine keeps the closest distances and skips the points its bounds prove a candidate
/// cannot bring closer (Engine::seed_*); the centres are bitwise those of init_kmeanspp_plain.
template <class T>
std::vector<double> init_kmeanspp(Engine<T>& engine, std::size_t k, std::mt19937_64& rng,
                                  const KppOptions& options = {});

/// The same k-means++ with every distance computed (lower_closest, potentials): the reference
/// the bounded seeding is tested against.
template <class T>
std::vector<double> init_kmeanspp_plain(Engine<T>& engine, std::size_t k, std::mt19937_64& rng,
                                        std::size_t trials = 0);

/// k-means|| (Bahmani et al., VLDB 2012): after a first row drawn by weight (Efraimidis-Spirakis
/// with keyed numbers), `rounds` rounds each draw every row independently with probability
/// min(1, l w_i d_i / psi), l = oversampling * k (d_i: squared distance to the nearest row drawn
/// so far, psi = sum w_i d_i summed exactly), with numbers keyed by the row's index in the whole
/// data set, so the result depends neither on the thread count nor on how rows are split among
/// MPI ranks. The drawn rows, weighted by the (exact) weights of the rows nearest them, are
/// clustered into k centres by `recluster`. Falls back to k-means++ over all rows when fewer
/// than k + 1 rows were drawn (data with few distinct rows).
template <class T>
std::vector<double> init_kmeans_parallel(Engine<T>& engine, std::size_t k, std::mt19937_64& rng,
                                         double oversampling, int rounds, const Recluster& recluster,
                                         SeedProgress* progress = nullptr);

/// k distinct rows drawn without replacement with probability proportional to their weight
/// (Efraimidis-Spirakis keys); throws InvalidData when fewer than k rows have positive weight.
template <class T>
std::vector<double> init_random(Engine<T>& engine, std::size_t k, std::mt19937_64& rng);

/// Efraimidis-Spirakis keys log(u) / w for rows 0..n-1, one uniform draw from rng per row in row
/// order (-inf for zero weights), as (key, row) pairs; *positive counts rows of positive weight.
/// The k largest keys are a weighted sample without replacement.
std::vector<std::pair<double, std::size_t>> sampling_keys(const double* w, std::size_t n, std::mt19937_64& rng,
                                                          std::uint64_t* positive);

/// InvalidData unless at least k rows have positive weight.
void check_positive_rows(std::uint64_t positive, std::size_t k);

/// Puts the m largest keys first, largest first (ties: lowest row).
void sort_best_keys(std::vector<std::pair<double, std::size_t>>& keys, std::size_t m);

/// A uniform double in [0, 1) from 53 random bits (portable, unlike std distributions).
inline double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace flashkm::detail
