#include "scheduler/ranks.h"

#include <gtest/gtest.h>

#include "scheduler/device_timeline.h"
#include "scheduler/test_problems.h"

namespace psched::scheduler {
namespace {

TEST(RanksTest, UpwardRanksOfTheTopcuogluExample) {
  // Topcuoglu et al. (2002), Table 2: rank_u of tasks 1..10.
  const Problem p = testing::TopcuogluExample();
  ExpandedGraph g;
  ASSERT_TRUE(g.Build(p, {}).ok());
  std::vector<double> rank, op_max;
  UpwardRanks(p, g, rank, op_max);
  const double expected[] = {108.0,          77.0,           80.0,           80.0,
                             69.0,           63.0 + 1.0 / 3, 42.0 + 2.0 / 3, 35.0 + 2.0 / 3,
                             44.0 + 1.0 / 3, 14.0 + 2.0 / 3};
  for (int t = 0; t < 10; ++t) EXPECT_NEAR(rank[static_cast<size_t>(t)], expected[t], 1e-9) << t;
}

TEST(RanksTest, DownwardRanksOfTheTopcuogluExample) {
  // rank_d(entry) = 0; rank_d(2) = w(1) + c(1,2) = 13 + 18; rank_d(7) = rank_d(3) + w(3) + 23.
  const Problem p = testing::TopcuogluExample();
  ExpandedGraph g;
  ASSERT_TRUE(g.Build(p, {}).ok());
  std::vector<double> rank, op_max;
  DownwardRanks(p, g, rank, op_max);
  EXPECT_DOUBLE_EQ(rank[0], 0);
  EXPECT_DOUBLE_EQ(rank[1], 31);
  EXPECT_DOUBLE_EQ(rank[2], 25);
  EXPECT_DOUBLE_EQ(rank[6], 25 + (11.0 + 13 + 19) / 3 + 23);
}

TEST(RanksTest, ScopeIgnoresOpsOutside) {
  const Problem p = testing::TopcuogluExample();
  ExpandedGraph g;
  const std::vector<OpId> scope = {6, 9};  // tasks 7 and 10
  ASSERT_TRUE(g.Build(p, {}, scope).ok());
  ASSERT_EQ(g.num_tasks(), 2);
  EXPECT_FALSE(g.InScope(0));
  std::vector<double> rank, op_max;
  UpwardRanks(p, g, rank, op_max);
  EXPECT_NEAR(rank[1], 14.0 + 2.0 / 3, 1e-9);
  EXPECT_NEAR(rank[0], 11.0 + 17 + 14.0 + 2.0 / 3, 1e-9);
}

TEST(DeviceTimelineTest, InsertsIntoTheFirstGapThatFits) {
  DeviceTimeline t;
  EXPECT_DOUBLE_EQ(t.EarliestStart(3, 5), 3);
  t.Insert(0, 4);
  t.Insert(10, 12);
  EXPECT_DOUBLE_EQ(t.EarliestStart(0, 6), 4);    // [4, 10) fits 6 exactly
  EXPECT_DOUBLE_EQ(t.EarliestStart(0, 7), 12);   // too long for the gap
  EXPECT_DOUBLE_EQ(t.EarliestStart(5, 5), 5);    // starts inside the gap
  EXPECT_DOUBLE_EQ(t.EarliestStart(11, 1), 12);  // ready while busy
  EXPECT_DOUBLE_EQ(t.AvailableAt(), 12);
  const int position = t.Insert(4, 10);
  EXPECT_EQ(position, 1);
  EXPECT_DOUBLE_EQ(t.EarliestStart(0, 1), 12);
  t.Erase(position);
  EXPECT_DOUBLE_EQ(t.EarliestStart(0, 1), 4);
  EXPECT_FALSE(t.Append(11, 13));
  EXPECT_TRUE(t.Append(12, 13));
  EXPECT_DOUBLE_EQ(t.AvailableAt(), 13);
  t.Clear();
  EXPECT_EQ(t.size(), 0);
}

TEST(DeviceTimelineTest, ErasingInTheMiddleOpensALargerGap) {
  DeviceTimeline t;
  for (double start : {0.0, 2.0, 4.0}) ASSERT_TRUE(t.Append(start, start + 2));
  ASSERT_TRUE(t.Append(10, 11));  // largest gap: [6, 10)
  EXPECT_DOUBLE_EQ(t.EarliestStart(0, 8), 11);
  t.Erase(1);
  t.Erase(1);  // now [0, 2) [10, 11): gap [2, 10)
  EXPECT_DOUBLE_EQ(t.EarliestStart(0, 8), 2);
  EXPECT_DOUBLE_EQ(t.EarliestStart(0, 9), 11);
}

}  // namespace
}  // namespace psched::scheduler
