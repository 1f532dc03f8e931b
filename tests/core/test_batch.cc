// fit_batch: every member bitwise equal to its solo fit; shapes checked up front; member errors named.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <cstring>
#include <limits>
#include <string>

#include "testlib.hpp"

namespace flashkm {
namespace {

template <class T>
bool bitwise_equal(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

bool same_double(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

template <class T>
void expect_same_result(const KMeansResult<T>& got, const KMeansResult<T>& want) {
  EXPECT_EQ(got.n_clusters, want.n_clusters);
  EXPECT_EQ(got.n_features, want.n_features);
  EXPECT_TRUE(bitwise_equal(got.centroids, want.centroids));
  EXPECT_EQ(got.labels, want.labels);
  EXPECT_TRUE(same_double(got.inertia, want.inertia));
  EXPECT_EQ(got.n_iter, want.n_iter);
  EXPECT_EQ(got.converged, want.converged);
  EXPECT_EQ(got.stop_reason, want.stop_reason);
  EXPECT_EQ(got.best_init, want.best_init);
  EXPECT_EQ(got.target, want.target);
  ASSERT_EQ(got.history.size(), want.history.size());
  for (std::size_t i = 0; i < got.history.size(); ++i) {
    EXPECT_TRUE(same_double(got.history[i].inertia, want.history[i].inertia));
    EXPECT_TRUE(same_double(got.history[i].center_shift, want.history[i].center_shift));
    EXPECT_EQ(got.history[i].labels_changed, want.history[i].labels_changed);
    EXPECT_EQ(got.history[i].init_run, want.history[i].init_run);
  }
}

// B members of n x d blobs, each from its own seed, stored B x n x d.
template <class T>
std::vector<T> batch_blobs(std::size_t batch, std::size_t n, std::size_t d, std::size_t k) {
  std::vector<T> X;
  for (std::size_t b = 0; b < batch; ++b) {
    const auto member = testing::blobs<T>(n, d, k, 100 + b);
    X.insert(X.end(), member.begin(), member.end());
  }
  return X;
}

// k distinct rows of every member as its initial centroids, B x k x d.
template <class T>
std::vector<T> batch_init(const std::vector<T>& X, std::size_t batch, std::size_t n, std::size_t d,
                          std::size_t k) {
  std::vector<T> C;
  for (std::size_t b = 0; b < batch; ++b) {
    const std::vector<T> member(X.begin() + b * n * d, X.begin() + (b + 1) * n * d);
    for (double v : testing::pick_rows(member, d, testing::distinct_ids(n, k, 7 + b))) {
      C.push_back(static_cast<T>(v));
    }
  }
  return C;
}

// fit_batch against fit() of each member alone with the same options (the solo fits with
// another thread count: results do not depend on it).
template <class T>
void expect_members_equal_solo(const std::vector<T>& X, std::size_t batch, std::size_t n,
                               std::size_t d, KMeansOptions o, const std::vector<T>& init = {}) {
  const BatchView<T> Xb{X.data(), batch, n, d};
  const BatchView<T> Cb{init.empty() ? nullptr : init.data(), batch, o.n_clusters, d};
  const auto results = fit_batch(Xb, o, Cb);
  ASSERT_EQ(results.size(), batch);
  o.n_threads = 3;
  for (std::size_t b = 0; b < batch; ++b) {
    SCOPED_TRACE(::testing::Message() << "member " << b);
    if (!init.empty()) o.init_centroids = Cb.member(b);
    expect_same_result(results[b], fit(Xb.member(b), o));
  }
}

template <class T>
class BatchTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(BatchTest, Types);

TYPED_TEST(BatchTest, MembersEqualSoloFitsForEveryInitAndBatchSize) {
  using T = TypeParam;
  const std::size_t n = 1003, d = 13, k = 9;
  // B = 1 and 3 run members one after another on 2 threads; B = 9 runs them 2 at a time.
  for (std::size_t batch : {1, 3, 9}) {
    const auto X = batch_blobs<T>(batch, n, d, 6);
    for (InitMethod init : {InitMethod::kMeansPlusPlus, InitMethod::kRandom, InitMethod::kExplicit}) {
      SCOPED_TRACE(::testing::Message() << "batch " << batch << ", init " << static_cast<int>(init));
      KMeansOptions o;
      o.n_clusters = k;
      o.init = init;
      o.n_init = 2;
      o.max_iter = 25;
      o.seed = 42;
      o.n_threads = 2;
      expect_members_equal_solo(X, batch, n, d, o,
                                init == InitMethod::kExplicit ? batch_init(X, batch, n, d, k) : std::vector<T>{});
    }
  }
}

TYPED_TEST(BatchTest, DefaultThreadCountGivesTheSameMembers) {
  using T = TypeParam;
  const std::size_t batch = 5, n = 777, d = 8, k = 11;
  const auto X = batch_blobs<T>(batch, n, d, 4);
  KMeansOptions o;
  o.n_clusters = k;
  o.max_iter = 10;
  expect_members_equal_solo(X, batch, n, d, o);
}

TYPED_TEST(BatchTest, PerMemberSampleWeights) {
  using T = TypeParam;
  const std::size_t batch = 4, n = 500, d = 5, k = 6;
  const auto X = batch_blobs<T>(batch, n, d, 3);
  std::vector<double> w(batch * n);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>(i % 7);
  KMeansOptions o;
  o.n_clusters = k;
  o.init = InitMethod::kRandom;
  o.max_iter = 15;
  o.n_threads = 2;
  o.sample_weight = w;
  const auto results = fit_batch(BatchView<T>{X.data(), batch, n, d}, o);
  for (std::size_t b = 0; b < batch; ++b) {
    SCOPED_TRACE(::testing::Message() << "member " << b);
    KMeansOptions solo = o;
    solo.sample_weight = std::span<const double>(w).subspan(b * n, n);
    expect_same_result(results[b], fit(MatrixView<T>(X.data() + b * n * d, n, d), solo));
  }
}

TYPED_TEST(BatchTest, AwkwardShapes) {
  using T = TypeParam;
  struct Shape {
    std::size_t n, d, k;
  };
  // One point and one cluster; one feature; as many clusters as points.
  for (Shape s : {Shape{1, 4, 1}, Shape{300, 1, 5}, Shape{17, 3, 17}}) {
    for (std::size_t batch : {1, 3}) {
      SCOPED_TRACE(::testing::Message() << "n " << s.n << ", d " << s.d << ", k " << s.k << ", batch " << batch);
      const auto X = batch_blobs<T>(batch, s.n, s.d, 2);
      KMeansOptions o;
      o.n_clusters = s.k;
      o.n_threads = 2;
      expect_members_equal_solo(X, batch, s.n, s.d, o);
      o.init = InitMethod::kExplicit;
      expect_members_equal_solo(X, batch, s.n, s.d, o, batch_init(X, batch, s.n, s.d, s.k));
    }
  }
}

// Runs fn, expects exception E whose message contains every fragment.
template <class E, class Fn>
void expect_error(Fn fn, std::initializer_list<const char*> fragments) {
  try {
    fn();
    ADD_FAILURE() << "no exception thrown";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const char* f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// The progress callback: called for every member's iterations, never twice at once; false
// stops every member; an exception stops them and comes out of fit_batch.
TEST(BatchCallback, SeesEveryMemberSerialisedAndStopsThemAll) {
  const std::size_t batch = 5, n = 300, d = 6, k = 4;
  const auto X = batch_blobs<float>(batch, n, d, k);
  const BatchView<float> view{X.data(), batch, n, d};
  for (int threads : {1, 2, 8}) {
    KMeansOptions o;
    o.n_clusters = k;
    o.n_threads = threads;
    o.max_iter = 30;
    std::vector<std::size_t> calls(batch, 0);
    std::atomic<int> inside{0};
    std::atomic<int> most_inside{0};
    o.callback = [&](const IterationStats& s) {
      const int now = ++inside;
      most_inside = std::max(most_inside.load(), now);
      ++calls.at(s.member);
      --inside;
      return true;
    };
    const auto all = fit_batch(view, o);
    for (std::size_t b = 0; b < batch; ++b) {
      EXPECT_EQ(calls[b], all[b].history.size()) << "member " << b << ", " << threads << " threads";
      EXPECT_NE(all[b].stop_reason, StopReason::kCallback);
    }
    EXPECT_EQ(most_inside.load(), 1);

    // The first answer "stop" reaches every member, and the callback is not asked again.
    int total = 0;
    o.callback = [&](const IterationStats&) {
      ++total;
      return false;
    };
    for (const auto& r : fit_batch(view, o)) {
      EXPECT_EQ(r.stop_reason, StopReason::kCallback);
      EXPECT_EQ(r.n_iter, 1);
    }
    EXPECT_EQ(total, 1);

    o.callback = [&](const IterationStats& s) -> bool {
      if (s.member == 3) throw std::runtime_error("stop at member 3");
      return true;
    };
    EXPECT_THROW(fit_batch(view, o), std::runtime_error);
  }
}

class BatchErrorsTest : public ::testing::Test {
 protected:
  static constexpr std::size_t batch = 6, n = 40, d = 4, k = 3;
  std::vector<float> X = batch_blobs<float>(batch, n, d, 3);
  KMeansOptions o = [] {
    KMeansOptions opt;
    opt.n_clusters = k;
    opt.n_threads = 2;
    return opt;
  }();
  BatchView<float> view() const { return {X.data(), batch, n, d}; }
  void poison(std::size_t member, std::size_t row, std::size_t col, float v) { X[(member * n + row) * d + col] = v; }
};

TEST_F(BatchErrorsTest, ShapesAreCheckedUpFront) {
  expect_error<InvalidArgument>([&] { fit_batch(BatchView<float>{X.data(), 0, n, d}, o); }, {"0 members"});
  expect_error<InvalidArgument>([&] { fit_batch(BatchView<float>{X.data(), batch, 0, d}, o); }, {"X has 0 rows"});
  expect_error<InvalidArgument>([&] { fit_batch(BatchView<float>{X.data(), batch, n, 0}, o); }, {"X has 0 columns"});
  expect_error<InvalidArgument>([&] { fit_batch(BatchView<float>{nullptr, batch, n, d}, o); }, {"null"});
  expect_error<InvalidArgument>(
      [&] { fit_batch(BatchView<float>{X.data(), std::numeric_limits<std::size_t>::max() / 2, n, d}, o); },
      {"overflows"});
  o.n_clusters = n + 1;
  expect_error<InvalidArgument>([&] { fit_batch(view(), o); }, {"n_clusters = 41", "[1, 40]"});
}

TEST_F(BatchErrorsTest, ExplicitInitOfTheWrongShape) {
  const auto C = batch_init(X, batch, n, d, k);
  o.init = InitMethod::kExplicit;
  expect_error<InvalidArgument>([&] { fit_batch(view(), o); }, {"no init_centroids"});
  expect_error<InvalidArgument>([&] { fit_batch(view(), o, BatchView<float>{C.data(), batch - 1, k, d}); },
                                {"init_centroids has shape (5, 3, 4)", "(6, 3, 4)"});
  expect_error<InvalidArgument>([&] { fit_batch(view(), o, BatchView<float>{C.data(), batch, k, d - 1}); },
                                {"init_centroids has shape (6, 3, 3)"});
  o.init_centroids = MatrixView<float>(C.data(), k, d);
  expect_error<InvalidArgument>([&] { fit_batch(view(), o, BatchView<float>{C.data(), batch, k, d}); },
                                {"options.init_centroids"});
  o = KMeansOptions{};
  o.n_clusters = k;
  expect_error<InvalidArgument>([&] { fit_batch(view(), o, BatchView<float>{C.data(), batch, k, d}); },
                                {"init is not explicit"});
}

TEST_F(BatchErrorsTest, UnsupportedOptions) {
  const std::vector<double> w(n, 1.0);
  o.sample_weight = w;
  expect_error<InvalidArgument>([&] { fit_batch(view(), o); }, {"sample_weight has 40 values", "6 x 40 rows"});
  o.sample_weight = {};
  o.target = "no-such-target";
  expect_error<InvalidArgument>([&] { fit_batch(view(), o); }, {"SIMD target 'no-such-target'"});
  // Errors shared by every member are not blamed on one.
  try {
    fit_batch(view(), o);
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()).find("member"), std::string::npos) << e.what();
  }
}

TEST_F(BatchErrorsTest, NaNInOneMemberNamesMemberRowAndColumn) {
  poison(3, 17, 2, std::nanf(""));
  // Members in parallel (B = 6 >= 2 threads) and one after another (6 < 8 threads).
  for (int threads : {2, 8}) {
    o.n_threads = threads;
    expect_error<InvalidData>([&] { fit_batch(view(), o); }, {"member 3: X contains NaN at row 17, column 2"});
  }
}

TEST_F(BatchErrorsTest, TheLowestFailingMemberIsReported) {
  poison(5, 1, 0, std::numeric_limits<float>::infinity());
  poison(2, 9, 3, std::nanf(""));
  for (int threads : {2, 3, 8}) {
    o.n_threads = threads;
    expect_error<InvalidData>([&] { fit_batch(view(), o); }, {"member 2: X contains NaN at row 9, column 3"});
  }
}

TEST_F(BatchErrorsTest, NonFiniteInitialCentroidsNameTheMember) {
  auto C = batch_init(X, batch, n, d, k);
  C[(4 * k + 1) * d + 3] = -std::numeric_limits<float>::infinity();
  o.init = InitMethod::kExplicit;
  expect_error<InvalidData>([&] { fit_batch(view(), o, BatchView<float>{C.data(), batch, k, d}); },
                            {"member 4: init_centroids contains -inf at row 1, column 3"});
}

TEST_F(BatchErrorsTest, BadWeightsOfOneMemberNameIt) {
  std::vector<double> w(batch * n, 1.0);
  w[1 * n + 9] = -0.5;
  o.sample_weight = w;
  expect_error<InvalidData>([&] { fit_batch(view(), o); }, {"member 1: sample_weight[9] = -0.5 is negative"});
}

}  // namespace
}  // namespace flashkm
