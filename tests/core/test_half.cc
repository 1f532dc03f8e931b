// Half-precision input (float16, bfloat16): bitwise the float32 fit of the same values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "testlib.hpp"

namespace flashkm {
namespace {

// Encodes a float that is exactly representable as a normal IEEE half (or zero).
std::uint16_t to_f16(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  const std::uint32_t sign = (b >> 16) & 0x8000u;
  if ((b & 0x7fffffffu) == 0) return static_cast<std::uint16_t>(sign);
  if (std::isnan(f)) return 0x7e00;
  const int exp = static_cast<int>((b >> 23) & 0xff) - 127 + 15;
  EXPECT_GT(exp, 0);
  EXPECT_LT(exp, 31);
  EXPECT_EQ(b & 0x1fffu, 0u) << f << " is not exact in float16";
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(exp) << 10) | ((b >> 13) & 0x3ffu));
}

std::uint16_t to_bf16(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  EXPECT_EQ(b & 0xffffu, 0u) << f << " is not exact in bfloat16";
  return static_cast<std::uint16_t>(b >> 16);
}

// Blobs on a grid of 1/4 steps (exact in both 16-bit formats), some rows with large norms.
std::vector<float> grid_blobs(std::size_t n, std::size_t d, std::size_t k, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> centre(-100, 100), noise(-8, 8);
  std::vector<int> c(k * d);
  for (int& v : c) v = centre(rng);
  std::vector<float> X(n * d);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t m = rng() % k;
    for (std::size_t j = 0; j < d; ++j) X[i * d + j] = static_cast<float>(c[m * d + j]) + 0.25f * static_cast<float>(noise(rng));
  }
  return X;
}

void check(HalfType type, std::size_t n, std::size_t d, std::size_t k, InitMethod init, const char* path = nullptr) {
  std::vector<float> X = grid_blobs(n, d, k, 3 + k);
  // The 16-bit engine is a float32 one over rows widened a chunk at a time: the same path.
  if (path) EXPECT_EQ(testing::update_path(X, n, d, k), path);
  if (type == HalfType::kBFloat16) {
    for (float& v : X) v = std::round(v);  // bfloat16 keeps 8 significant bits: integers up to 256
  }
  std::vector<std::uint16_t> H(X.size());
  for (std::size_t i = 0; i < X.size(); ++i) H[i] = type == HalfType::kFloat16 ? to_f16(X[i]) : to_bf16(X[i]);
  KMeansOptions o;
  o.n_clusters = k;
  o.init = init;
  o.max_iter = 8;
  o.seed = 4;
  const KMeansResult<float> wide = fit(MatrixView<float>(X.data(), n, d), o);
  const KMeansResult<float> half = fit(HalfView{H.data(), n, d, d, type}, o);
  EXPECT_EQ(0, std::memcmp(wide.centroids.data(), half.centroids.data(), wide.centroids.size() * sizeof(float)));
  EXPECT_EQ(wide.labels, half.labels);
  EXPECT_EQ(wide.inertia, half.inertia);
  EXPECT_EQ(wide.n_iter, half.n_iter);
  EXPECT_EQ(predict(HalfView{H.data(), n, d, d, type}, wide.centroids_view()),
            predict(MatrixView<float>(X.data(), n, d), wide.centroids_view()));
}

TEST(Half, Float16SmallD) { check(HalfType::kFloat16, 4000, 13, 6, InitMethod::kMeansPlusPlus); }
TEST(Half, BFloat16SmallD) { check(HalfType::kBFloat16, 4000, 13, 6, InitMethod::kMeansPlusPlus); }
// D = 2048: a granule is 2048 rows, so 5000 rows are widened in three chunks.
TEST(Half, Float16SeveralChunksGlobalUpdate) { check(HalfType::kFloat16, 5000, 2048, 40, InitMethod::kRandom, "grouped"); }
TEST(Half, BFloat16SeveralChunksFused) { check(HalfType::kBFloat16, 5000, 2048, 3, InitMethod::kRandom, "fused"); }

TEST(Half, NormsBeyondHalfRangeDoNotOverflow) {
  // Every value is 200: ||x||^2 = 200^2 * 64 = 2.56e6, far beyond the float16 maximum 65504.
  const std::size_t n = 300, d = 64;
  std::vector<std::uint16_t> H(n * d, to_f16(200.0f));
  for (std::size_t i = n / 2; i < n; ++i) {
    for (std::size_t j = 0; j < d; ++j) H[i * d + j] = to_f16(-200.0f);
  }
  KMeansOptions o;
  o.n_clusters = 2;
  const auto r = fit(HalfView{H.data(), n, d, d, HalfType::kFloat16}, o);
  EXPECT_EQ(r.labels[0] == r.labels[n - 1], false);
  EXPECT_NEAR(r.inertia, 0.0, 1e-6);
  for (float v : r.centroids) EXPECT_EQ(std::abs(v), 200.0f);
}

TEST(Half, NonFiniteHalfIsNamed) {
  const std::size_t n = 100, d = 5;
  std::vector<std::uint16_t> H(n * d, to_f16(1.5f));
  H[37 * d + 4] = 0x7c00;  // +inf
  KMeansOptions o;
  o.n_clusters = 2;
  try {
    fit(HalfView{H.data(), n, d, d, HalfType::kFloat16}, o);
    FAIL() << "expected InvalidData";
  } catch (const InvalidData& e) {
    EXPECT_NE(std::string(e.what()).find("+inf at row 37, column 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fit(HalfView{H.data(), n, d, d - 1, HalfType::kFloat16}, o), InvalidArgument);
}

}  // namespace
}  // namespace flashkm
