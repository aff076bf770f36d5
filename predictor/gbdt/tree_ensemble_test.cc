#include "predictor/gbdt/tree_ensemble.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace psched::predictor::gbdt {
namespace {

using ::testing::HasSubstr;

// x0 < 10 ? (x1 < 5 ? 1 : 2) : 3, and a stump on x1 < 2 ? 0.5 : -0.5 (NaN goes right).
TreeEnsemble TwoTrees(double base = 0.25) {
  std::vector<std::vector<TreeNode>> trees = {
      {{0, 10.0f, 1, 2, true},
       {1, 5.0f, 3, 4, true},
       {-1, 3.0f, -1, -1, true},
       {-1, 1.0f, -1, -1, true},
       {-1, 2.0f, -1, -1, true}},
      {{1, 2.0f, 1, 2, false}, {-1, 0.5f, -1, -1, true}, {-1, -0.5f, -1, -1, true}},
  };
  return TreeEnsemble(base, 2, trees);
}

TEST(TreeEnsembleTest, PredictFollowsSplitsAndAddsBaseScore) {
  const TreeEnsemble e = TwoTrees();
  ASSERT_TRUE(e.Validate().ok());
  EXPECT_DOUBLE_EQ(e.Predict(std::vector<float>{3, 1}), 0.25 + 1.0 + 0.5);
  EXPECT_DOUBLE_EQ(e.Predict(std::vector<float>{3, 7}), 0.25 + 2.0 - 0.5);
  EXPECT_DOUBLE_EQ(e.Predict(std::vector<float>{10, 1}), 0.25 + 3.0 + 0.5);  // 10 < 10 is false
  EXPECT_DOUBLE_EQ(e.Predict(std::vector<float>{NAN, NAN}), 0.25 + 1.0 - 0.5);
}

TEST(TreeEnsembleTest, BatchEqualsRowByRowOnMonotoneAndShuffledRows) {
  const TreeEnsemble e = TwoTrees();
  std::mt19937_64 rng(7);
  for (bool sorted : {true, false}) {
    std::vector<float> x;
    for (int r = 0; r < 50; ++r) {
      x.push_back(sorted ? static_cast<float>(r) / 2 : static_cast<float>(rng() % 30));
      x.push_back(sorted ? static_cast<float>(r % 3 == 0 ? r : r - 1) / 8
                         : static_cast<float>(rng() % 9));
    }
    std::vector<double> batch(50);
    e.PredictBatch(x, 2, batch);
    for (size_t r = 0; r < 50; ++r) {
      EXPECT_NEAR(batch[r], e.Predict(std::span<const float>(x.data() + 2 * r, 2)), 1e-12)
          << "row " << r << (sorted ? " sorted" : " shuffled");
    }
  }
}

TEST(TreeEnsembleTest, ValidateRejectsMalformedTrees) {
  struct Case {
    std::vector<TreeNode> nodes;
    const char* message;
  };
  const Case cases[] = {
      {{{2, 1.0f, 1, 2, true}, {-1, 0, -1, -1, true}, {-1, 0, -1, -1, true}}, "feature 2 of 2"},
      {{{0, 1.0f, 0, 1, true}, {-1, 0, -1, -1, true}}, "not a later node"},
      {{{0, 1.0f, 1, 3, true}, {-1, 0, -1, -1, true}, {-1, 0, -1, -1, true}}, "not a later node"},
      {{{0, 1.0f, 1, 1, true}, {-1, 0, -1, -1, true}}, "two parents"},
      {{{0, 1.0f, 1, 2, true}, {-1, 0, -1, -1, true}, {-1, 0, -1, -1, true}, {-1, 0, -1, -1, true}},
       "unreachable"},
      {{{-1, NAN, -1, -1, true}}, "not finite"},
  };
  for (const Case& c : cases) {
    const TreeEnsemble e(0, 2, {c.nodes});
    EXPECT_THAT(std::string(e.Validate().message()), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace psched::predictor::gbdt
