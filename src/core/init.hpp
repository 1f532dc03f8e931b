// Private header: initial centroids (greedy k-means++, random distinct points).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "core/engine.hpp"

namespace flashkm::detail {

/// Hears of seeding as it goes: `chosen` of `k` centres chosen, `distances` point-centre
/// distances computed so far.
class SeedProgress {
 public:
  virtual ~SeedProgress() = default;
  virtual void step(std::size_t chosen, std::size_t k, std::uint64_t distances) = 0;
};

/// Greedy k-means++ (Arthur & Vassilvitskii 2007, with scikit-learn's 2 + floor(ln k) local
/// trials per step and the candidate that lowers the potential most). Weighted by the
/// engine's sample weights. Returns k centred centroids, row-major, float64.
/// The engine keeps the closest distances and skips the points its bounds prove a candidate
/// cannot bring closer (Engine::seed_*); the centres are bitwise those of init_kmeanspp_plain.
/// `progress`, when given, hears of every centre chosen.
template <class T>
std::vector<double> init_kmeanspp(Engine<T>& engine, std::size_t k, std::mt19937_64& rng,
                                  SeedProgress* progress = nullptr);

/// The same k-means++ with every distance computed (lower_closest, potentials): the reference
/// the bounded seeding is tested against.
template <class T>
std::vector<double> init_kmeanspp_plain(Engine<T>& engine, std::size_t k, std::mt19937_64& rng);

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
