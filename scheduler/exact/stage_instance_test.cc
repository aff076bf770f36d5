// StageInstance: candidate spaces per method, inputs and busy intervals from earlier
// stages, Fit's gap filling, the relaxation tables and RelaxedDivisionBound (checked
// against enumeration of every division), and refused spaces.
#include <algorithm>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/exact/random_task_graphs.h"
#include "scheduler/exact/stage_instance.h"

namespace psched::scheduler::exact {
namespace {

using ::testing::HasSubstr;

// Three tasks; task 1 splits along cout into 4 units with a jumpy (non-monotone) table.
Problem SmallProblem(ProblemOptions options = {}) {
  TaskGraph g;
  g.cost = {{10, 20, 30}, {40, 80, 90}, {5, 5, 5}};
  g.splits = {{}, {TaskGraph::Split{model::SplitAxis::kOutputChannels,
                                    {{12, 22, 25}, {20, 45, 47}, {18, 60, 70}, {41, 81, 91}}}}};
  g.edges = {{0, 1, 0}, {1, 2, 0}};
  absl::StatusOr<Problem> p = Problem::FromTaskGraph(g, testing::RandomPlatform({}), options);
  EXPECT_TRUE(p.ok()) << p.status();
  return *std::move(p);
}

TEST(StageInstanceTest, SpacesFollowTheMethod) {
  const Problem p = SmallProblem(ProblemOptions{0, 3});
  const std::vector<OpId> ops = {0, 1, 2};
  const std::vector<OpSpace> joint = BuildOpSpaces(p, ops, ExactSpace::kJoint);
  ASSERT_EQ(joint[1].size(), 2u);  // unpartitioned + the cout grid
  EXPECT_EQ(joint[1][0].axis, model::SplitAxis::kNone);
  const OpAxis& grid = joint[1][1];
  EXPECT_TRUE(grid.grid());
  EXPECT_EQ(grid.units, 2);  // ceil(4 / 3)
  EXPECT_EQ(grid.clip, 2);   // the part holding the last unit does 1 item, not 3
  EXPECT_EQ(grid.Work(1, true), 1);
  EXPECT_EQ(grid.Work(2, true), 4);
  EXPECT_EQ(BuildOpSpaces(p, ops, ExactSpace::kScheduleOnly)[1].size(), 1u);
  const std::vector<OpSpace> local = BuildOpSpaces(p, ops, ExactSpace::kExpandedLocal);
  ASSERT_EQ(local[1].size(), 1u);
  EXPECT_FALSE(local[1][0].grid());
}

TEST(StageInstanceTest, EarlierStagesGiveInputsAndBusyIntervals) {
  const Problem p = SmallProblem();
  Schedule fixed(p.num_ops(), p.num_devices());
  fixed.Add(ScheduledSubtask{0, 0, 1, model::SplitAxis::kNone, 0, 1, 0, 20});
  const std::vector<OpId> stage = {1, 2};
  absl::StatusOr<StageInstance> in = StageInstance::Build(p, stage, fixed, BuildOpSpaces(p, stage, ExactSpace::kJoint));
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->num_ops(), 2);
  EXPECT_DOUBLE_EQ(in->ExternalReady(0, 0), 20);  // op 1 waits for op 0 on every device
  EXPECT_DOUBLE_EQ(in->ExternalReady(1, 0), 0);   // op 2's input is in the stage
  ASSERT_EQ(in->preds(1).size(), 1u);
  EXPECT_EQ(in->preds(1)[0], 0);
  EXPECT_TRUE(in->ancestor(0, 1));
  // Op 0's subtask ends at 20, the first possible start: it blocks nothing.
  EXPECT_TRUE(in->busy(1).empty());
}

TEST(StageInstanceTest, FitUsesGapsBetweenBusyIntervals) {
  const Problem p = SmallProblem();
  Schedule fixed(p.num_ops(), p.num_devices());
  fixed.Add(ScheduledSubtask{0, 0, 0, model::SplitAxis::kNone, 0, 1, 10, 20});
  fixed.Add(ScheduledSubtask{0, 0, 0, model::SplitAxis::kNone, 0, 1, 30, 40});  // shape only
  const std::vector<OpId> stage = {2};
  absl::StatusOr<StageInstance> in = StageInstance::Build(p, stage, fixed, BuildOpSpaces(p, stage, ExactSpace::kJoint));
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_DOUBLE_EQ(in->Fit(0, 0, 10), 0);    // [0, 10) before the first interval
  EXPECT_DOUBLE_EQ(in->Fit(0, 5, 10), 20);   // [5, 15) overlaps; the gap [20, 30) fits 10...
  EXPECT_DOUBLE_EQ(in->Fit(0, 21, 10), 40);  // ...but not from 21
  EXPECT_DOUBLE_EQ(in->Fit(0, 5, 11), 40);
  EXPECT_DOUBLE_EQ(in->Fit(0, 10, 0), 20);   // an instant task may not sit inside [10, 20)
  EXPECT_DOUBLE_EQ(in->Fit(1, 5, 100), 5);   // other devices are free
}

// Least max over parts of (offset_d + latency) over every division of `units` on `mask`,
// with latencies relaxed to "a part of at least k units" - what RelaxedDivisionBound
// computes.
double Enumerate(const StageInstance& in, int local, int axis, int64_t units, uint32_t mask,
                 const std::vector<double>& offsets) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<int64_t> k(3, 0);
  for (k[0] = 0; k[0] <= units; ++k[0]) {
    for (k[1] = 0; k[0] + k[1] <= units; ++k[1]) {
      k[2] = units - k[0] - k[1];
      double worst = 0;
      bool ok = true;
      for (int d = 0; d < 3; ++d) {
        if (k[static_cast<size_t>(d)] == 0) continue;
        ok &= (mask >> d & 1u) != 0;
        worst = std::max(worst, offsets[static_cast<size_t>(d)] + in.MinPartDuration(local, axis, d, k[static_cast<size_t>(d)]));
      }
      if (ok) best = std::min(best, worst);
    }
  }
  return best;
}

TEST(StageInstanceTest, RelaxedDivisionBoundIsTheLeastBalancedFinish) {
  testing::RandomTaskGraphOptions o;
  o.tasks = 6;
  o.partitionable = 6;
  o.max_units = 9;
  absl::StatusOr<Problem> p = Problem::FromTaskGraph(testing::RandomTaskGraph(o, 11), testing::RandomPlatform(o));
  ASSERT_TRUE(p.ok());
  std::vector<OpId> ops;
  for (OpId op = 0; op < p->num_ops(); ++op) ops.push_back(op);
  const Schedule none(p->num_ops(), p->num_devices());
  absl::StatusOr<StageInstance> in = StageInstance::Build(*p, ops, none, BuildOpSpaces(*p, ops, ExactSpace::kJoint));
  ASSERT_TRUE(in.ok());
  const std::vector<std::vector<double>> offsets = {{0, 0, 0}, {0, 30, 7}, {100, 3, 50}};
  for (int l = 0; l < in->num_ops(); ++l) {
    const OpAxis& a = in->space(l)[1];
    // MinPartDuration is nondecreasing and below every latency of a part that large.
    for (int d = 0; d < 3; ++d) {
      for (int64_t k = 1; k <= a.units; ++k) {
        EXPECT_LE(in->MinPartDuration(l, 1, d, k), in->Duration(l, 1, a.Work(k, false), d));
        if (k > 1) {
          EXPECT_LE(in->MinPartDuration(l, 1, d, k - 1), in->MinPartDuration(l, 1, d, k));
        }
      }
    }
    for (const std::vector<double>& off : offsets) {
      for (uint32_t mask : {7u, 3u, 5u, 4u}) {
        for (int64_t units = 1; units <= a.units; ++units) {
          EXPECT_DOUBLE_EQ(RelaxedDivisionBound(*in, l, 1, units, mask, off), Enumerate(*in, l, 1, units, mask, off))
              << "op " << l << " units " << units << " mask " << mask;
        }
      }
    }
  }
}

TEST(StageInstanceTest, RefusesSpacesThatDoNotFitTheOp) {
  const Problem p = SmallProblem();
  const Schedule none(p.num_ops(), p.num_devices());
  const std::vector<OpId> ops = {1};
  std::vector<OpSpace> bad = BuildOpSpaces(p, ops, ExactSpace::kJoint);
  bad[0].push_back(OpAxis{model::SplitAxis::kOutputChannels, 4, 1, 4, 0, {1, 1}});  // sums to 2, not 4
  EXPECT_THAT(std::string(StageInstance::Build(p, ops, none, bad).status().message()),
              HasSubstr("do not divide its work 4"));
  EXPECT_THAT(std::string(StageInstance::Build(p, ops, none, {OpSpace{}}).status().message()),
              HasSubstr("no candidate plan"));
  const std::vector<OpId> unsorted = {2, 1};
  EXPECT_THAT(std::string(StageInstance::Build(p, unsorted, none, BuildOpSpaces(p, unsorted, ExactSpace::kJoint))
                              .status()
                              .message()),
              HasSubstr("ascending"));
}

}  // namespace
}  // namespace psched::scheduler::exact
