// k-means++'s sketch filter with AVX2's byte products (kernel_table.hpp, sketch_mask_avx2).
//
// This file is compiled for the baseline x86-64 CPU like the rest of the library; only the
// functions marked FLASHKM_AVX2 use AVX2 instructions, and they run only after
// sketch_avx2_usable() said yes (the AVX2 target's table). Highway 1.0
// (Debian's) has no byte dot product, hence the intrinsics: VPMADDUBSW multiplies the rows'
// biased bytes (unsigned) by a candidate's four features (signed, broadcast) and adds adjacent
// products into int16 lanes; two quads' such sums are added in int16, which cannot saturate
// because a candidate's values lie within +-kCandLevels (4 * 255 * 31 = 31620 < 2^15), and
// VPMADDWD by ones then adds each row's pair sums into its int32 lane: two quads of 8 rows
// against one candidate take three multiplies, where the portable kernel widens the bytes
// first and takes one widening multiply-add per quad of 4 rows.
// The integer sums are exact and the float test is the portable kernels' operation for
// operation, so the masks are theirs bit for bit.
#include <cstddef>
#include <cstdint>
#include <utility>

#include "cpu/kernel_table.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#define FLASHKM_HAVE_AVX2 1
#define FLASHKM_AVX2 __attribute__((target("avx2")))
#else
#define FLASHKM_HAVE_AVX2 0
#endif

namespace flashkm::detail {

#if FLASHKM_HAVE_AVX2
namespace {

static_assert(kSketchRows == 16, "two ymm of int32 lanes per block");
static_assert(4 * 255 * kCandLevels < 32768, "two quads' VPMADDUBSW pair sums must fit in int16");

// The exact integer dot products of rows [8h, 8h + 8) of the block with candidates [T0, T1),
// into acc[T0, T1): at most four candidates a pass, so that their accumulators, the two quads
// and the candidates' broadcasts all stay in registers (eight at once spilled).
template <std::size_t T0, std::size_t T1>
FLASHKM_AVX2 inline void avx2_dots(const SketchArgs& g, const std::uint8_t* q, __m256i* acc) {
  const __m256i ones = _mm256_set1_epi16(1);
  constexpr std::size_t kStep = kSketchRows * 4;  // bytes per quad of the block
  std::size_t p = 0;
  // Two quads' pair sums added in int16 (each within 2 * 255 * kCandLevels, two within 2^15),
  // then widened once.
  for (; p + 2 <= g.quads; p += 2) {
    const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + p * kStep));
    const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + (p + 1) * kStep));
#pragma GCC unroll 16
    for (std::size_t t = T0; t < T1; ++t) {
      const std::int32_t* c = g.cq + t * g.quads + p;
      const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(x0, _mm256_set1_epi32(c[0])),
                                             _mm256_maddubs_epi16(x1, _mm256_set1_epi32(c[1])));
      acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(pairs, ones));
    }
  }
  if (p < g.quads) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + p * kStep));
#pragma GCC unroll 16
    for (std::size_t t = T0; t < T1; ++t) {
      const __m256i pairs = _mm256_maddubs_epi16(x, _mm256_set1_epi32(g.cq[t * g.quads + p]));
      acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(pairs, ones));
    }
  }
}

// Rows [8h, 8h + 8) of the block: their exact integer dot products with M candidates, then the
// float test lane by lane.
template <std::size_t M>
FLASHKM_AVX2 void avx2_half(const SketchArgs& g, std::size_t h, std::uint32_t* mask) {
  __m256i acc[M];
#pragma GCC unroll 16
  for (std::size_t t = 0; t < M; ++t) acc[t] = _mm256_setzero_si256();
  const std::uint8_t* q = g.q + h * 32;
  avx2_dots<0, (M < 4 ? M : 4)>(g, q, acc);
  if constexpr (M > 4) avx2_dots<4, (M < 8 ? M : 8)>(g, q, acc);
  if constexpr (M > 8) avx2_dots<8, (M < 12 ? M : 12)>(g, q, acc);
  if constexpr (M > 12) avx2_dots<12, M>(g, q, acc);
  static_assert(M <= 16, "four passes of at most four candidates");
  const std::size_t r = h * 8;
  const __m256 a = _mm256_loadu_ps(g.a + r), s = _mm256_loadu_ps(g.s + r);
  __m256i bits = _mm256_setzero_si256();
  if (g.rr) {
    // The separable test (SketchArgs::rr).
    const __m256 rr = _mm256_loadu_ps(g.rr + r);
#pragma GCC unroll 16
    for (std::size_t t = 0; t < M; ++t) {
      const __m256 p = _mm256_cvtepi32_ps(_mm256_sub_epi32(acc[t], _mm256_set1_epi32(g.cfix[t])));
      const __m256 lhs = _mm256_mul_ps(_mm256_mul_ps(s, _mm256_set1_ps(g.cs[t])), p);
      const __m256 keep = _mm256_cmp_ps(lhs, _mm256_add_ps(rr, _mm256_set1_ps(g.cc[t])), _CMP_NLE_UQ);
      bits = _mm256_or_si256(bits, _mm256_and_si256(_mm256_castps_si256(keep), _mm256_set1_epi32(static_cast<int>(1u << t))));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(mask + r), bits);
    return;
  }
  const __m256 cl = _mm256_loadu_ps(g.cl + r);
  const __m256 up = _mm256_set1_ps(kSketchUp);
  const __m256 rad = _mm256_mul_ps(
      _mm256_sqrt_ps(_mm256_mul_ps(_mm256_add_ps(cl, _mm256_set1_ps(g.tau)), _mm256_set1_ps(g.over))), up);
  const __m256 rd = _mm256_add_ps(rad, _mm256_loadu_ps(g.delta + r));
#pragma GCC unroll 16
  for (std::size_t t = 0; t < M; ++t) {
    const __m256 p = _mm256_cvtepi32_ps(_mm256_sub_epi32(acc[t], _mm256_set1_epi32(g.cfix[t])));
    const __m256 ab = _mm256_add_ps(a, _mm256_set1_ps(g.cb[t]));
    const __m256 e = _mm256_sub_ps(ab, _mm256_mul_ps(_mm256_mul_ps(s, _mm256_set1_ps(g.cs[t])), p));
    const __m256 elo = _mm256_sub_ps(e, _mm256_mul_ps(ab, _mm256_set1_ps(kSketchErr)));
    const __m256 gg = _mm256_add_ps(rd, _mm256_set1_ps(g.cdelta[t]));
    const __m256 thr = _mm256_mul_ps(_mm256_mul_ps(gg, gg), up);
    const __m256 keep = _mm256_cmp_ps(elo, thr, _CMP_NGE_UQ);  // !(elo >= thr): NaN keeps the pair
    bits = _mm256_or_si256(bits, _mm256_and_si256(_mm256_castps_si256(keep), _mm256_set1_epi32(static_cast<int>(1u << t))));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(mask + r), bits);
}

template <std::size_t M>
void avx2_mask(const SketchArgs& g, std::uint32_t* mask) {
  avx2_half<M>(g, 0, mask);
  avx2_half<M>(g, 1, mask);
}

template <std::size_t... M>
void avx2_of(std::index_sequence<M...>, const SketchArgs& g, std::uint32_t* mask) {
  ((g.m == M + 1 ? avx2_mask<M + 1>(g, mask) : void()), ...);
}

}  // namespace

void sketch_mask_avx2(const SketchArgs& g, std::uint32_t* mask) {
  avx2_of(std::make_index_sequence<kMaxFew>(), g, mask);
}

bool sketch_avx2_usable() {
  // GCC's check includes the operating system's support for the AVX state (XCR0).
  return __builtin_cpu_supports("avx2");
}

#else

void sketch_mask_avx2(const SketchArgs& g, std::uint32_t* mask) { ref_sketch_mask(g, mask); }
bool sketch_avx2_usable() { return false; }

#endif

}  // namespace flashkm::detail
