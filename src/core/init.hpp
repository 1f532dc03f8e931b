// Private header: initial centroids (greedy k-means++, random distinct points).
#pragma once

#include <cstddef>
#include <random>
#include <vector>

#include "core/engine.hpp"

namespace flashkm::detail {

/// Greedy k-means++ (Arthur & Vassilvitskii 2007, with scikit-learn's 2 + floor(ln k) local
/// trials per step and the candidate that lowers the potential most). Weighted by the
/// engine's sample weights. Returns k centred centroids, row-major, float64.
template <class T>
std::vector<double> init_kmeanspp(Engine<T>& engine, std::size_t k, std::mt19937_64& rng);

/// k distinct rows drawn without replacement with probability proportional to their weight
/// (Efraimidis-Spirakis keys); throws InvalidData when fewer than k rows have positive weight.
template <class T>
std::vector<double> init_random(Engine<T>& engine, std::size_t k, std::mt19937_64& rng);

/// A uniform double in [0, 1) from 53 random bits (portable, unlike std distributions).
inline double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace flashkm::detail
