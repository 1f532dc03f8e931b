// Private header: 16-bit float (IEEE half or bfloat16) to float32 conversion.
#pragma once

#include <cstddef>
#include <cstdint>

namespace flashkm::detail {

/// out[i] = the float value of the 16-bit float in[i] (exact: every half and bfloat16 value is
/// a float32 value), for i < n. bfloat16 when `bfloat16`, IEEE binary16 otherwise.
void widen_half(const std::uint16_t* in, std::size_t n, float* out, bool bfloat16);

}  // namespace flashkm::detail
