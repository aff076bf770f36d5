// The inner SCHEDULE routine of the iterative search runs millions of times: once its
// workspace, output schedule and the problem's latency memo are warm it must not touch the
// heap. This binary counts every global allocation to check that.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "predictor/profiles.h"
#include "scheduler/list_scheduler.h"
#include "scheduler/test_problems.h"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace psched::scheduler {
namespace {

class AllocationTest : public ::testing::TestWithParam<std::string> {};

TEST_P(AllocationTest, WarmScheduleIntoDoesNotAllocate) {
  const model::Graph g = testing::ConvForkJoin(6);
  const predictor::Profile profile = *predictor::LoadProfile("oneplus11");
  const Problem p = *Problem::FromGraph(g, profile.platform, *profile.model);
  std::vector<PartitionPlan> plans(static_cast<size_t>(p.num_ops()));
  plans[0] = PartitionPlan{model::SplitAxis::kOutputChannels, {32, 16, 16}};
  plans[3] = PartitionPlan{model::SplitAxis::kRows, {14, 14}};
  auto list = *MakeListScheduler(GetParam());
  ListScheduler::Workspace ws;
  Schedule out;
  ASSERT_TRUE(list->ScheduleInto(p, plans, ws, out).ok());
  const double makespan = out.makespan_us();
  const long before = g_allocations.load();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(list->ScheduleInto(p, plans, ws, out).ok());
  EXPECT_EQ(g_allocations.load() - before, 0) << GetParam();
  EXPECT_DOUBLE_EQ(out.makespan_us(), makespan);
}

INSTANTIATE_TEST_SUITE_P(AllListSchedulers, AllocationTest,
                         ::testing::Values("heft", "lookahead-heft", "peft", "ldcp", "ceft",
                                           "psls"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace psched::scheduler
