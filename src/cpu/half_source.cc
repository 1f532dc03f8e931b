// 16-bit input: a RowSource that widens float16 / bfloat16 rows to float32 a chunk at a time,
// and tells the CPU engine the rows' 16-bit type (HalfBacked) so that it may use AMX tiles.
#include "cpu/half_source.hpp"

#include <omp.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "cpu/half_convert.hpp"
#include "flashkm/errors.hpp"

namespace flashkm::detail {
namespace {


class HalfSource final : public RowSource<float>, public HalfBacked {
 public:
  // Widens each chunk on n_threads threads (0 = all cores), as the fit computes.
  HalfSource(HalfView x, int n_threads) : x_(x), threads_(n_threads > 0 ? n_threads : omp_get_max_threads()) {
    if (x.data == nullptr) throw InvalidArgument("X: data pointer is null");
    if (x.rows == 0 || x.cols == 0) {
      throw InvalidArgument("X has shape " + std::to_string(x.rows) + " x " + std::to_string(x.cols) +
                            "; need at least one row and one column");
    }
    if (x.stride < x.cols) {
      throw InvalidArgument("X: row stride " + std::to_string(x.stride) + " is smaller than the number of columns " +
                            std::to_string(x.cols));
    }
  }
  std::size_t rows() const override { return x_.rows; }
  std::size_t cols() const override { return x_.cols; }
  void begin_pass(std::size_t granule) override {
    chunk_ = granule;  // one granule: the smallest buffer the engine accepts
    next_ = 0;
  }
  MatrixView<float> next_chunk(std::size_t* first) override {
    *first = next_;
    const std::size_t m = std::min(chunk_, x_.rows - next_);
    buf_.resize(m * x_.cols);
    const std::size_t first_row = next_;
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (std::size_t i = 0; i < m; ++i) widen(first_row + i, buf_.data() + i * x_.cols);
    next_ += m;
    return MatrixView<float>(buf_.data(), m, x_.cols);
  }
  void read_row(std::size_t i, float* out) override { widen(i, out); }
  HalfType half_type() const override { return x_.type; }

 private:
  void widen(std::size_t row, float* out) const {
    widen_half(x_.data + row * x_.stride, x_.cols, out, x_.type == HalfType::kBFloat16);
  }

  HalfView x_;
  int threads_;
  std::size_t chunk_ = 0;
  std::size_t next_ = 0;
  std::vector<float> buf_;
};

}  // namespace

std::unique_ptr<RowSource<float>> make_half_source(HalfView X, int n_threads) {
  return std::make_unique<HalfSource>(X, n_threads);
}

}  // namespace flashkm::detail
