// Half-precision input: fit and predict over 16-bit rows, widened by the backend's RowSource
// a chunk at a time (no widened copy of X).
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "flashkm/half.hpp"
#include "flashkm/kmeans.hpp"

namespace flashkm {

KMeansResult<float> fit(HalfView X, const KMeansOptions& options) {
  const auto source = detail::make_half_source(X, options.n_threads);
  return fit(*source, options);
}

std::vector<std::string> available_half_targets() { return detail::half_target_names(); }

std::vector<std::int32_t> predict(HalfView X, MatrixView<float> centroids, const PredictOptions& options) {
  const auto source = detail::make_half_source(X, options.n_threads);
  return predict(*source, centroids, options);
}

}  // namespace flashkm
