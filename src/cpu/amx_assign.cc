// FlashAssign on AMX tiles for 16-bit input: tile products filter, float32 re-scoring decides
// (see amx.hpp for the contract and docs/KERNELS.md, "AMX", for the error bound).
//
// This file is compiled for the baseline x86-64 CPU like the rest of the library; only the
// functions marked FLASHKM_AMX use AMX and AVX-512 instructions, and they run only after
// amx_usable() said yes (a template instantiated here stays baseline code, so nothing built
// for AMX can leak into code that runs elsewhere).
#include "cpu/amx.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics start some results from _mm512_undefined_*(), which it then
// reports as uninitialised once inlined here: false positives in its own headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define FLASHKM_HAVE_AMX 1
// Both 16-bit kernels' code: the tile path executes AMX instructions, the AVX-512-BF16 path
// only AVX-512 and VDPBF16PS (the compiler emits neither AMX nor BF16 instructions on its own).
#define FLASHKM_AMX \
  __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma")))
#else
#define FLASHKM_HAVE_AMX 0
#endif

namespace flashkm::detail {
namespace {

std::atomic<std::size_t> g_rescored{0};
std::atomic<std::size_t> g_fallback{0};

constexpr std::size_t kRows = 32;  // rows per block: two 16-row A tiles
constexpr std::size_t kTileK = 32; // bfloat16 values per tile row (64 bytes)
constexpr std::size_t kUnfiltered = ~std::size_t{0};

std::uint16_t to_bf16(float f) {  // round to nearest even; f finite
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

float from_bf16(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

}  // namespace

#if FLASHKM_HAVE_AMX

namespace {
bool has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}
}  // namespace

bool amx_usable() {
  static const bool usable = [] {
    if (!has_avx512()) return false;  // the packing, filter and re-scoring are AVX-512 code
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
    const bool tile = (d >> 24) & 1u, bf16 = (d >> 22) & 1u;
    if (!tile || !bf16) return false;
    // Linux hands out the 8 KiB tile state only on request, once per process.
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return usable;
}

bool avx512bf16_usable() {
  static const bool usable = [] {
    if (!has_avx512()) return false;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d) == 0) return false;
    return ((a >> 5) & 1u) != 0;  // AVX512_BF16
  }();
  return usable;
}

#else

bool amx_usable() { return false; }
bool avx512bf16_usable() { return false; }

#endif

void amx_pack(const double* centroids, std::size_t k, std::size_t dim, const float* norms,
              const float* shift, bool fp16, std::size_t pieces, AmxCentroids* out) {
  AmxCentroids& c = *out;
  c.k = k;
  c.dim = dim;
  c.fp16 = fp16;
  c.pieces = pieces;
  c.kpad = (k + 31) / 32 * 32;
  c.dpad = (dim + kTileK - 1) / kTileK * kTileK;
  // Products per score, as (piece of the row, piece of the centroid); 0 = hi, 1 = lo. A float16
  // row is hi + lo exactly; lo x lo is left out (inside the bound).
  static const int kPairs[4][3][2] = {{{0, 0}}, {{0, 0}, {0, 1}}, {{0, 0}, {1, 0}}, {{0, 0}, {0, 1}, {1, 0}}};
  const int which = (fp16 ? 2 : 0) + (pieces == 2 ? 1 : 0);
  c.segments = fp16 ? pieces + 1 : pieces;
  for (std::size_t s = 0; s < c.segments; ++s) {
    c.seg_x[s] = kPairs[which][s][0];
    c.seg_c[s] = kPairs[which][s][1];
  }
  const std::size_t steps = c.segments * c.dpad / kTileK;
  const std::size_t need = c.kpad * c.segments * c.dpad;
  std::uint16_t* tiles = c.tiles.reserve(need);
  std::fill_n(tiles, need, std::uint16_t{0});
  c.bias.assign(c.kpad, std::numeric_limits<float>::infinity());
  c.cf.resize(k * dim);
  c.norm.assign(norms, norms + k);
  c.nmax = 0;
  c.delta = 0;
  c.lo_max = 0;
  double sn = 0;
  for (std::size_t j = 0; j < dim; ++j) sn += static_cast<double>(shift[j]) * shift[j];
  c.shift_norm = std::sqrt(sn);
  for (std::size_t ci = 0; ci < k; ++ci) {
    double n2 = 0, sdot = 0, d2 = 0, lo2 = 0;
    const std::size_t ct = ci / 16, col = ci % 16;
    for (std::size_t j = 0; j < dim; ++j) {
      const float v = static_cast<float>(centroids[ci * dim + j]);
      c.cf[ci * dim + j] = v;
      n2 += static_cast<double>(v) * v;
      sdot += static_cast<double>(shift[j]) * v;
      std::uint16_t piece[2] = {0, 0};
      if (std::isfinite(v)) {
        piece[0] = to_bf16(v);
        const float rest = v - from_bf16(piece[0]);  // exact
        piece[1] = std::isfinite(rest) ? to_bf16(rest) : 0;
      }
      // What the tiles multiply with, against the float32 value: exact in float64.
      const double carried = from_bf16(piece[0]) + (pieces == 2 ? static_cast<double>(from_bf16(piece[1])) : 0.0);
      const double miss = static_cast<double>(v) - carried;
      d2 += std::isfinite(miss) ? miss * miss : std::numeric_limits<double>::infinity();
      lo2 += static_cast<double>(from_bf16(piece[1])) * from_bf16(piece[1]);
      for (std::size_t s = 0; s < c.segments; ++s) {
        const std::size_t depth = s * c.dpad + j;  // position in the concatenated depth
        const std::size_t step = depth / kTileK, within = depth % kTileK;
        // Tile layout for TDPBF16PS: row r holds the pairs (2r, 2r+1) of every column.
        tiles[((ct * steps + step) * 16 + within / 2) * 32 + 2 * col + within % 2] = piece[c.seg_c[s]];
      }
    }
    c.nmax = std::max(c.nmax, std::sqrt(n2));
    c.delta = std::max(c.delta, std::sqrt(d2));
    c.lo_max = std::max(c.lo_max, std::sqrt(lo2));
    c.bias[ci] = static_cast<float>(static_cast<double>(norms[ci]) + 2.0 * sdot);
  }
}

#if FLASHKM_HAVE_AMX
namespace {

struct Scratch {
  AlignedBuffer<std::uint16_t> a;
  AlignedBuffer<float> s, xc, xnorm, rowmin, score;
  AlignedBuffer<std::uint32_t> prow, pcen;
};

// Scores of a block of 32 packed rows against all centroids: s[i * kpad + c] = x_i . c (the
// pieces' sum), by tiles of 32 x 32 (four accumulators, two A and two B tiles); rowmin[i * 16
// + lane] = the smallest bias - 2 s over the lane's centroids.
FLASHKM_AMX void tile_scores(const AmxCentroids& c, const std::uint16_t* a, std::size_t a_stride, float* s,
                             float* rowmin) {
  const __m512 m2 = _mm512_set1_ps(-2.0f);
  for (std::size_t r = 0; r < kRows; ++r) _mm512_store_ps(rowmin + r * 16, _mm512_set1_ps(std::numeric_limits<float>::infinity()));
  const std::size_t steps = c.segments * c.dpad / kTileK;
  const std::size_t ld = c.kpad * sizeof(float);
  const std::size_t lda = a_stride * sizeof(std::uint16_t);
  const std::uint16_t* a1 = a + 16 * a_stride;
  for (std::size_t ct = 0; ct < c.kpad / 16; ct += 2) {
    const std::uint16_t* b0 = c.tiles.data() + ct * steps * 512;
    const std::uint16_t* b1 = b0 + steps * 512;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (std::size_t st = 0; st < steps; ++st) {
      _tile_loadd(4, a + st * kTileK, lda);
      _tile_loadd(5, a1 + st * kTileK, lda);
      _tile_loadd(6, b0 + st * 512, 64);
      _tile_loadd(7, b1 + st * 512, 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, s + ct * 16, ld);
    _tile_stored(1, s + ct * 16 + 16, ld);
    _tile_stored(2, s + 16 * c.kpad + ct * 16, ld);
    _tile_stored(3, s + 16 * c.kpad + ct * 16 + 16, ld);
    // The rows' running minima of bias - 2 x.c while the tiles just stored are in L1.
    const __m512 b0v = _mm512_loadu_ps(c.bias.data() + ct * 16);
    const __m512 b1v = _mm512_loadu_ps(c.bias.data() + ct * 16 + 16);
    for (std::size_t r = 0; r < kRows; ++r) {
      const float* sr = s + r * c.kpad + ct * 16;
      const __m512 v0 = _mm512_fmadd_ps(_mm512_loadu_ps(sr), m2, b0v);
      const __m512 v1 = _mm512_fmadd_ps(_mm512_loadu_ps(sr + 16), m2, b1v);
      _mm512_store_ps(rowmin + r * 16, _mm512_min_ps(_mm512_load_ps(rowmin + r * 16), _mm512_min_ps(v0, v1)));
    }
  }
}

// The same scores with AVX-512-BF16 (VDPBF16PS: 16 lanes, a pair of bfloat16 products each,
// float32 accumulation), for CPUs without AMX: 8 rows x 32 centroids in 16 accumulators, the
// centroid pairs read from the tiles' layout (row r of a B tile is one 64-byte vector).
FLASHKM_AMX void dp_scores(const AmxCentroids& c, const std::uint16_t* a, std::size_t a_stride, float* s,
                           float* rowmin) {
  constexpr std::size_t kMR = 8;
  const __m512 m2 = _mm512_set1_ps(-2.0f);
  const std::size_t steps = c.segments * c.dpad / kTileK;
  const std::size_t npairs = steps * 16;
  for (std::size_t r = 0; r < kRows; ++r) _mm512_store_ps(rowmin + r * 16, _mm512_set1_ps(std::numeric_limits<float>::infinity()));
  for (std::size_t ct = 0; ct < c.kpad / 16; ct += 2) {
    const std::uint16_t* b0 = c.tiles.data() + ct * steps * 512;  // pair q at b0 + 32 q
    const std::uint16_t* b1 = b0 + steps * 512;
    const __m512 bias0 = _mm512_loadu_ps(c.bias.data() + ct * 16);
    const __m512 bias1 = _mm512_loadu_ps(c.bias.data() + ct * 16 + 16);
    for (std::size_t i0 = 0; i0 < kRows; i0 += kMR) {
      __m512 acc[kMR][2];
      for (std::size_t i = 0; i < kMR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
      const std::uint16_t* arow = a + i0 * a_stride;
      for (std::size_t q = 0; q < npairs; ++q) {
        const __m512bh v0 = (__m512bh)_mm512_load_si512(b0 + 32 * q);
        const __m512bh v1 = (__m512bh)_mm512_load_si512(b1 + 32 * q);
#pragma GCC unroll 8
        for (std::size_t i = 0; i < kMR; ++i) {
          std::int32_t pair;
          std::memcpy(&pair, arow + i * a_stride + 2 * q, sizeof(pair));
          const __m512bh x = (__m512bh)_mm512_set1_epi32(pair);
          acc[i][0] = _mm512_dpbf16_ps(acc[i][0], x, v0);
          acc[i][1] = _mm512_dpbf16_ps(acc[i][1], x, v1);
        }
      }
      for (std::size_t i = 0; i < kMR; ++i) {
        float* sr = s + (i0 + i) * c.kpad + ct * 16;
        _mm512_storeu_ps(sr, acc[i][0]);
        _mm512_storeu_ps(sr + 16, acc[i][1]);
        const __m512 v = _mm512_min_ps(_mm512_fmadd_ps(acc[i][0], m2, bias0), _mm512_fmadd_ps(acc[i][1], m2, bias1));
        float* rm = rowmin + (i0 + i) * 16;
        _mm512_store_ps(rm, _mm512_min_ps(_mm512_load_ps(rm), v));
      }
    }
  }
}

// Tile scores of one row (bias - 2 x.c): the indices of all centroids within the bound of the
// smallest written to cand; returns their number, or kUnfiltered when the scores cannot be
// trusted to filter (overflow, non-finite threshold): the float32 kernels then decide alone.
FLASHKM_AMX std::size_t filter_row(const AmxCentroids& c, const float* srow, const float* rowmin, double xu,
                                   double xc, std::uint32_t* cand) {
  const __m512 m2 = _mm512_set1_ps(-2.0f);
  const float amin = _mm512_reduce_min_ps(_mm512_load_ps(rowmin));
  // |tile score - float32 kernel score| <= e for every centroid (docs/KERNELS.md, "AMX"):
  // rounding of n float32 additions on each side and of the float32 kernels' centring and
  // norms (twice the worst case), the centroids' part the bfloat16 pieces do not carry
  // (||x|| ||c - pieces||, Cauchy-Schwarz), lo x lo of float16 rows, and flushed subnormals.
  const double n = static_cast<double>(c.segments * c.dpad);
  const double N = c.nmax;
  const double g = (2 * n + 2 * static_cast<double>(c.dim) + 16) * 0x1p-24 * 1.01;
  const double lolo = c.fp16 && c.pieces == 2 ? 0x1p-8 * xu * c.lo_max : 0.0;
  const double e = 2 * g * (N * N + 2 * xc * N + 2 * c.shift_norm * N + 2 * xu * N) +
                   2 * (xu * c.delta + lolo) * (1 + 0x1p-20) +
                   0x1p-100 * (n + std::sqrt(static_cast<double>(c.dim)) * (xu + N) + 1);
  const double thr = static_cast<double>(amin) + 2 * e;
  // Far below float32's range the tile scores cannot overflow; beyond it, or when the smallest
  // is not finite, the float32 kernels must decide alone (their NaN handling included).
  if (!std::isfinite(thr) || !((xu + N + c.shift_norm) * N < 1e36)) return kUnfiltered;
  float thr_f = static_cast<float>(thr);
  if (static_cast<double>(thr_f) < thr) thr_f = std::nextafter(thr_f, std::numeric_limits<float>::infinity());
  if (!std::isfinite(thr_f)) return kUnfiltered;  // padding (+inf) must never become a candidate
  const __m512 vt = _mm512_set1_ps(thr_f);
  __m512i idx = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i step = _mm512_set1_epi32(16);
  std::size_t nc = 0;
  for (std::size_t j = 0; j < c.kpad; j += 16) {
    const __m512 a = _mm512_fmadd_ps(_mm512_loadu_ps(srow + j), m2, _mm512_loadu_ps(c.bias.data() + j));
    const __mmask16 mk = _mm512_cmp_ps_mask(a, vt, _CMP_LE_OQ);
    if (mk) {
      _mm512_mask_compressstoreu_epi32(cand + nc, mk, idx);
      nc += static_cast<std::size_t>(std::popcount(static_cast<unsigned>(mk)));
    }
    idx = _mm512_add_epi32(idx, step);
  }
  return nc;
}

// Float32 scores of (row, centroid) pairs exactly as the SIMD kernels compute them: a fused
// multiply-add per feature in feature order from zero, then ||c||^2 - 2 acc in one rounding.
// Eight independent pairs at a time keep the FMA units busy despite each chain's latency.
FLASHKM_AMX void rescore(const AmxCentroids& c, const float* xc, const std::uint32_t* prow,
                         const std::uint32_t* pcen, std::size_t np, float* out) {
  const std::size_t dim = c.dim;
  for (std::size_t p = 0; p < np; p += 8) {
    const std::size_t q = std::min<std::size_t>(8, np - p);
    const float* xr[8];
    const float* cr[8];
    float acc[8];
    for (std::size_t t = 0; t < 8; ++t) {
      const std::size_t u = p + std::min(t, q - 1);
      xr[t] = xc + static_cast<std::size_t>(prow[u]) * dim;
      cr[t] = c.cf.data() + static_cast<std::size_t>(pcen[u]) * dim;
      acc[t] = 0.0f;
    }
    for (std::size_t j = 0; j < dim; ++j) {
#pragma GCC unroll 8
      for (std::size_t t = 0; t < 8; ++t) acc[t] = __builtin_fmaf(xr[t][j], cr[t][j], acc[t]);
    }
    for (std::size_t t = 0; t < q; ++t) out[p + t] = __builtin_fmaf(acc[t], -2.0f, c.norm[pcen[p + t]]);
  }
}

// Round to nearest even bfloat16 of 16 finite floats, as the low halves of 16 int32 lanes.
FLASHKM_AMX inline __m512i bf16_rne(__m512i u) {
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  return _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), odd)), 16);
}

// Rows of X into the A operand, one segment per product (amx_pack's pairs).
FLASHKM_AMX void pack_rows(const AmxCentroids& c, const PointsRef<float>& pts, std::size_t r, std::size_t m,
                           std::uint16_t* a, std::size_t a_stride) {
  for (std::size_t i = 0; i < kRows; ++i) {
    std::uint16_t* dst = a + i * a_stride;
    if (i >= m) {
      std::fill_n(dst, a_stride, std::uint16_t{0});
      continue;
    }
    const float* x = pts.x + (r + i) * pts.stride;
    for (std::size_t j = 0; j < c.dpad; j += 16) {
      // The row's 16-bit pieces: bfloat16 rows are their float32 values' upper halves (exact);
      // float16 rows are hi + lo, both bfloat16 (exact: float16 has 11 significant bits).
      const __mmask16 live = j + 16 <= c.dim ? __mmask16(0xFFFF)
                             : j < c.dim     ? static_cast<__mmask16>((1u << (c.dim - j)) - 1)
                                             : __mmask16(0);
      const __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(live, x + j));
      __m256i piece[2];
      if (!c.fp16) {
        piece[0] = _mm512_cvtepi32_epi16(_mm512_srli_epi32(u, 16));
        piece[1] = _mm256_setzero_si256();
      } else {
        const __m512i hi = bf16_rne(u);
        const __m512 rest = _mm512_sub_ps(_mm512_castsi512_ps(u), _mm512_castsi512_ps(_mm512_slli_epi32(hi, 16)));
        piece[0] = _mm512_cvtepi32_epi16(hi);
        piece[1] = _mm512_cvtepi32_epi16(bf16_rne(_mm512_castps_si512(rest)));
      }
      for (std::size_t sg = 0; sg < c.segments; ++sg) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + sg * c.dpad + j), piece[c.seg_x[sg]]);
      }
    }
  }
}

template <bool kTiles>
FLASHKM_AMX std::size_t assign_rows_half(const AmxCentroids& c, const PointsRef<float>& pts,
                                         const AmxRescore& rs, std::size_t r0, std::size_t r1,
                                         std::int32_t* labels, float* dist) {
  if constexpr (kTiles) {
    TileConfig cfg;
    for (int t = 0; t < 8; ++t) {
      cfg.colsb[t] = 64;
      cfg.rows[t] = 16;
    }
    _tile_loadconfig(&cfg);
  }

  const std::size_t dim = c.dim;
  const std::size_t a_stride = c.segments * c.dpad;
  const std::size_t xrows = (kRows + rs.pad - 1) / rs.pad * rs.pad;
  // Per-thread scratch kept across calls: ~0.6 MB at K = 1000, which malloc would otherwise
  // map and unmap (page faults) for every task of rows.
  thread_local Scratch scratch;
  // Candidates kept per block before it goes to the float32 kernels: max(4, K/8) per row.
  const std::size_t max_pairs = kRows * std::max<std::size_t>(4, c.k / 8);
  std::uint16_t* a = scratch.a.reserve(kRows * a_stride);
  float* s = scratch.s.reserve(kRows * c.kpad);
  float* xc = scratch.xc.reserve(xrows * dim);
  float* xnorm = scratch.xnorm.reserve(xrows);
  float* rowmin = scratch.rowmin.reserve(kRows * 16);
  std::uint32_t* prow = scratch.prow.reserve(max_pairs + c.kpad);
  std::uint32_t* pcen = scratch.pcen.reserve(max_pairs + c.kpad);
  float* score = scratch.score.reserve(max_pairs + c.kpad);
  std::size_t row_first[kRows + 1];

  const double norm_slack = 1 + (static_cast<double>(dim) + 4) * 0x1p-24;
  std::size_t changed = 0, pairs = 0, fallback_rows = 0;
  for (std::size_t rb = r0; rb < r1; rb += kRows) {
    const std::size_t m = std::min(kRows, r1 - rb);
    pack_rows(c, pts, rb, m, a, a_stride);
    rs.center_rows(pts, rb, m, xc, xnorm);
    if constexpr (kTiles) {
      tile_scores(c, a, a_stride, s, rowmin);
    } else {
      dp_scores(c, a, a_stride, s, rowmin);
    }
    std::size_t np = 0;
    bool unfiltered = false;
    for (std::size_t i = 0; i < m; ++i) {
      // Upper bounds: ||x - shift|| from the float32 norm of the centred row (D roundings of
      // the sum, one of the centring per value), and ||x|| <= ||x - shift|| + ||shift||.
      const double xcn = std::sqrt(static_cast<double>(xnorm[i])) * norm_slack;
      const double xu = (xcn + c.shift_norm) * (1 + 0x1p-40);
      row_first[i] = np;
      const std::size_t nc = filter_row(c, s + i * c.kpad, rowmin + i * 16, xu, xcn, pcen + np);
      // Past max_pairs the bound is too wide to filter (data far from the origin: the tiles see
      // raw rows); the candidate arrays hold max_pairs + kpad, so one more row always fits.
      if (nc == kUnfiltered || np + nc > max_pairs) {
        unfiltered = true;
        break;
      }
      for (std::size_t t = 0; t < nc; ++t) prow[np + t] = static_cast<std::uint32_t>(i);
      np += nc;
    }
    row_first[m] = np;
    if (unfiltered) {
      // The float32 kernels score the block: bitwise the same result.
      changed += rs.assign_rows(pts, rs.packed, c.k, rb, rb + m, labels, dist);
      fallback_rows += m;
      continue;
    }
    rescore(c, xc, prow, pcen, np, score);
    pairs += np;
    for (std::size_t i = 0; i < m; ++i) {
      float best = std::numeric_limits<float>::infinity();
      std::int32_t arg = 0;
      for (std::size_t p = row_first[i]; p < row_first[i + 1]; ++p) {
        if (score[p] < best) {
          best = score[p];
          arg = static_cast<std::int32_t>(pcen[p]);
        }
      }
      const std::size_t r = rb + i;
      changed += labels[r] != arg;
      labels[r] = arg;
      dist[r] = std::max(0.0f, xnorm[i] + best);
    }
  }
  if constexpr (kTiles) _tile_release();
  g_rescored.fetch_add(pairs, std::memory_order_relaxed);
  g_fallback.fetch_add(fallback_rows, std::memory_order_relaxed);
  return changed;
}

}  // namespace

std::size_t amx_assign_rows(const AmxCentroids& c, const PointsRef<float>& pts, const AmxRescore& rescore,
                            std::size_t r0, std::size_t r1, std::int32_t* labels, float* dist,
                            HalfKernel kernel) {
  return kernel == HalfKernel::kTiles ? assign_rows_half<true>(c, pts, rescore, r0, r1, labels, dist)
                                      : assign_rows_half<false>(c, pts, rescore, r0, r1, labels, dist);
}

#else

std::size_t amx_assign_rows(const AmxCentroids&, const PointsRef<float>&, const AmxRescore&, std::size_t,
                            std::size_t, std::int32_t*, float*, HalfKernel) {
  return 0;  // never called: amx_usable() and avx512bf16_usable() are false
}

#endif

std::size_t amx_rescored_pairs() { return g_rescored.load(std::memory_order_relaxed); }
std::size_t amx_fallback_rows() { return g_fallback.load(std::memory_order_relaxed); }

}  // namespace flashkm::detail
