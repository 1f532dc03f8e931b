// Private header: an exact accumulator of doubles (a Kulisch-style long fixed-point number in
// two's complement). Adding is exact, so the sum does not depend on the order of the additions, on how
// the values are split among threads or MPI ranks, or on the order the parts are merged in;
// value() rounds the exact sum once, to nearest (ties to even). k-means|| uses it for the
// potentials and candidate weights that must be bitwise the same for any number of ranks.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace flashkm::detail {

class ExactSum {
 public:
  /// Limbs of 64 bits, two's complement: bit 0 weighs 2^-1074 (the least subnormal); the
  /// largest finite double's top bit is bit 2097, and 64 more bits of headroom hold 2^64
  /// additions of it, below the sign bit 2175.
  static constexpr std::size_t kLimbs = 34;

  /// Adds a finite double exactly.
  void add(double x) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &x, sizeof bits);
    const auto biased = static_cast<unsigned>((bits >> 52) & 0x7FF);
    if (biased == 0x7FF) throw std::invalid_argument("ExactSum: not a finite value");
    std::uint64_t q = bits & ((std::uint64_t{1} << 52) - 1);
    // Normal: x = (2^52 + mantissa) 2^(biased - 1075), at bit biased - 1 of the accumulator;
    // subnormal: x = mantissa 2^-1074, at bit 0.
    std::size_t shift = 0;
    if (biased != 0) {
      q |= std::uint64_t{1} << 52;
      shift = biased - 1;
    }
    if (q == 0) return;
    if (bits >> 63) {
      sub_bits(q, shift);
    } else {
      add_bits(q, shift);
    }
  }

  /// Adds another accumulator (exact).
  void merge(const ExactSum& other) { merge(other.limbs_.data()); }
  void merge(const std::uint64_t* limbs) {
    unsigned carry = 0;
    for (std::size_t i = 0; i < kLimbs; ++i) {
      const std::uint64_t a = limbs_[i], b = limbs[i];
      std::uint64_t s = a + b;
      const unsigned c1 = s < a;
      const std::uint64_t t = s + carry;
      const unsigned c2 = t < s;
      limbs_[i] = t;
      carry = c1 | c2;
    }
  }

  /// The limbs, least significant first (to send to other ranks).
  const std::array<std::uint64_t, kLimbs>& limbs() const { return limbs_; }

  /// The exact sum rounded to the nearest double (ties to even); infinite past the largest.
  double value() const {
    if (limbs_[kLimbs - 1] >> 63) {  // negative: round the magnitude (symmetric rounding)
      ExactSum neg;
      neg.merge(*this);
      neg.negate();
      return -neg.magnitude();
    }
    return magnitude();
  }

 private:
  void negate() {
    unsigned carry = 1;
    for (std::size_t i = 0; i < kLimbs; ++i) {
      const std::uint64_t v = ~limbs_[i] + carry;
      carry = carry && v == 0;
      limbs_[i] = v;
    }
  }

  // The (non-negative) number rounded to nearest-even.
  double magnitude() const {
    std::size_t h = kLimbs;
    while (h > 0 && limbs_[h - 1] == 0) --h;
    if (h == 0) return 0.0;
    const std::size_t bits = 64 * (h - 1) + (64 - static_cast<std::size_t>(__builtin_clzll(limbs_[h - 1])));
    if (bits <= 53) return std::ldexp(static_cast<double>(limbs_[0]), -1074);  // exact
    // The top 64 bits, and whether anything below them is non-zero.
    const std::size_t start = bits >= 64 ? bits - 64 : 0;
    const std::uint64_t top = get64(start);
    bool sticky = false;
    for (std::size_t i = 0; i < start / 64 && !sticky; ++i) sticky = limbs_[i] != 0;
    if (!sticky && start % 64 != 0) sticky = (limbs_[start / 64] & ((std::uint64_t{1} << (start % 64)) - 1)) != 0;
    // top has its leading one at bit min(bits, 64) - 1; keep 53 bits.
    const std::size_t width = bits - start;  // 64, or bits when bits < 64
    const std::size_t drop = width - 53;
    std::uint64_t q = top >> drop;
    const std::uint64_t rem = drop ? top & ((std::uint64_t{1} << drop) - 1) : 0;
    const std::uint64_t half = drop ? std::uint64_t{1} << (drop - 1) : 0;
    if (drop && (rem > half || (rem == half && (sticky || (q & 1))))) ++q;
    return std::ldexp(static_cast<double>(q), static_cast<int>(start + drop) - 1074);
  }

  void add_bits(std::uint64_t q, std::size_t shift) {
    const std::size_t i = shift / 64, off = shift % 64;
    const std::uint64_t lo = q << off;
    const std::uint64_t hi = off ? q >> (64 - off) : 0;
    std::uint64_t s = limbs_[i] + lo;
    std::uint64_t carry = s < limbs_[i];
    limbs_[i] = s;
    std::size_t j = i + 1;
    std::uint64_t add = hi + carry;  // hi < 2^53: no overflow
    while (add != 0 && j < kLimbs) {
      s = limbs_[j] + add;
      add = s < limbs_[j];
      limbs_[j] = s;
      ++j;
    }
  }

  void sub_bits(std::uint64_t q, std::size_t shift) {
    const std::size_t i = shift / 64, off = shift % 64;
    const std::uint64_t lo = q << off;
    const std::uint64_t hi = off ? q >> (64 - off) : 0;
    std::uint64_t borrow = limbs_[i] < lo;
    limbs_[i] -= lo;
    std::size_t j = i + 1;
    std::uint64_t sub = hi + borrow;  // hi < 2^53: no overflow
    while (sub != 0 && j < kLimbs) {
      borrow = limbs_[j] < sub;
      limbs_[j] -= sub;
      sub = borrow;
      ++j;
    }
  }

  // Bits [start, start + 64) of the number (zeros past the top).
  std::uint64_t get64(std::size_t start) const {
    const std::size_t i = start / 64, off = start % 64;
    const std::uint64_t lo = limbs_[i] >> off;
    const std::uint64_t hi = off && i + 1 < kLimbs ? limbs_[i + 1] << (64 - off) : 0;
    return lo | hi;
  }

  std::array<std::uint64_t, kLimbs> limbs_{};
};

}  // namespace flashkm::detail
