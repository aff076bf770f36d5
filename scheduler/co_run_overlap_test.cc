#include "scheduler/co_run_overlap.h"

#include <vector>

#include "gtest/gtest.h"

namespace psched::scheduler {
namespace {

TEST(OverlapFractionsTest, ShareOfEachIntervalWithAnotherDeviceBusy) {
  const std::vector<BusyInterval> intervals = {
      {.device = 0, .start = 0, .end = 100},    // device 1 busy 60-100: 0.4
      {.device = 1, .start = 60, .end = 160},   // device 0 busy 60-100 and 120-140: 0.6
      {.device = 0, .start = 120, .end = 140},  // within device 1's: 1
      {.device = 0, .start = 200, .end = 300},  // nobody else: 0
  };
  const std::vector<double> f = OverlapFractions(intervals);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_DOUBLE_EQ(f[0], 0.4);
  EXPECT_DOUBLE_EQ(f[1], 0.6);
  EXPECT_DOUBLE_EQ(f[2], 1.0);
  EXPECT_DOUBLE_EQ(f[3], 0.0);
}

// Two other devices busy at the same time count once; intervals of one device that overlap
// each other (subtasks the trace timed on two threads of a cluster) are merged.
TEST(OverlapFractionsTest, OtherDevicesAreUnitedNotAdded) {
  const std::vector<BusyInterval> intervals = {
      {.device = 0, .start = 0, .end = 100},
      {.device = 1, .start = 10, .end = 50},
      {.device = 2, .start = 30, .end = 70},
      {.device = 2, .start = 40, .end = 60},
  };
  const std::vector<double> f = OverlapFractions(intervals);
  EXPECT_DOUBLE_EQ(f[0], 0.6);  // 10-70
  EXPECT_DOUBLE_EQ(f[1], 1.0);  // device 0 throughout
  EXPECT_DOUBLE_EQ(f[2], 1.0);
  EXPECT_DOUBLE_EQ(f[3], 1.0);
}

TEST(OverlapFractionsTest, EmptyIntervalsAndNoneAtAll) {
  EXPECT_TRUE(OverlapFractions({}).empty());
  const std::vector<BusyInterval> intervals = {
      {.device = 0, .start = 50, .end = 50},  // empty: 0, and it covers nothing
      {.device = 1, .start = 40, .end = 60},  // device 0's only interval is empty
      {.device = 0, .start = 70, .end = 60},  // end before start: empty
  };
  const std::vector<double> f = OverlapFractions(intervals);
  EXPECT_EQ(f, (std::vector<double>{0, 0, 0}));
}

}  // namespace
}  // namespace psched::scheduler
