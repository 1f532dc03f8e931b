// The command's double-buffered file streaming: bitwise the in-memory fit, errors surface.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "file_source.hpp"
#include "io/dataset.hpp"
#include "testlib.hpp"

namespace flashkm::cli {
namespace {

std::string temp_dir() {
  std::string templ = ::testing::TempDir() + "flashkm_fs_XXXXXX";
  const char* made = mkdtemp(templ.data());
  EXPECT_NE(made, nullptr);
  return templ;
}

template <class T>
void fit_both_ways(std::size_t d, std::size_t k, std::size_t granules_per_buffer, InitMethod init) {
  const std::size_t g = row_source_granule(d, sizeof(T));
  const std::size_t n = 3 * g + 101;
  const std::vector<T> X = testing::blobs<T>(n, d, k, 21, 3.0, -50.0);
  const std::string dir = temp_dir();
  const std::string path = dir + "/x.npy";
  io::write_npy(path, sizeof(T) == 4 ? io::DType::kF32 : io::DType::kF64, {n, d}, X.data());

  KMeansOptions opt;
  opt.n_clusters = k;
  opt.init = init;
  opt.max_iter = 6;
  opt.seed = 5;
  const KMeansResult<T> mem = fit(MatrixView<T>(X.data(), n, d), opt);
  FileRowSource<T> src(path, std::nullopt, 2 * granules_per_buffer * g * d * sizeof(T));
  const KMeansResult<T> str = fit(src, opt);
  EXPECT_EQ(0, std::memcmp(mem.centroids.data(), str.centroids.data(), mem.centroids.size() * sizeof(T)));
  EXPECT_EQ(mem.labels, str.labels);
  EXPECT_EQ(mem.inertia, str.inertia);
  EXPECT_EQ(mem.n_iter, str.n_iter);
  EXPECT_EQ(src.stats().chunk_rows, granules_per_buffer * g);
  EXPECT_GT(src.stats().passes, static_cast<std::size_t>(mem.n_iter));
  std::remove(path.c_str());
  rmdir(dir.c_str());
}

TEST(FileSource, FloatOneGranuleChunksKMeansPlusPlus) { fit_both_ways<float>(1024, 12, 1, InitMethod::kMeansPlusPlus); }
TEST(FileSource, FloatTwoGranuleChunksRandomInit) { fit_both_ways<float>(777, 50, 2, InitMethod::kRandom); }
TEST(FileSource, DoubleOneGranuleChunks) { fit_both_ways<double>(1500, 7, 1, InitMethod::kRandom); }

TEST(FileSource, AbandonedPassesRestartCleanly) {
  const std::size_t d = 2048;
  const std::size_t g = row_source_granule(d, sizeof(float));
  const std::size_t n = 4 * g;
  const std::vector<float> X = testing::blobs<float>(n, d, 3, 2);
  const std::string dir = temp_dir();
  const std::string path = dir + "/x.npy";
  io::write_npy(path, io::DType::kF32, {n, d}, X.data());
  FileRowSource<float> src(path, std::nullopt, 2 * g * d * sizeof(float));
  for (int pass = 0; pass < 3; ++pass) {
    src.begin_pass(g);
    std::size_t first = 99;
    const MatrixView<float> v = src.next_chunk(&first);
    ASSERT_EQ(first, 0u);
    ASSERT_EQ(v.rows, g);
    EXPECT_EQ(0, std::memcmp(v.data, X.data(), g * d * sizeof(float)));
  }
  // A full pass after the abandoned ones delivers every row in order.
  src.begin_pass(g);
  std::size_t next = 0, first = 0;
  for (MatrixView<float> v = src.next_chunk(&first); v.rows; v = src.next_chunk(&first)) {
    ASSERT_EQ(first, next);
    EXPECT_EQ(0, std::memcmp(v.data, X.data() + first * d, v.rows * d * sizeof(float)));
    next += v.rows;
  }
  EXPECT_EQ(next, n);
  std::remove(path.c_str());
  rmdir(dir.c_str());
}

TEST(FileSource, FileShortenedDuringAPassIsAnError) {
  const std::size_t d = 2048;
  const std::size_t g = row_source_granule(d, sizeof(float));
  const std::size_t n = 3 * g;
  const std::vector<float> X = testing::blobs<float>(n, d, 3, 2);
  const std::string dir = temp_dir();
  const std::string path = dir + "/x.npy";
  io::write_npy(path, io::DType::kF32, {n, d}, X.data());
  FileRowSource<float> src(path, std::nullopt, 2 * g * d * sizeof(float));
  ASSERT_EQ(0, truncate(path.c_str(), 128 + static_cast<off_t>(g * d * sizeof(float) + 100)));
  src.begin_pass(g);
  std::size_t first = 0;
  EXPECT_THROW(
      {
        for (MatrixView<float> v = src.next_chunk(&first); v.rows; v = src.next_chunk(&first)) {
        }
      },
      Error);
  std::remove(path.c_str());
  rmdir(dir.c_str());
}

TEST(FileSource, BudgetBelowTwoGranulesIsRefused) {
  const std::size_t d = 4096;
  const std::size_t g = row_source_granule(d, sizeof(float));
  const std::vector<float> X = testing::blobs<float>(g + 1, d, 2, 2);
  const std::string dir = temp_dir();
  const std::string path = dir + "/x.npy";
  io::write_npy(path, io::DType::kF32, {g + 1, d}, X.data());
  FileRowSource<float> src(path, std::nullopt, g * d * sizeof(float));
  EXPECT_THROW(src.begin_pass(g), InvalidArgument);
  std::remove(path.c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace flashkm::cli
