// k-means++'s sketch filter with AVX-512 VNNI (kernel_table.hpp, sketch_mask_vnni).
//
// This file is compiled for the baseline x86-64 CPU like the rest of the library; only the
// functions marked FLASHKM_VNNI use AVX-512 instructions, and they run only after
// sketch_vnni_usable() said yes. Highway 1.0 (Debian's) has no byte dot product, hence the
// intrinsics: VPDPBUSD multiplies the rows' biased bytes (unsigned) by a candidate's four
// features (signed, broadcast) and adds the four products to each int32 lane, so a quad of 16
// rows against one candidate is one instruction. The integer sums are exact and the float test
// is the portable kernels' operation for operation, so the masks are theirs bit for bit.
#include <cstddef>
#include <cstdint>
#include <utility>

#include "cpu/kernel_table.hpp"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics start some results from _mm512_undefined_*(), which it then
// reports as uninitialised once inlined here: false positives in its own headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#if defined(__x86_64__)
#include <immintrin.h>
#define FLASHKM_HAVE_VNNI 1
#define FLASHKM_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))
#else
#define FLASHKM_HAVE_VNNI 0
#endif

namespace flashkm::detail {

#if FLASHKM_HAVE_VNNI
namespace {

static_assert(kSketchRows == 16, "one zmm of int32 lanes per block");

template <std::size_t M>
FLASHKM_VNNI void vnni_mask(const SketchArgs& g, std::uint32_t* mask) {
  // Fully unrolled over the candidates, so that the accumulators stay in registers.
  __m512i acc[M];
#pragma GCC unroll 16
  for (std::size_t t = 0; t < M; ++t) acc[t] = _mm512_setzero_si512();
  for (std::size_t p = 0; p < g.quads; ++p) {
    const __m512i x = _mm512_loadu_si512(g.q + p * kSketchRows * 4);
#pragma GCC unroll 16
    for (std::size_t t = 0; t < M; ++t) {
      acc[t] = _mm512_dpbusd_epi32(acc[t], x, _mm512_set1_epi32(g.cq[t * g.quads + p]));
    }
  }
  const __m512 a = _mm512_loadu_ps(g.a), s = _mm512_loadu_ps(g.s);
  if (g.rr) {
    // The separable test (SketchArgs::rr).
    const __m512 rr = _mm512_loadu_ps(g.rr);
    __m512i bits = _mm512_setzero_si512();
#pragma GCC unroll 16
    for (std::size_t t = 0; t < M; ++t) {
      const __m512 p = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[t], _mm512_set1_epi32(g.cfix[t])));
      const __m512 lhs = _mm512_mul_ps(_mm512_mul_ps(s, _mm512_set1_ps(g.cs[t])), p);
      const __mmask16 keep = _mm512_cmp_ps_mask(lhs, _mm512_add_ps(rr, _mm512_set1_ps(g.cc[t])), _CMP_NLE_UQ);
      bits = _mm512_mask_or_epi32(bits, keep, bits, _mm512_set1_epi32(static_cast<int>(1u << t)));
    }
    _mm512_storeu_si512(mask, bits);
    return;
  }
  const __m512 cl = _mm512_loadu_ps(g.cl);
  const __m512 up = _mm512_set1_ps(kSketchUp);
  const __m512 r = _mm512_mul_ps(
      _mm512_sqrt_ps(_mm512_mul_ps(_mm512_add_ps(cl, _mm512_set1_ps(g.tau)), _mm512_set1_ps(g.over))), up);
  const __m512 rd = _mm512_add_ps(r, _mm512_loadu_ps(g.delta));
  __mmask16 keep[M];
#pragma GCC unroll 16
  for (std::size_t t = 0; t < M; ++t) {
    const __m512 p = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[t], _mm512_set1_epi32(g.cfix[t])));
    const __m512 ab = _mm512_add_ps(a, _mm512_set1_ps(g.cb[t]));
    const __m512 e = _mm512_sub_ps(ab, _mm512_mul_ps(_mm512_mul_ps(s, _mm512_set1_ps(g.cs[t])), p));
    const __m512 elo = _mm512_sub_ps(e, _mm512_mul_ps(ab, _mm512_set1_ps(kSketchErr)));
    const __m512 gg = _mm512_add_ps(rd, _mm512_set1_ps(g.cdelta[t]));
    const __m512 thr = _mm512_mul_ps(_mm512_mul_ps(gg, gg), up);
    keep[t] = _mm512_cmp_ps_mask(elo, thr, _CMP_NGE_UQ);  // !(elo >= thr): NaN keeps the pair
  }
  __m512i bits = _mm512_setzero_si512();
#pragma GCC unroll 16
  for (std::size_t t = 0; t < M; ++t) {
    bits = _mm512_mask_or_epi32(bits, keep[t], bits, _mm512_set1_epi32(static_cast<int>(1u << t)));
  }
  _mm512_storeu_si512(mask, bits);
}

template <std::size_t... M>
void vnni_of(std::index_sequence<M...>, const SketchArgs& g, std::uint32_t* mask) {
  ((g.m == M + 1 ? vnni_mask<M + 1>(g, mask) : void()), ...);
}

}  // namespace

void sketch_mask_vnni(const SketchArgs& g, std::uint32_t* mask) {
  vnni_of(std::make_index_sequence<kMaxFew>(), g, mask);
}

bool sketch_vnni_usable() {
  // GCC's checks include the operating system's support for the AVX-512 state (XCR0).
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vnni");
}

#else

void sketch_mask_vnni(const SketchArgs& g, std::uint32_t* mask) { ref_sketch_mask(g, mask); }
bool sketch_vnni_usable() { return false; }

#endif

}  // namespace flashkm::detail
