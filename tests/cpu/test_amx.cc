// FlashAssign on AMX tiles (16-bit input): labels and distances bitwise those of the float32
// SIMD kernels and the scalar reference, on awkward shapes; the tiles really filter; whole fits
// equal the widening path and the float32 fit; the forced-target switch selects the path.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cpuid.h>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include <hwy/aligned_allocator.h>

#include "cpu/amx.hpp"
#include "cpu/kernel_table.hpp"
#include "flashkm/half.hpp"
#include "testlib.hpp"

namespace flashkm {
namespace {

using detail::amx_usable;

// Rounds to the nearest bfloat16 / float16 value (normal range) and returns it as a float.
float round_bf16(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return std::bit_cast<float>(u & 0xFFFF0000u);
}
float round_f16(float f) {
  // 11 significant bits: round the float32 significand at bit 13; below the smallest normal
  // half (2^-14) to zero, so that every value is a normal half.
  if (std::abs(f) < 0x1p-14f) return 0.0f;
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  u += 0xFFFu + ((u >> 13) & 1u);
  return std::bit_cast<float>(u & 0xFFFFE000u);
}
std::uint16_t bits_bf16(float f) { return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(f) >> 16); }
std::uint16_t bits_f16(float f) {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (b >> 16) & 0x8000u;
  if ((b & 0x7fffffffu) == 0) return static_cast<std::uint16_t>(sign);
  const int exp = static_cast<int>((b >> 23) & 0xff) - 127 + 15;
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(exp) << 10) | ((b >> 13) & 0x3ffu));
}

struct Shape {
  std::size_t n, d, k;
  double offset;
  bool duplicates;
};

// Gaussian rows (plus an offset) rounded to the 16-bit type, kept as float32.
std::vector<float> data16(const Shape& s, bool bf16, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> X(s.n * s.d);
  for (auto& v : X) {
    const float x = static_cast<float>(s.offset) + 3.0f * g(rng);
    v = bf16 ? round_bf16(x) : round_f16(x);
  }
  if (s.duplicates) {
    for (std::size_t i = 1; i < s.n; i += 2) std::copy_n(X.data() + (i - 1) * s.d, s.d, X.data() + i * s.d);
  }
  return X;
}

class AmxKernel : public ::testing::TestWithParam<std::tuple<Shape, bool, bool, std::size_t, detail::HalfKernel>> {};

// The kernel on its own against the float32 SIMD kernels and the scalar reference: centroids
// drawn near rows (so that many rows have close second choices), shift = rounded column means.
TEST_P(AmxKernel, BitwiseTheFloat32Kernels) {
  const auto [s, bf16, inner, pieces, kernel] = GetParam();
  if (kernel == detail::HalfKernel::kTiles && !amx_usable()) {
    GTEST_SKIP() << "this CPU has no AMX-BF16 (or the kernel refused the tile state)";
  }
  if (kernel == detail::HalfKernel::kDpbf16 && !detail::avx512bf16_usable()) GTEST_SKIP() << "no AVX512_BF16 here";
  const std::vector<float> X = data16(s, bf16, 11 + s.n + s.d);
  std::mt19937_64 rng(5 + s.k);
  std::normal_distribution<double> g(0.0, 0.3);
  std::vector<float> shift(s.d, 0.0f);
  if (!inner) {
    for (std::size_t j = 0; j < s.d; ++j) {
      double m = 0;
      for (std::size_t i = 0; i < s.n; ++i) m += X[i * s.d + j];
      shift[j] = static_cast<float>(m / static_cast<double>(s.n));
    }
  }
  std::vector<double> C(s.k * s.d);
  for (std::size_t c = 0; c < s.k; ++c) {
    const std::size_t r = rng() % s.n;
    for (std::size_t j = 0; j < s.d; ++j) C[c * s.d + j] = X[r * s.d + j] - shift[j] + g(rng);
  }
  const detail::PointsRef<float> pts{X.data(), s.d, s.d, shift.data()};

  const auto* simd = detail::kernel_tables<float>().front();
  const auto& panel = s.k <= simd->narrow.nr ? simd->narrow : simd->wide;
  // The panels are read with aligned loads, as the engine allocates them.
  auto packed = hwy::AllocateAligned<float>(panel.packed_size(s.k, s.d));
  panel.pack_centroids(C.data(), s.k, s.d, packed.get());
  const std::size_t npanels = (s.k + panel.nr - 1) / panel.nr;
  float* pnorms = packed.get() + npanels * panel.nr * s.d;
  if (inner) std::fill_n(pnorms, s.k, 0.0f);

  const auto& ref = detail::reference_table<float>();
  std::vector<float> rpacked(ref.wide.packed_size(s.k, s.d));
  ref.wide.pack_centroids(C.data(), s.k, s.d, rpacked.data());
  if (inner) std::fill_n(rpacked.data() + s.k * s.d, s.k, 0.0f);

  detail::AmxCentroids amx;
  detail::amx_pack(C.data(), s.k, s.d, pnorms, shift.data(), !bf16, pieces, &amx);

  std::vector<std::int32_t> lab_simd(s.n, -1), lab_ref(s.n, -1), lab_amx(s.n, -1);
  std::vector<float> d_simd(s.n), d_ref(s.n), d_amx(s.n);
  panel.assign_rows(pts, packed.get(), s.k, 0, s.n, lab_simd.data(), d_simd.data());
  ref.wide.assign_rows(pts, rpacked.data(), s.k, 0, s.n, lab_ref.data(), d_ref.data());
  const detail::AmxRescore rescore{simd->center_rows, simd->center_pad, panel.assign_rows, packed.get()};
  const std::size_t before = detail::amx_rescored_pairs();
  const std::size_t fell_before = detail::amx_fallback_rows();
  // Two calls over a split range: rows need not start on a block boundary.
  const std::size_t mid = s.n / 3;
  const std::size_t changed =
      detail::amx_assign_rows(amx, pts, rescore, 0, mid, lab_amx.data(), d_amx.data(), kernel) +
      detail::amx_assign_rows(amx, pts, rescore, mid, s.n, lab_amx.data(), d_amx.data(), kernel);
  const std::size_t rescored = detail::amx_rescored_pairs() - before;
  const std::size_t fell = detail::amx_fallback_rows() - fell_before;
  EXPECT_EQ(changed, s.n);
  EXPECT_EQ(lab_amx, lab_simd);
  EXPECT_EQ(lab_amx, lab_ref);
  EXPECT_EQ(0, std::memcmp(d_amx.data(), d_simd.data(), s.n * sizeof(float)));
  // Every row is either re-scored (at least its winner) or handed to the float32 kernels.
  EXPECT_GE(rescored + fell, s.n);
  EXPECT_LE(rescored, s.n * s.k);
  EXPECT_LE(fell, s.n);
  // Data near the origin: the filter leaves a few candidates per row, not all of them.
  if (s.offset == 0.0 && s.k >= 64) {
    EXPECT_EQ(fell, 0u);
    EXPECT_LT(static_cast<double>(rescored) / static_cast<double>(s.n), pieces == 2 ? 3.0 : 8.0);
  }
  // Far from the origin with one piece, the bound is wide: blocks go to the float32 kernels.
  if (s.offset >= 1000.0 && pieces == 1 && !inner) EXPECT_GT(fell, 0u);
  // Unchanged labels are counted as unchanged.
  EXPECT_EQ(detail::amx_assign_rows(amx, pts, rescore, 0, s.n, lab_amx.data(), d_amx.data(), kernel), 0u);
}

// Every 16-bit kernel this CPU has, with 1 and 2 pieces, over rows X (shift zero) against the
// float32 wide panel's assign_rows: labels and distances must be bitwise equal. Returns the
// pairs re-scored and the rows left to the float32 kernels.
struct Counts {
  std::size_t rescored = 0, fell = 0;
};
Counts expect_all_kernels_match(const std::vector<float>& X, std::size_t n, std::size_t d,
                                const std::vector<double>& C, std::size_t k, const std::string& what) {
  const std::vector<float> shift(d, 0.0f);
  const detail::PointsRef<float> pts{X.data(), d, d, shift.data()};
  const auto* simd = detail::kernel_tables<float>().front();
  const auto& panel = simd->wide;
  auto packed = hwy::AllocateAligned<float>(panel.packed_size(k, d));
  panel.pack_centroids(C.data(), k, d, packed.get());
  const float* norms = packed.get() + (k + panel.nr - 1) / panel.nr * panel.nr * d;
  std::vector<std::int32_t> want(n, -1);
  std::vector<float> want_d(n);
  panel.assign_rows(pts, packed.get(), k, 0, n, want.data(), want_d.data());
  const detail::AmxRescore rescore{simd->center_rows, simd->center_pad, panel.assign_rows, packed.get()};
  Counts counts;
  for (std::size_t pieces : {std::size_t{1}, std::size_t{2}}) {
    detail::AmxCentroids amx;
    detail::amx_pack(C.data(), k, d, norms, shift.data(), false, pieces, &amx);
    for (auto kernel : {detail::HalfKernel::kTiles, detail::HalfKernel::kDpbf16}) {
      if (kernel == detail::HalfKernel::kTiles ? !amx_usable() : !detail::avx512bf16_usable()) continue;
      std::vector<std::int32_t> got(n, -1);
      std::vector<float> got_d(n);
      const std::size_t rescored = detail::amx_rescored_pairs(), fell = detail::amx_fallback_rows();
      detail::amx_assign_rows(amx, pts, rescore, 0, n, got.data(), got_d.data(), kernel);
      counts.rescored += detail::amx_rescored_pairs() - rescored;
      counts.fell += detail::amx_fallback_rows() - fell;
      EXPECT_EQ(got, want) << what << ", " << pieces << " piece(s)";
      EXPECT_EQ(0, std::memcmp(got_d.data(), want_d.data(), n * sizeof(float))) << what;
    }
  }
  return counts;
}

// Centroids clustered around one point at scales from well separated to far inside the
// filter's bound, so that rows have near-ties of every size: the candidates the bound keeps
// must always include the float32 winner (and the lowest index among equal scores).
TEST(AmxKernelNearTies, EveryScaleBitwiseTheFloat32Kernels) {
  if (!amx_usable() && !detail::avx512bf16_usable()) GTEST_SKIP() << "no AMX-BF16 or AVX512_BF16 here";
  const std::size_t n = 700, d = 72, k = 96;
  std::mt19937_64 rng(99);
  std::normal_distribution<float> g;
  std::vector<float> X(n * d);
  for (auto& v : X) v = round_bf16(2.0f * g(rng));
  std::size_t rescored_total = 0;
  for (double scale : {1.0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-6, 0.0}) {
    std::vector<double> C(k * d);
    std::vector<double> base(d);
    for (auto& v : base) v = 0.5 * g(rng);
    for (std::size_t c = 0; c < k; ++c) {
      for (std::size_t j = 0; j < d; ++j) C[c * d + j] = base[j] + scale * g(rng);
    }
    rescored_total += expect_all_kernels_match(X, n, d, C, k, "scale " + std::to_string(scale)).rescored;
  }
  // Close centroids made the filter keep several candidates per row somewhere.
  EXPECT_GT(rescored_total, 2 * n);
}

// A row whose squared norm overflows float32 (values near the bfloat16 maximum): the float32
// kernels' scores are NaN or infinite there, and the 16-bit kernels must leave that row to them
// (their NaN rules decide, not a re-scoring of the candidates).
TEST(AmxKernelNearTies, OverflowingRowIsLeftToTheFloat32Kernels) {
  if (!amx_usable() && !detail::avx512bf16_usable()) GTEST_SKIP() << "no AMX-BF16 or AVX512_BF16 here";
  const std::size_t n = 64, d = 40, k = 40;
  std::mt19937_64 rng(5);
  std::normal_distribution<float> g;
  std::vector<float> X(n * d);
  for (auto& v : X) v = round_bf16(g(rng));
  for (std::size_t j = 0; j < d; ++j) X[7 * d + j] = round_bf16((j % 2 ? -1.0f : 1.0f) * 3e38f);
  std::vector<double> C(k * d);
  for (auto& v : C) v = g(rng);
  EXPECT_GT(expect_all_kernels_match(X, n, d, C, k, "overflowing row").fell, 0u);
}

const Shape kShapes[] = {
    {1, 1, 1, 0, false},      {5, 1, 3, 0, false},     {37, 13, 6, 0, false},   {100, 33, 100, 0, false},
    {300, 64, 1, 0, false},   {257, 128, 1000, 0, false}, {64, 2048, 40, 0, false}, {200, 31, 17, 0, true},
    {500, 96, 64, 0, false},  {300, 40, 50, 1000, false}, {129, 8, 33, 0, true},
};

INSTANTIATE_TEST_SUITE_P(Shapes, AmxKernel,
                         ::testing::Combine(::testing::ValuesIn(kShapes), ::testing::Bool(), ::testing::Bool(),
                                            ::testing::Values(std::size_t{1}, std::size_t{2}),
                                            ::testing::Values(detail::HalfKernel::kTiles, detail::HalfKernel::kDpbf16)));

// Whole fits: a 16-bit kernel (AMX tiles or AVX-512-BF16) == the widening path forced by naming
// the SIMD target == the float32 fit of the same values, bit for bit.
void fit_three_ways(HalfType type, std::size_t n, std::size_t d, std::size_t k, Metric metric, const char* target) {
  const bool bf16 = type == HalfType::kBFloat16;
  const auto Xd = testing::blobs<float>(n, d, k, 21 + d, 3.0);
  std::vector<float> X(Xd.size());
  std::vector<std::uint16_t> H(Xd.size());
  for (std::size_t i = 0; i < X.size(); ++i) {
    X[i] = bf16 ? round_bf16(Xd[i]) : round_f16(Xd[i]);
    H[i] = bf16 ? bits_bf16(X[i]) : bits_f16(X[i]);
  }
  KMeansOptions o;
  o.n_clusters = k;
  o.metric = metric;
  o.max_iter = 10;
  o.seed = 7;
  const HalfView hv{H.data(), n, d, d, type};
  o.target = target;
  const auto amx = fit(hv, o);
  EXPECT_EQ(amx.target, target);
  o.target = available_targets().front();
  const auto widened = fit(hv, o);
  EXPECT_EQ(widened.target, available_targets().front());
  const auto wide = fit(MatrixView<float>(X.data(), n, d), o);
  for (const auto* r : {&widened, &wide}) {
    EXPECT_EQ(amx.labels, r->labels);
    EXPECT_EQ(0, std::memcmp(amx.centroids.data(), r->centroids.data(), amx.centroids.size() * sizeof(float)));
    EXPECT_EQ(amx.inertia, r->inertia);
    EXPECT_EQ(amx.n_iter, r->n_iter);
  }
  o.target.clear();
  EXPECT_EQ(predict(hv, wide.centroids_view(), PredictOptions{}), wide.labels);
  PredictOptions po;
  po.target = target;
  EXPECT_EQ(predict(hv, wide.centroids_view(), po), wide.labels);
}

void fit_three_ways(HalfType type, std::size_t n, std::size_t d, std::size_t k, Metric metric) {
  for (const char* t : {"AMX_BF16", "AVX512_BF16"}) {
    const auto names = available_half_targets();
    if (std::find(names.begin(), names.end(), t) != names.end()) fit_three_ways(type, n, d, k, metric, t);
  }
}

TEST(AmxFit, BFloat16EqualsWideningAndFloat32) {
  if (!amx_usable() && !detail::avx512bf16_usable()) GTEST_SKIP() << "no AMX-BF16 or AVX512_BF16 here";
  fit_three_ways(HalfType::kBFloat16, 3000, 64, 40, Metric::kEuclidean);
  fit_three_ways(HalfType::kBFloat16, 2000, 20, 5, Metric::kEuclidean);  // fused small-K path
}

TEST(AmxFit, Float16EqualsWideningAndFloat32) {
  if (!amx_usable() && !detail::avx512bf16_usable()) GTEST_SKIP() << "no AMX-BF16 or AVX512_BF16 here";
  fit_three_ways(HalfType::kFloat16, 3000, 48, 70, Metric::kEuclidean);
}

TEST(AmxFit, InnerProductMetrics) {
  if (!amx_usable() && !detail::avx512bf16_usable()) GTEST_SKIP() << "no AMX-BF16 or AVX512_BF16 here";
  fit_three_ways(HalfType::kBFloat16, 2000, 32, 30, Metric::kCosine);
  fit_three_ways(HalfType::kFloat16, 2000, 32, 30, Metric::kDot);
}

TEST(AmxFit, HalfTargetsListAmxFirstWhereUsable) {
  const auto names = available_half_targets();
  const auto simd = available_targets();
  const std::size_t extra = (amx_usable() ? 1 : 0) + (detail::avx512bf16_usable() ? 1 : 0);
  ASSERT_EQ(names.size(), simd.size() + extra);
  const std::ptrdiff_t first_simd = amx_usable() ? 1 : 0;
  EXPECT_TRUE(std::equal(simd.begin(), simd.end(), names.begin() + first_simd));
  if (amx_usable()) EXPECT_EQ(names.front(), "AMX_BF16");
  if (detail::avx512bf16_usable()) EXPECT_EQ(names.back(), "AVX512_BF16");
  if (__builtin_cpu_supports("avx512f")) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    __get_cpuid_count(7, 1, &a, &b, &c, &d);
    EXPECT_EQ(detail::avx512bf16_usable(), ((a >> 5) & 1u) != 0);
  }
  // Where the CPU reports AMX-BF16, Linux should grant the tile state: if this fails, the
  // AMX path silently never runs here.
  if (__builtin_cpu_supports("avx512f")) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    __get_cpuid_count(7, 0, &a, &b, &c, &d);
    if (((d >> 22) & 1u) && ((d >> 24) & 1u)) EXPECT_TRUE(amx_usable());
  }
}

TEST(AmxFit, ForcedTargetSwitch) {
  const std::size_t n = 200, d = 8;
  std::vector<std::uint16_t> H(n * d);
  std::vector<float> X(n * d);
  std::mt19937 rng(3);
  for (std::size_t i = 0; i < H.size(); ++i) {
    X[i] = static_cast<float>(static_cast<int>(rng() % 64) - 32);
    H[i] = bits_bf16(X[i]);
  }
  KMeansOptions o;
  o.n_clusters = 4;
  o.target = "AMX_BF16";
  // Float input has nothing for the 16-bit kernels to multiply: named, not silently ignored.
  EXPECT_THROW(fit(MatrixView<float>(X.data(), n, d), o), InvalidArgument);
  o.target = "AVX512_BF16";
  EXPECT_THROW(fit(MatrixView<float>(X.data(), n, d), o), InvalidArgument);
  if (detail::avx512bf16_usable()) EXPECT_EQ(fit(HalfView{H.data(), n, d, d, HalfType::kBFloat16}, o).target, "AVX512_BF16");
  o.target = "AMX_BF16";
  const HalfView hv{H.data(), n, d, d, HalfType::kBFloat16};
  if (!amx_usable()) {
    EXPECT_THROW(fit(hv, o), InvalidArgument);
    return;
  }
  EXPECT_EQ(fit(hv, o).target, "AMX_BF16");
  // The environment variable reaches the same switch; naming a SIMD target turns AMX off.
  o.target.clear();
  setenv("FLASHKM_TARGET", "AMX_BF16", 1);
  EXPECT_EQ(fit(hv, o).target, "AMX_BF16");
  setenv("FLASHKM_TARGET", "reference", 1);
  EXPECT_EQ(fit(hv, o).target, "reference");
  unsetenv("FLASHKM_TARGET");
}

}  // namespace
}  // namespace flashkm
