// The forced-target switch: the API option and FLASHKM_TARGET select the kernels that really run.
#include <gtest/gtest.h>

#include <cstdlib>

#include "testlib.hpp"

namespace flashkm {
namespace {

struct EnvGuard {
  ~EnvGuard() { unsetenv("FLASHKM_TARGET"); }
};

TEST(Targets, ListIsBestFirstAndEndsWithReference) {
  const auto names = available_targets();
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names.back(), "reference");
  // A baseline x86-64 build still carries the wide kernels: on a CPU that has them they are
  // offered, best first.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    EXPECT_EQ(names.front(), "AVX3");
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_NE(std::find(names.begin(), names.end(), "AVX2"), names.end());
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "SCALAR"), names.end());
}

// result.target is filled from the kernel table that ran (its name is compiled into each
// target's own code), so it proves which code executed, not just what was asked for.
TEST(Targets, OptionForcesEveryTargetAndResultsAgree) {
  const std::size_t n = 3000, d = 19, k = 9;
  auto X = testing::small_ints<float>(n, d, 3);
  const auto ids = testing::distinct_ids(n, k, 4);
  const auto C0 = testing::pick_rows(X, d, ids);
  KMeansOptions o = testing::explicit_init(C0, k, d);
  o.max_iter = 5;
  std::vector<KMeansResult<float>> results;
  for (const auto& name : available_targets()) {
    o.target = name;
    results.push_back(fit(MatrixView<float>(X.data(), n, d), o));
    EXPECT_EQ(results.back().target, name);
  }
  // Integer data: the first assignment is exact on every target.
  for (const auto& r : results) {
    EXPECT_EQ(r.history.front().labels_changed, n);
    EXPECT_DOUBLE_EQ(r.history.front().inertia, results.front().history.front().inertia);
  }
}

TEST(Targets, EnvironmentVariableForcesTarget) {
  EnvGuard guard;
  const std::size_t n = 500, d = 5, k = 3;
  auto X = testing::blobs<double>(n, d, k, 9);
  KMeansOptions o;
  o.n_clusters = k;
  for (const auto& name : available_targets()) {
    setenv("FLASHKM_TARGET", name.c_str(), 1);
    EXPECT_EQ(default_target(), name);
    EXPECT_EQ(fit(MatrixView<double>(X.data(), n, d), o).target, name);
  }
  // The option wins over the environment.
  setenv("FLASHKM_TARGET", "reference", 1);
  o.target = available_targets().front();
  EXPECT_EQ(fit(MatrixView<double>(X.data(), n, d), o).target, o.target);
}

TEST(Targets, UnknownTargetIsRefusedByName) {
  EnvGuard guard;
  const std::size_t n = 10, d = 2;
  auto X = testing::blobs<float>(n, d, 2, 1);
  KMeansOptions o;
  o.n_clusters = 2;
  o.target = "NEON";
  try {
    fit(MatrixView<float>(X.data(), n, d), o);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'NEON'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("reference"), std::string::npos) << e.what();
  }
  o.target.clear();
  setenv("FLASHKM_TARGET", "bogus", 1);
  EXPECT_THROW(fit(MatrixView<float>(X.data(), n, d), o), InvalidArgument);
  EXPECT_THROW(default_target(), InvalidArgument);
}

}  // namespace
}  // namespace flashkm
