// Widening of 16-bit floats (IEEE half, bfloat16) to float32 with Highway, dispatched at run
// time (F16C / AVX-512 where the CPU has them): the conversion half-precision data goes through,
// one chunk at a time, on its way into the float32 kernels.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cpu/half_convert.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/half_convert.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace flashkm::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class Half>
void Widen(const std::uint16_t* in, std::size_t n, float* out) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<Half, decltype(df)> dh;
  const std::size_t L = hn::Lanes(df);
  const Half* h = reinterpret_cast<const Half*>(in);
  std::size_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, h + i)), df, out + i);
  if (i < n) {
    // The tail through a zero-padded vector (no reads past the end of the row).
    HWY_ALIGN Half tail[hn::MaxLanes(df)] = {};
    HWY_ALIGN float wide[hn::MaxLanes(df)];
    std::memcpy(tail, h + i, (n - i) * sizeof(Half));
    hn::Store(hn::PromoteTo(df, hn::Load(dh, tail)), df, wide);
    std::memcpy(out + i, wide, (n - i) * sizeof(float));
  }
}

void WidenF16(const std::uint16_t* in, std::size_t n, float* out) { Widen<hwy::float16_t>(in, n, out); }
void WidenBF16(const std::uint16_t* in, std::size_t n, float* out) { Widen<hwy::bfloat16_t>(in, n, out); }

}  // namespace flashkm::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace flashkm::detail {

HWY_EXPORT(WidenF16);
HWY_EXPORT(WidenBF16);

void widen_half(const std::uint16_t* in, std::size_t n, float* out, bool bfloat16) {
  if (bfloat16) {
    HWY_DYNAMIC_DISPATCH(WidenBF16)(in, n, out);
  } else {
    HWY_DYNAMIC_DISPATCH(WidenF16)(in, n, out);
  }
}

}  // namespace flashkm::detail
#endif
