// Test helpers: random data sets and a float64 textbook Lloyd to compare flashkm against.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "flashkm/flashkm.hpp"

namespace flashkm::testing {

/// n x d values drawn as `k` Gaussian blobs (centres ~ N(0, spread^2), unit noise) plus a
/// common offset, in type T.
template <class T>
std::vector<T> blobs(std::size_t n, std::size_t d, std::size_t k, std::uint64_t seed,
                     double spread = 4.0, double offset = 0.0);

/// X's values as 16-bit `type` bits, truncated (bfloat16: the top 16 bits; float16: the top 10
/// mantissa bits, zero below float16's normal range; X must stay below its 65504), and X
/// replaced by the float32 value of each, so that X and the bits hold the same numbers.
std::vector<std::uint16_t> to_half(std::vector<float>& X, HalfType type);

/// n x d small integers in [-range, range]: every product and sum of a kernel is exact in
/// float32, so SIMD and reference kernels must agree bit for bit.
template <class T>
std::vector<T> small_ints(std::size_t n, std::size_t d, std::uint64_t seed, int range = 8);

/// Options that start a fit from the k x d float64 centroids C0 (which must outlive them).
KMeansOptions explicit_init(const std::vector<double>& C0, std::size_t k, std::size_t d);

/// Rows `ids` of X (n x d) as a K x d float64 matrix.
template <class T>
std::vector<double> pick_rows(const std::vector<T>& X, std::size_t d, const std::vector<std::size_t>& ids);

/// k distinct row indices in [0, n).
std::vector<std::size_t> distinct_ids(std::size_t n, std::size_t k, std::uint64_t seed);

struct RefLloyd {
  std::vector<double> centroids;
  std::vector<std::int32_t> labels;
  double inertia = 0;
  int n_iter = 0;
};

/// Textbook Lloyd in float64 with flashkm's documented semantics (strict convergence returns
/// the centroids that produced the labels; tolerance / max_iter end with a final assignment;
/// empty clusters go to the farthest points). Ties go to the lowest index.
template <class T>
RefLloyd reference_lloyd(const std::vector<T>& X, std::size_t n, std::size_t d,
                         std::vector<double> centroids, std::size_t k, int max_iter, double tol_abs,
                         const std::vector<double>& weights = {}, double zero_dist = 0.0);

/// Nearest centroid of every row in float64 (ties: lowest index).
template <class T, class U>
std::vector<std::int32_t> nearest(const std::vector<T>& X, std::size_t n, std::size_t d,
                                  const std::vector<U>& C, std::size_t k);

/// Mean over features of the variance of each column (scikit-learn's tol scale).
template <class T>
double mean_variance(const std::vector<T>& X, std::size_t n, std::size_t d);

/// Squared float64 distance between row `i` of X and row `c` of C.
template <class T, class U>
double sqdist(const T* x, const U* c, std::size_t d);

/// Checks labels against the float64 reference: equal, except where the two candidate
/// centroids are a genuine tie (float64 distances within rel_tie * max + abs_tie). Returns the
/// number of accepted ties; fails the current test on any other mismatch.
template <class T, class U>
std::size_t expect_labels_match(const std::vector<T>& X, std::size_t d, const std::vector<U>& C,
                                const std::vector<std::int32_t>& got,
                                const std::vector<std::int32_t>& want, double rel_tie,
                                double abs_tie = 0.0);

/// The path (Engine::update_path: "fused" or "grouped") a CPU engine over X (n x d) takes for
/// one Lloyd step with k centroids.
template <class T>
std::string update_path(const std::vector<T>& X, std::size_t n, std::size_t d, std::size_t k);

/// The first max_rows images of Fashion-MNIST's training set (Debian's dataset-fashion-mnist,
/// installed by `make test`), scaled to [0, 1]: n x d (d = 784). Empty when not installed.
std::vector<float> load_fashion_mnist(std::size_t max_rows, std::size_t& n, std::size_t& d);

/// A RowSource over x (n x d) in chunks of one granule, copied out of x as a file would be
/// read; counts its passes.
template <class T>
class ChunkSource final : public RowSource<T> {
 public:
  ChunkSource(const std::vector<T>& x, std::size_t n, std::size_t d) : x_(x), n_(n), d_(d) {}
  std::size_t rows() const override { return n_; }
  std::size_t cols() const override { return d_; }
  void begin_pass(std::size_t granule) override {
    chunk_ = granule;
    next_ = 0;
    ++passes_;
  }
  MatrixView<T> next_chunk(std::size_t* first) override {
    *first = next_;
    const std::size_t m = std::min(chunk_, n_ - next_);
    buf_.assign(x_.begin() + static_cast<std::ptrdiff_t>(next_ * d_), x_.begin() + static_cast<std::ptrdiff_t>((next_ + m) * d_));
    next_ += m;
    return MatrixView<T>(buf_.data(), m, d_);
  }
  void read_row(std::size_t i, T* out) override { std::memcpy(out, x_.data() + i * d_, d_ * sizeof(T)); }
  /// Passes begun so far.
  std::size_t passes() const { return passes_; }

 private:
  const std::vector<T>& x_;
  std::size_t n_, d_;
  std::size_t chunk_ = 0, next_ = 0, passes_ = 0;
  std::vector<T> buf_;
};

}  // namespace flashkm::testing
