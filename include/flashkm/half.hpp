// Half-precision input: float16 or bfloat16 rows, clustered with float32 arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "flashkm/matrix_view.hpp"
#include "flashkm/options.hpp"
#include "flashkm/result.hpp"

namespace flashkm {

/// The 16-bit float formats flashkm reads.
enum class HalfType {
  kFloat16,   ///< IEEE 754 binary16 (numpy float16)
  kBFloat16,  ///< bfloat16 (the upper half of a float32; ml_dtypes.bfloat16)
};

/// Rows of raw 16-bit floats in the caller's memory (row i at data + i * stride, stride >= cols).
struct HalfView {
  const std::uint16_t* data = nullptr;
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t stride = 0;
  HalfType type = HalfType::kFloat16;
};

/// k-means on half-precision rows without a widened copy of X: rows are widened to float32 one
/// chunk (~16 MiB of float32 rows) at a time as each pass reads them, so memory holds X in 16
/// bits plus one chunk; products accumulate in float32, centroid sums in float64, centroids come
/// back in float32. The result is bitwise the float32 fit of the widened rows (the widening is
/// exact), on AMX tiles too (available_half_targets()). Norms are float32: no overflow for rows
/// whose squared norm exceeds 65504.
KMeansResult<float> fit(HalfView X, const KMeansOptions& options);

/// The targets a fit or predict on 16-bit input can run; the first is the default: "AMX_BF16"
/// where the CPU has AMX-BF16 and the kernel grants the tile state -- FlashAssign on AMX
/// tiles, whose scores only filter the centroids, the float32 kernels deciding, so results stay
/// bitwise those of the widening path -- then available_targets(), whose kernels run on rows
/// widened to float32, then "AVX512_BF16" where the CPU has it: the same filter computed with
/// VDPBF16PS, offered only when named (it ran at half the float32 kernels' speed on Sapphire
/// Rapids). Forcing either 16-bit target (option or FLASHKM_TARGET) on float32 or float64 input
/// throws InvalidArgument.
std::vector<std::string> available_half_targets();

/// Nearest of the float32 centroids for every half-precision row (one streamed pass).
std::vector<std::int32_t> predict(HalfView X, MatrixView<float> centroids, const PredictOptions& options = {});

}  // namespace flashkm
