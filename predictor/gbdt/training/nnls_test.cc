#include "predictor/gbdt/training/nnls.h"

#include <gtest/gtest.h>

namespace psched::predictor::gbdt::training {
namespace {

TEST(NnlsTest, ExactNonNegativeSolutionIsRecovered) {
  // b = 3 * col0 + 0.002 * col1 over columns of very different scale.
  Matrix a(5, 2);
  std::vector<double> b(5);
  for (int i = 0; i < 5; ++i) {
    a.at(i, 0) = 1.0 + i;
    a.at(i, 1) = 1000.0 * (i * i + 1);
    b[static_cast<size_t>(i)] = 3.0 * a.at(i, 0) + 0.002 * a.at(i, 1);
  }
  const std::vector<double> x = Nnls(a, b);
  EXPECT_NEAR(x[0], 3.0, 1e-9);
  EXPECT_NEAR(x[1], 0.002, 1e-12);
}

TEST(NnlsTest, NegativeLeastSquaresComponentIsClampedToZero) {
  // Unconstrained least squares wants x1 = -1; NNLS must keep x1 = 0 and refit x0.
  Matrix a(3, 2);
  const double rows[3][2] = {{1, 0}, {0, 1}, {1, 1}};
  for (int i = 0; i < 3; ++i) {
    a.at(i, 0) = rows[i][0];
    a.at(i, 1) = rows[i][1];
  }
  const std::vector<double> x = Nnls(a, {2.0, -1.0, 1.0});
  EXPECT_DOUBLE_EQ(x[1], 0.0);
  EXPECT_NEAR(x[0], 1.5, 1e-12);  // min (x0 - 2)^2 + (x0 - 1)^2
}

}  // namespace
}  // namespace psched::predictor::gbdt::training
