// fit / predict over a RowSource (streamed chunks) give bitwise the in-memory results.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "testlib.hpp"

namespace flashkm {
namespace {

using testing::blobs;

// A RowSource over a vector that hands out copies of `mult` granules per chunk (so the engine
// never sees the in-memory matrix), counting passes.
template <class T>
class VectorSource final : public RowSource<T> {
 public:
  VectorSource(const std::vector<T>& x, std::size_t n, std::size_t d, std::size_t mult, bool misalign = false)
      : x_(x), n_(n), d_(d), mult_(mult), misalign_(misalign) {}
  std::size_t rows() const override { return n_; }
  std::size_t cols() const override { return d_; }
  void begin_pass(std::size_t granule) override {
    EXPECT_EQ(granule, row_source_granule(d_, sizeof(T)));
    chunk_ = granule * mult_ + (misalign_ ? 1 : 0);
    next_ = 0;
    ++passes_;
  }
  MatrixView<T> next_chunk(std::size_t* first) override {
    *first = next_;
    const std::size_t m = std::min(chunk_, n_ - next_);
    buf_.assign(x_.begin() + static_cast<std::ptrdiff_t>(next_ * d_),
                x_.begin() + static_cast<std::ptrdiff_t>((next_ + m) * d_));
    next_ += m;
    return MatrixView<T>(buf_.data(), m, d_);
  }
  void read_row(std::size_t i, T* out) override { std::memcpy(out, x_.data() + i * d_, d_ * sizeof(T)); }
  int passes() const { return passes_; }

 private:
  const std::vector<T>& x_;
  std::size_t n_, d_, mult_;
  bool misalign_;
  std::size_t chunk_ = 0, next_ = 0;
  std::vector<T> buf_;
  int passes_ = 0;
};

template <class T>
void expect_same(const KMeansResult<T>& a, const KMeansResult<T>& b) {
  ASSERT_EQ(a.centroids.size(), b.centroids.size());
  EXPECT_EQ(0, std::memcmp(a.centroids.data(), b.centroids.data(), a.centroids.size() * sizeof(T)));
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.inertia, b.inertia);
  EXPECT_EQ(a.n_iter, b.n_iter);
  EXPECT_EQ(a.best_init, b.best_init);
  ASSERT_EQ(a.history.size(), b.history.size());
  for (std::size_t i = 0; i < a.history.size(); ++i) {
    EXPECT_EQ(a.history[i].inertia, b.history[i].inertia) << "iteration " << i;
    EXPECT_EQ(a.history[i].center_shift, b.history[i].center_shift) << "iteration " << i;
  }
}

struct Case {
  std::size_t d, k, extra_rows, granules;
  InitMethod init;
  bool weighted;
  int n_init;
  const char* path;  // the update path the test's name claims (Engine::update_path)
};

// Shapes chosen so that N spans 2-3 granules plus a ragged tail (the granule is ~16 MiB of
// rows), with K both on the fused small-K path and on the global Sort-Inverse path.
template <class T>
void run_case(const Case& c, std::size_t mult) {
  const std::size_t g = row_source_granule(c.d, sizeof(T));
  const std::size_t n = c.granules * g + c.extra_rows;
  const std::vector<T> X = blobs<T>(n, c.d, c.k, 7 + c.k, 3.0, 100.0);
  EXPECT_EQ(testing::update_path(X, n, c.d, c.k), c.path);
  std::vector<double> w;
  KMeansOptions opt;
  opt.n_clusters = c.k;
  opt.init = c.init;
  opt.n_init = c.n_init;
  opt.max_iter = 8;
  opt.seed = 11;
  opt.n_threads = 2;
  if (c.weighted) {
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(0.0, 2.0);
    w.resize(n);
    for (double& v : w) v = u(rng);
    opt.sample_weight = w;
  }
  const KMeansResult<T> in_memory = fit(MatrixView<T>(X.data(), n, c.d), opt);
  VectorSource<T> src(X, n, c.d, mult);
  const KMeansResult<T> streamed = fit(src, opt);
  expect_same(in_memory, streamed);
  // Centre + variance passes, then one pass per iteration (+1 final assignment at most), plus
  // two per k-means++ centre, plus one per iteration that relocated empty clusters after a
  // pruned assignment (the farthest points' distances are recomputed where pruning left them
  // stale: CpuEngine::farthest).
  int relocating = 0;
  for (const auto& h : streamed.history) relocating += h.empty_relocated > 0;
  const int lloyd = static_cast<int>(streamed.history.size()) + c.n_init + relocating;
  const int init = c.init == InitMethod::kMeansPlusPlus ? c.n_init * (2 * static_cast<int>(c.k)) : 0;
  EXPECT_LE(src.passes(), 2 + lloyd + init);

  VectorSource<T> src2(X, n, c.d, mult);
  MatrixView<T> C(in_memory.centroids.data(), c.k, c.d);
  EXPECT_EQ(predict(MatrixView<T>(X.data(), n, c.d), C), predict(src2, C));
}

TEST(Stream, FloatFusedPathKMeansPlusPlus) {
  run_case<float>({1000, 6, 123, 2, InitMethod::kMeansPlusPlus, false, 1, "fused"}, 1);
}

TEST(Stream, FloatGlobalUpdateRandomInitWeighted) {
  run_case<float>({1000, 40, 77, 2, InitMethod::kRandom, true, 2, "grouped"}, 1);
}

TEST(Stream, DoubleGlobalUpdateTwoGranuleChunks) {
  run_case<double>({2048, 20, 1, 3, InitMethod::kMeansPlusPlus, false, 1, "grouped"}, 2);
}

TEST(Stream, DoubleFusedWeighted) {
  run_case<double>({2000, 3, 500, 2, InitMethod::kRandom, true, 1, "fused"}, 1);
}

TEST(Stream, MisalignedChunksAreRefused) {
  const std::size_t d = 4096;
  const std::size_t g = row_source_granule(d, sizeof(float));
  const std::size_t n = 2 * g + 5;
  const std::vector<float> X = blobs<float>(n, d, 3, 5);
  VectorSource<float> src(X, n, d, 1, /*misalign=*/true);
  KMeansOptions opt;
  opt.n_clusters = 3;
  try {
    fit(src, opt);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("whole multiples of " + std::to_string(g)), std::string::npos) << e.what();
  }
}

TEST(Stream, NonFiniteValueIsNamedByGlobalRow) {
  const std::size_t d = 4096;
  const std::size_t g = row_source_granule(d, sizeof(float));
  const std::size_t n = 2 * g + 5;
  std::vector<float> X = blobs<float>(n, d, 3, 5);
  X[(g + 17) * d + 9] = std::numeric_limits<float>::quiet_NaN();
  VectorSource<float> src(X, n, d, 1);
  KMeansOptions opt;
  opt.n_clusters = 3;
  try {
    fit(src, opt);
    FAIL() << "expected InvalidData";
  } catch (const InvalidData& e) {
    EXPECT_NE(std::string(e.what()).find("NaN at row " + std::to_string(g + 17) + ", column 9"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace flashkm
