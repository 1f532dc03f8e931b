// Run under mpirun with 1-4 ranks: the MPI fit equals the single-process fit of the same rows.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <string>

#include "flashkm/distributed.hpp"
#include "testlib.hpp"

namespace flashkm {
namespace {

using testing::blobs;

template <class T>
struct Shard {
  std::vector<T> all;
  std::size_t n, d, first, last;
  MatrixView<T> view() const { return MatrixView<T>(all.data() + first * d, last - first, d); }
};

template <class T>
Shard<T> make_shard(std::size_t n, std::size_t d, std::size_t k, std::uint64_t seed, double offset = 0) {
  Shard<T> s{blobs<T>(n, d, k, seed, 3.0, offset), n, d, 0, 0};
  std::tie(s.first, s.last) = mpi::shard_range(n);
  return s;
}

// Single-process and MPI results agree: the same labels everywhere, iterations and history
// length; centroids and inertia up to float64 rounding of the sums (the shards' sums are added
// in another order than one process adds them, and each shard moves its own rows in the
// incremental update). A sum rounds at the scale of the values it adds, so a centroid value
// near zero is compared at the scale of the largest one.
template <class T>
void expect_same(const KMeansResult<T>& single, const KMeansResult<T>& dist, const Shard<T>& s) {
  EXPECT_EQ(single.n_iter, dist.n_iter);
  EXPECT_EQ(single.history.size(), dist.history.size());
  EXPECT_NEAR(single.inertia, dist.inertia, 1e-10 * std::abs(single.inertia));
  ASSERT_EQ(single.centroids.size(), dist.centroids.size());
  double scale = 1;
  for (const T v : single.centroids) scale = std::max(scale, 1 + std::abs(static_cast<double>(v)));
  std::size_t differ = 0;
  for (std::size_t i = 0; i < single.centroids.size(); ++i) {
    const double a = single.centroids[i], b = dist.centroids[i];
    EXPECT_NEAR(a, b, 4 * std::numeric_limits<T>::epsilon() * scale) << "value " << i;
    differ += a != b;
  }
  ::testing::Test::RecordProperty("centroid_values_not_bitwise", static_cast<int>(differ));
  const std::vector<std::int32_t> mine(single.labels.begin() + static_cast<std::ptrdiff_t>(s.first),
                                       single.labels.begin() + static_cast<std::ptrdiff_t>(s.last));
  EXPECT_EQ(mine, dist.labels);
  const std::vector<std::int32_t> gathered = mpi::gather_to_root(dist.labels);
  if (mpi::rank() == 0) EXPECT_EQ(gathered, single.labels);
}

template <class T>
void compare(const Shard<T>& s, KMeansOptions opt) {
  opt.n_threads = 1;
  const KMeansResult<T> single = fit(MatrixView<T>(s.all.data(), s.n, s.d), opt);
  const KMeansResult<T> dist = mpi::fit(s.view(), opt);
  expect_same(single, dist, s);
}

TEST(Mpi, ExplicitInitFloat) {
  const auto s = make_shard<float>(20011, 17, 9, 1, 50.0);
  const std::vector<double> c0 = testing::pick_rows(s.all, s.d, testing::distinct_ids(s.n, 9, 3));
  compare(s, testing::explicit_init(c0, 9, s.d));
}

TEST(Mpi, RandomInitDrawsTheSingleProcessRowsDouble) {
  const auto s = make_shard<double>(9000, 6, 5, 2);
  KMeansOptions opt;
  opt.n_clusters = 12;
  opt.init = InitMethod::kRandom;
  opt.n_init = 2;
  opt.seed = 77;
  compare(s, opt);
}

TEST(Mpi, KMeansPlusPlusOnAllRowsWhenSmall) {
  const auto s = make_shard<float>(5000, 8, 6, 4);
  KMeansOptions opt;
  opt.n_clusters = 6;
  opt.seed = 5;
  compare(s, opt);
}

TEST(Mpi, WeightedWithEmptyClustersRelocated) {
  // Duplicate initial centroids leave clusters empty; they take the globally farthest points.
  const auto s = make_shard<float>(6000, 5, 4, 6);
  std::vector<double> c0 = testing::pick_rows(s.all, s.d, {0, 0, 0, 1, 1, 2});
  std::vector<double> w(s.n);
  for (std::size_t i = 0; i < s.n; ++i) w[i] = 0.5 + static_cast<double>(i % 5);
  KMeansOptions opt = testing::explicit_init(c0, 6, s.d);
  opt.n_threads = 1;
  opt.sample_weight = w;
  const KMeansResult<float> single = fit(MatrixView<float>(s.all.data(), s.n, s.d), opt);
  std::size_t relocated = 0;
  for (const auto& h : single.history) relocated += h.empty_relocated;
  ASSERT_GT(relocated, 0u);
  opt.sample_weight = std::span<const double>(w.data() + s.first, s.last - s.first);
  const KMeansResult<float> dist = mpi::fit(s.view(), opt);
  expect_same(single, dist, s);
}

// Pruning under MPI: each rank bounds its own rows; the distributed pruned fit is bitwise the
// distributed unpruned one (the same sums in the same order), the distance counts add up over
// the ranks and fall below N K.
TEST(Mpi, PrunedIsBitwiseTheUnpruned) {
  const auto s = make_shard<double>(12000, 12, 40, 8);
  for (InitMethod init : {InitMethod::kRandom, InitMethod::kMeansPlusPlus}) {
    KMeansOptions opt;
    opt.n_clusters = 40;
    opt.init = init;
    opt.max_iter = 30;
    opt.tol = 0;
    opt.n_threads = 1;
    opt.prune = Prune::kOff;
    const KMeansResult<double> off = mpi::fit(s.view(), opt);
    opt.prune = Prune::kOn;
    const KMeansResult<double> on = mpi::fit(s.view(), opt);
    EXPECT_EQ(0, std::memcmp(off.centroids.data(), on.centroids.data(), off.centroids.size() * sizeof(double)));
    EXPECT_EQ(off.labels, on.labels);
    EXPECT_EQ(0, std::memcmp(&off.inertia, &on.inertia, sizeof(double)));
    ASSERT_EQ(off.history.size(), on.history.size());
    std::uint64_t total_on = 0;
    for (std::size_t i = 0; i < off.history.size(); ++i) {
      EXPECT_EQ(off.history[i].distances, 12000u * 40u);
      EXPECT_EQ(off.history[i].labels_changed, on.history[i].labels_changed);
      total_on += on.history[i].distances;
    }
    EXPECT_LT(total_on, off.history.size() * 12000u * 40u);
  }
}

TEST(Mpi, NonFiniteValueOnOneRankStopsEveryRank) {
  auto s = make_shard<float>(4000, 3, 2, 7);
  const std::size_t bad_row = s.n - 10;  // on the last rank
  s.all[bad_row * s.d + 2] = std::numeric_limits<float>::infinity();
  KMeansOptions opt;
  opt.n_clusters = 2;
  try {
    mpi::fit(s.view(), opt);
    FAIL() << "expected InvalidData on every rank";
  } catch (const InvalidData& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("rank " + std::to_string(mpi::size() - 1) + ":"), std::string::npos) << m;
    EXPECT_NE(m.find("row " + std::to_string(bad_row) + ", column 2"), std::string::npos) << m;
  }
}

TEST(Mpi, BadWeightsOnOneRankStopEveryRank) {
  const auto s = make_shard<float>(3000, 3, 2, 8);
  std::vector<double> w(s.last - s.first, 1.0);
  if (mpi::rank() == mpi::size() - 1) w.back() = -1.0;
  KMeansOptions opt;
  opt.n_clusters = 2;
  opt.sample_weight = w;
  EXPECT_THROW(mpi::fit(s.view(), opt), InvalidData);
}

// A communicator other than MPI_COMM_WORLD (as mpi4py's callers pass): the ranks split into
// two halves (even and odd), each half clusters its own copy of the data over its own
// communicator, and each equals the single-process fit. With one rank the "half" is everyone.
TEST(Mpi, SubCommunicatorFitsOverItsOwnRanks) {
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, mpi::rank() % 2, mpi::rank(), &half);
  const mpi::Comm comm{MPI_Comm_c2f(half)};
  int half_size = 0;
  MPI_Comm_size(half, &half_size);
  EXPECT_EQ(mpi::size(comm), half_size);
  // Different data in each half: a collective that leaked onto MPI_COMM_WORLD would mix them
  // (or hang, which the test's timeout reports).
  const std::uint64_t seed = 7 + static_cast<std::uint64_t>(mpi::rank() % 2);
  Shard<double> s{blobs<double>(5003, 6, 5, seed, 3.0, 20.0), 5003, 6, 0, 0};
  std::tie(s.first, s.last) = mpi::shard_range(s.n, comm);
  KMeansOptions opt;
  opt.n_clusters = 5;
  opt.init = InitMethod::kRandom;
  opt.seed = 3;
  opt.n_threads = 1;
  const KMeansResult<double> single = fit(MatrixView<double>(s.all.data(), s.n, s.d), opt);
  const KMeansResult<double> dist = mpi::fit(s.view(), opt, comm);
  EXPECT_EQ(single.n_iter, dist.n_iter);
  EXPECT_NEAR(single.inertia, dist.inertia, 1e-10 * std::abs(single.inertia));
  const std::vector<std::int32_t> mine(single.labels.begin() + static_cast<std::ptrdiff_t>(s.first),
                                       single.labels.begin() + static_cast<std::ptrdiff_t>(s.last));
  EXPECT_EQ(mine, dist.labels);
  const std::vector<std::int32_t> gathered = mpi::gather_to_root(dist.labels, comm);
  if (mpi::rank(comm) == 0) EXPECT_EQ(gathered, single.labels);
  // Errors are agreed over the sub-communicator too.
  EXPECT_THROW(mpi::collectively([&] { if (mpi::rank(comm) == half_size - 1) throw InvalidData("the last rank fails"); },
                                 comm),
               InvalidData);
  MPI_Comm_free(&half);
}

// k-means|| over the shards: every round's draws are keyed by the global row index and every
// potential and candidate weight is summed exactly (the centring too, from exact column sums),
// so the initial centroids are bitwise the same for 1, 2, ... up to all ranks of this run
// (sub-communicators of the first s ranks), weighted or not, float and double; and the fit
// that follows equals the single-process fit from the same initial centroids.
template <class T>
void kmeans_parallel_over_rank_counts(bool weighted, InitMethod init = InitMethod::kMeansParallel,
                                      std::size_t k = 40) {
  const std::size_t n = 6007, d = 7;
  const std::vector<T> all = blobs<T>(n, d, 25, 11, 2.0, 50.0);
  std::vector<double> w(n);
  for (std::size_t i = 0; i < n; ++i) w[i] = 0.5 + static_cast<double>((i * 7919) % 13) / 4;
  KMeansOptions opt;
  opt.n_clusters = k;
  opt.init = init;
  opt.seed = 17;
  opt.n_threads = 1;
  bool parallel_ran = false;
  opt.seed_callback = [&](const SeedStats& st) { parallel_ran |= std::string(st.phase) == "k-means||"; };
  std::vector<double> first;
  for (int s = 1; s <= mpi::size(); ++s) {
    SCOPED_TRACE(::testing::Message() << s << " ranks");
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, mpi::rank() < s ? 0 : MPI_UNDEFINED, mpi::rank(), &sub);
    if (sub == MPI_COMM_NULL) continue;
    const mpi::Comm comm{MPI_Comm_c2f(sub)};
    const auto [lo, hi] = mpi::shard_range(n, comm);
    KMeansOptions o = opt;
    if (weighted) o.sample_weight = std::span<const double>(w.data() + lo, hi - lo);
    const KMeansResult<T> dist = mpi::fit(MatrixView<T>(all.data() + lo * d, hi - lo, d), o, comm);
    ASSERT_EQ(dist.initial_centroids.size(), k * d);
    EXPECT_TRUE(parallel_ran);
    if (s == 1) {
      first = dist.initial_centroids;
      // The fit from those centres is the single-process fit's from the same start.
      KMeansOptions e = testing::explicit_init(first, k, d);
      e.n_threads = 1;
      if (weighted) e.sample_weight = w;
      const KMeansResult<T> single = fit(MatrixView<T>(all.data(), n, d), e);
      EXPECT_EQ(single.labels, dist.labels);
      EXPECT_EQ(single.n_iter, dist.n_iter);
    } else if (mpi::rank() == 0) {
      EXPECT_EQ(std::memcmp(first.data(), dist.initial_centroids.data(), first.size() * sizeof(double)), 0);
    }
    // Every rank of the run holds the same centroids.
    std::vector<double> mine = dist.initial_centroids, root = mine;
    MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_DOUBLE, 0, sub);
    EXPECT_EQ(std::memcmp(root.data(), mine.data(), mine.size() * sizeof(double)), 0);
    MPI_Comm_free(&sub);
  }
}

TEST(Mpi, KMeansParallelIsBitwiseForAnyRankCount) {
  kmeans_parallel_over_rank_counts<double>(false);
  kmeans_parallel_over_rank_counts<float>(true);
}

// k-means++ with K > 1024 seeds with k-means|| over the shards (the gathered sample would grow
// with K), bitwise the same for any number of ranks too.
TEST(Mpi, LargeKKMeansPlusPlusSeedsWithKMeansParallel) {
  kmeans_parallel_over_rank_counts<float>(false, InitMethod::kMeansPlusPlus, 1100);
}

}  // namespace
}  // namespace flashkm

int main(int argc, char** argv) {
  flashkm::mpi::Environment env(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  // Only rank 0 prints the progress; every rank's failures still print.
  if (flashkm::mpi::rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  return RUN_ALL_TESTS();
}
