// Bad input: a typed exception whose message names the problem, and nothing modified.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "testlib.hpp"

namespace flashkm {
namespace {

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

class ErrorsTest : public ::testing::Test {
 protected:
  static constexpr std::size_t n = 50, d = 4;
  std::vector<float> X = testing::blobs<float>(n, d, 3, 1);
  std::vector<float> original = X;
  KMeansOptions o = [] {
    KMeansOptions opt;
    opt.n_clusters = 3;
    return opt;
  }();
  MatrixView<float> view() const { return {X.data(), n, d}; }
  void TearDown() override { EXPECT_EQ(X, original) << "input was modified"; }
};

TEST_F(ErrorsTest, ErrorsDeriveFromFlashkmError) {
  o.n_clusters = 0;
  EXPECT_THROW(fit(view(), o), Error);
  EXPECT_THROW(fit(view(), o), InvalidArgument);
}

TEST_F(ErrorsTest, NClustersOutOfRange) {
  o.n_clusters = 0;
  expect_error<InvalidArgument>([&] { fit(view(), o); }, {"n_clusters = 0", "[1, 50]"});
  o.n_clusters = n + 1;
  expect_error<InvalidArgument>([&] { fit(view(), o); }, {"n_clusters = 51", "[1, 50]"});
}

TEST_F(ErrorsTest, EmptyShapesAndNullPointer) {
  expect_error<InvalidArgument>([&] { fit(MatrixView<float>(X.data(), 0, d), o); }, {"X has 0 rows"});
  expect_error<InvalidArgument>([&] { fit(MatrixView<float>(X.data(), n, 0), o); }, {"X has 0 columns"});
  expect_error<InvalidArgument>([&] { fit(MatrixView<float>(nullptr, n, d), o); }, {"X", "null"});
  expect_error<InvalidArgument>([&] { fit(MatrixView<float>(X.data(), n / 2, d, d - 1), o); },
                                {"row stride 3", "number of columns 4"});
}

// Wide rows spread over several of the mean's blocks (512 rows of 300 floats each): the first
// non-finite value in row-major order is named, whichever block holds it and whatever later
// blocks hold; +inf and -inf in one column of one block (a NaN sum) are found too.
TEST(Errors, NonFiniteValuesAcrossBlocksNameTheFirst) {
  const std::size_t n = 3000, d = 300;
  std::vector<float> X = testing::blobs<float>(n, d, 4, 5);
  KMeansOptions o;
  o.n_clusters = 4;
  o.max_iter = 2;
  X[2600 * d + 7] = -std::numeric_limits<float>::infinity();
  X[1100 * d + 299] = std::numeric_limits<float>::quiet_NaN();
  X[1100 * d + 298] = 1;
  expect_error<InvalidData>([&] { fit(MatrixView<float>(X.data(), n, d), o); }, {"NaN", "row 1100", "column 299"});
  X[1100 * d + 299] = 2;
  expect_error<InvalidData>([&] { fit(MatrixView<float>(X.data(), n, d), o); }, {"-inf", "row 2600", "column 7"});
  X[2600 * d + 7] = 3;
  X[1500 * d + 11] = std::numeric_limits<float>::infinity();
  X[1501 * d + 11] = -std::numeric_limits<float>::infinity();
  expect_error<InvalidData>([&] { fit(MatrixView<float>(X.data(), n, d), o); }, {"+inf", "row 1500", "column 11"});
  X[1500 * d + 11] = 4;
  X[1501 * d + 11] = 5;
  EXPECT_NO_THROW(fit(MatrixView<float>(X.data(), n, d), o));
}

TEST_F(ErrorsTest, NonFiniteValuesAreNamedByRowAndColumn) {
  std::vector<float> bad = X;
  bad[17 * d + 2] = std::numeric_limits<float>::quiet_NaN();
  expect_error<InvalidData>([&] { fit(MatrixView<float>(bad.data(), n, d), o); }, {"NaN", "row 17", "column 2"});
  bad[17 * d + 2] = 1;
  bad[40 * d + 3] = -std::numeric_limits<float>::infinity();
  bad[45 * d + 0] = std::numeric_limits<float>::infinity();  // only the first is named
  expect_error<InvalidData>([&] { fit(MatrixView<float>(bad.data(), n, d), o); }, {"-inf", "row 40", "column 3"});
  // The same check guards predict / transform / score.
  const std::vector<float> C(3 * d, 0.5f);
  expect_error<InvalidData>([&] { predict(MatrixView<float>(bad.data(), n, d), MatrixView<float>(C.data(), 3, d)); },
                            {"row 40"});
}

TEST_F(ErrorsTest, BadWeights) {
  std::vector<double> w(n, 1.0);
  w[9] = -0.5;
  o.sample_weight = w;
  expect_error<InvalidData>([&] { fit(view(), o); }, {"sample_weight[9] = -0.5", "negative"});
  w[9] = std::nan("");
  expect_error<InvalidData>([&] { fit(view(), o); }, {"sample_weight[9]", "not finite"});
  std::fill(w.begin(), w.end(), 0.0);
  expect_error<InvalidData>([&] { fit(view(), o); }, {"all 50 weights are zero"});
  std::vector<double> short_w(n - 1, 1.0);
  o.sample_weight = short_w;
  expect_error<InvalidArgument>([&] { fit(view(), o); }, {"49 values", "50 rows"});
}

TEST_F(ErrorsTest, BadExplicitInit) {
  o.init = InitMethod::kExplicit;
  expect_error<InvalidArgument>([&] { fit(view(), o); }, {"init_centroids", "null"});
  std::vector<double> C(3 * (d + 1), 1.0);
  o.init_centroids = MatrixView<double>(C.data(), 3, d + 1);
  expect_error<InvalidArgument>([&] { fit(view(), o); }, {"shape (3, 5)", "(3, 4)"});
  o.init_centroids = MatrixView<double>(C.data(), 2, d);
  expect_error<InvalidArgument>([&] { fit(view(), o); }, {"shape (2, 4)"});
  C[1 * d + 3] = std::numeric_limits<double>::infinity();
  o.init_centroids = MatrixView<double>(C.data(), 3, d);
  expect_error<InvalidData>([&] { fit(view(), o); }, {"init_centroids", "inf", "row 1", "column 3"});
}

TEST_F(ErrorsTest, BadOptions) {
  o.max_iter = 0;
  expect_error<InvalidArgument>([&] { fit(view(), o); }, {"max_iter = 0"});
  o.max_iter = 10;
  o.n_init = 0;
  expect_error<InvalidArgument>([&] { fit(view(), o); }, {"n_init = 0"});
  o.n_init = 1;
  o.tol = -1;
  expect_error<InvalidArgument>([&] { fit(view(), o); }, {"tol = -1"});
  o.tol = 1e-4;
  o.n_threads = -2;
  expect_error<InvalidArgument>([&] { fit(view(), o); }, {"n_threads = -2"});
}

TEST_F(ErrorsTest, RandomInitNeedsEnoughWeightedPoints) {
  std::vector<double> w(n, 0.0);
  w[3] = w[4] = 1.0;
  o.sample_weight = w;
  o.init = InitMethod::kRandom;
  expect_error<InvalidData>([&] { fit(view(), o); }, {"n_clusters = 3", "only 2"});
}

TEST_F(ErrorsTest, PredictShapeMismatch) {
  const std::vector<float> C(3 * (d + 2), 0.5f);
  expect_error<InvalidArgument>([&] { predict(view(), MatrixView<float>(C.data(), 3, d + 2)); },
                                {"centroids have 6 columns", "X has 4"});
  std::vector<float> Cn(3 * d, 0.5f);
  Cn[5] = std::numeric_limits<float>::quiet_NaN();
  expect_error<InvalidData>([&] { transform(view(), MatrixView<float>(Cn.data(), 3, d)); },
                            {"centroids", "row 1", "column 1"});
}

}  // namespace
}  // namespace flashkm
