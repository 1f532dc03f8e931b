// Private header: FlashAssign on AMX tiles for 16-bit input (docs/KERNELS.md, "AMX").
//
// The tiles multiply bfloat16 pairs into float32 accumulators at ~16x the AVX-512 float32 FMA
// rate. Rows of X go into the tiles as they are (bfloat16; float16 as the exact sum of two
// bfloat16 values); the float32 centroids as the sum of two bfloat16 values (hi + lo, which
// carries 16 of float32's 24 significand bits). That gives every score to within a bound that
// is known for each row, so the tiles only *filter*: every centroid whose tile score is within
// twice that bound of the row's smallest is re-scored with exactly the float32 arithmetic of
// the SIMD kernels (same centring, same fused multiply-adds in the same order, same norms), and
// the smallest of those wins. Labels and distances are therefore bitwise those of the float32
// kernels on the widened rows; the tiles only decide how few centroids need the float32 work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cpu/aligned_buffer.hpp"
#include "cpu/kernel_table.hpp"

namespace flashkm::detail {

/// True when this CPU has AMX-TILE and AMX-BF16 and the kernel granted this process the tile
/// state (arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)); asked once, then cached.
bool amx_usable();

/// True when this CPU has AVX-512 (F, BW, DQ, VL) with AVX512_BF16 (VDPBF16PS).
bool avx512bf16_usable();

/// The target names under which the 16-bit kernels are offered and reported.
inline constexpr const char* kAmxTargetName = "AMX_BF16";
inline constexpr const char* kDpbf16TargetName = "AVX512_BF16";

/// What computes the filtering scores: AMX tiles, or AVX-512-BF16 dot products (same operands,
/// same bound, same re-scoring; for CPUs without AMX).
enum class HalfKernel { kTiles, kDpbf16 };

/// Pieces per centroid value the engine uses. One: on this machine the tiles are bound by
/// tile loads (each ~3x a TDPBF16PS), so halving the depth halves the tile time, while the
/// wider bound re-scores only ~1.3 centroids per row on 128-dimensional data
/// (bench/results/performance-log.md, "16-bit input on AMX tiles"). Two stays available to
/// amx_pack and tested.
inline constexpr std::size_t kAmxPieces = 1;

/// Centroids prepared for the tiles, once per iteration.
struct AmxCentroids {
  std::size_t k = 0, dim = 0;
  std::size_t kpad = 0;     // k rounded up to 32 (two 16-wide tiles at a time)
  std::size_t dpad = 0;     // dim rounded up to 32 (one tile's depth)
  std::size_t pieces = 0;   // bfloat16 pieces per centroid value: 1 (hi) or 2 (hi + lo)
  std::size_t segments = 0; // products per score along the depth (pieces, +1 for float16 rows)
  int seg_x[3] = {}, seg_c[3] = {};  // per segment: piece of the row, piece of the centroid
  bool fp16 = false;        // X is IEEE float16 (split into hi + lo bfloat16 while packing)
  AlignedBuffer<std::uint16_t> tiles;  // [kpad/16][steps][16][32] bfloat16
  std::vector<float> bias;  // kpad: ||c||^2 (the SIMD kernels' float32 norm) + 2 shift.c; +inf padding
  std::vector<float> cf;    // k x dim: the float32 centroids the SIMD kernels multiply with
  std::vector<float> norm;  // k: their float32 norms exactly as packed by the SIMD kernels
  double nmax = 0;          // largest ||c||
  double delta = 0;         // largest ||c - (what the pieces carry)||
  double lo_max = 0;        // largest ||lo piece||
  double shift_norm = 0;    // ||shift||
};

/// Prepares k centred centroids (float64, k x dim) for amx_assign_rows. `norms` are the k
/// float32 norms the SIMD kernels packed (zeros for the inner-product metrics), `shift` the
/// float32 centring vector; `pieces` (1 or 2) bfloat16 values carry each float32 centroid value:
/// one piece halves the tile work and widens the filter's bound (more re-scoring).
void amx_pack(const double* centroids, std::size_t k, std::size_t dim, const float* norms,
              const float* shift, bool fp16, std::size_t pieces, AmxCentroids* out);

/// The AMX tile configuration (palette 1): LDTILECFG's 64-byte operand.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};  // bytes per row of each tile
  std::uint8_t rows[16] = {};    // rows of each tile
};

/// The float32 side: the SIMD target's own centring of rows (its PackSliver, `pad` rows at a
/// time) so that re-scored pairs are bitwise its own, and its FlashAssign over its packed
/// centroids for blocks of rows where the bound is too wide to filter.
struct AmxRescore {
  void (*center_rows)(const PointsRef<float>& pts, std::size_t r, std::size_t m, float* out, float* xnorm);
  std::size_t pad;
  std::size_t (*assign_rows)(const PointsRef<float>& pts, const float* packed, std::size_t k, std::size_t r0,
                             std::size_t r1, std::int32_t* labels, float* dist);
  const float* packed;
};

/// FlashAssign over rows [r0, r1) of `pts`, rows whose values are all exactly 16-bit floats
/// of the type amx_pack was told: the contract of PanelKernels::assign_rows, with bitwise the
/// labels and distances of the float32 kernels whose centring `rescore` is. Call kTiles only
/// when amx_usable(), kDpbf16 only when avx512bf16_usable().
std::size_t amx_assign_rows(const AmxCentroids& c, const PointsRef<float>& pts, const AmxRescore& rescore,
                            std::size_t r0, std::size_t r1, std::int32_t* labels, float* dist,
                            HalfKernel kernel = HalfKernel::kTiles);

/// (row, centroid) pairs re-scored in float32 by this process so far: how well the tiles filter
/// (one per row is the least possible). For tests and benchmarks.
std::size_t amx_rescored_pairs();

/// Rows this process handed to the float32 kernels because the bound was too wide to filter.
std::size_t amx_fallback_rows();

}  // namespace flashkm::detail
