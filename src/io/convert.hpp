// Private header: element conversion from on-disk bytes (any byte order, float16/32/64, uint8)
// to float or double, shared by every binary reader.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "io/dataset.hpp"

namespace flashkm::io::detail {

/// IEEE 754 binary16 to binary32. Every half value is exactly representable as a float, so this
/// is exact: normals rebias the exponent (15 -> 127), subnormals (exponent 0) are mant * 2^-24,
/// and exponent 31 is infinity or NaN (the payload is kept, so a quiet NaN stays quiet).
inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // mant < 2^10 and 2^-24 is a power of two, so the product is exact.
    float v = static_cast<float>(mant) * 0x1p-24f;
    return sign != 0 ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

inline std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF16: return 2;
    case DType::kF32: return 4;
    case DType::kF64: return 8;
    case DType::kU8: return 1;
  }
  return 1;
}

template <class U>
U load(const unsigned char* p, bool swap) {
  U v;
  std::memcpy(&v, p, sizeof v);
  if (swap) {
    unsigned char b[sizeof v];
    std::memcpy(b, &v, sizeof v);
    for (std::size_t i = 0; i < sizeof v / 2; ++i) {
      unsigned char t = b[i];
      b[i] = b[sizeof v - 1 - i];
      b[sizeof v - 1 - i] = t;
    }
    std::memcpy(&v, b, sizeof v);
  }
  return v;
}

/// True when stored bytes of this order must be reversed on this machine.
inline bool needs_swap(bool big_endian) {
  return big_endian != (std::endian::native == std::endian::big);
}

/// Converts n elements stored at src into dst[0], dst[stride], ... The switch sits outside the
/// loops so each loop is a straight conversion the compiler can vectorise.
template <class T>
void convert(const unsigned char* src, std::size_t n, DType dtype, bool big_endian, T* dst,
             std::size_t stride) {
  const bool swap = needs_swap(big_endian);
  switch (dtype) {
    case DType::kF16:
      for (std::size_t i = 0; i < n; ++i) {
        dst[i * stride] = static_cast<T>(half_to_float(load<std::uint16_t>(src + 2 * i, swap)));
      }
      break;
    case DType::kF32:
      for (std::size_t i = 0; i < n; ++i) {
        const auto bits = load<std::uint32_t>(src + 4 * i, swap);
        dst[i * stride] = static_cast<T>(std::bit_cast<float>(bits));
      }
      break;
    case DType::kF64:
      for (std::size_t i = 0; i < n; ++i) {
        const auto bits = load<std::uint64_t>(src + 8 * i, swap);
        dst[i * stride] = static_cast<T>(std::bit_cast<double>(bits));
      }
      break;
    case DType::kU8:
      for (std::size_t i = 0; i < n; ++i) dst[i * stride] = static_cast<T>(src[i]);
      break;
  }
}

/// float16 elements as their raw bits (byte order fixed), for callers that keep 16-bit rows;
/// Dataset::read_rows<std::uint16_t> admits float16 data only, so no other dtype arrives here.
template <>
inline void convert<std::uint16_t>(const unsigned char* src, std::size_t n, DType dtype, bool big_endian,
                                   std::uint16_t* dst, std::size_t stride) {
  if (dtype != DType::kF16) return;
  const bool swap = needs_swap(big_endian);
  for (std::size_t i = 0; i < n; ++i) dst[i * stride] = load<std::uint16_t>(src + 2 * i, swap);
}

}  // namespace flashkm::io::detail
