// The iterative search's inner loop (sample a plan, swap it in, evaluate the stage with
// StageHeft, swap it back) must not allocate once its buffers are warm. Global new is
// replaced in this binary to count allocations.
#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "predictor/profiles.h"
#include "scheduler/partition_aware/candidate_plans.h"
#include "scheduler/partition_aware/stage_heft.h"
#include "scheduler/partition_aware/staging.h"
#include "scheduler/partition_aware/test_graphs.h"

namespace {
std::atomic<long> allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace psched::scheduler::partition_aware {
namespace {

TEST(AllocationTest, SampleAndStageEvaluationAllocateNothingOnceWarm) {
  auto profile = predictor::LoadProfile("oneplus11");
  ASSERT_TRUE(profile.ok()) << profile.status();
  const model::Graph graph = testing::RandomDag(40, 23);
  auto problem = Problem::FromGraph(graph, profile->platform, *profile->model);
  ASSERT_TRUE(problem.ok()) << problem.status();
  std::vector<double> rank(static_cast<size_t>(problem->num_ops()));
  for (OpId op = 0; op < problem->num_ops(); ++op) rank[static_cast<size_t>(op)] = -op;
  const std::vector<std::vector<OpId>> stages = BuildStages(*problem, rank, 20);
  ASSERT_GE(stages.size(), 2u);
  const std::vector<OpId>& stage = stages[1];
  Schedule fixed(problem->num_ops(), problem->num_devices());

  // Warm up: predictions memoised for every work size, buffers at their largest (every op
  // split three ways), a reference run.
  std::vector<PartitionPlan> plans(static_cast<size_t>(problem->num_ops()));
  for (OpId op = 0; op < problem->num_ops(); ++op) {
    const int64_t u = problem->WorkSize(op, model::SplitAxis::kOutputChannels);
    for (int64_t w = 0; w <= u; ++w) {
      for (int d = 0; d < problem->num_devices(); ++d) problem->LatencyUs(op, model::SplitAxis::kOutputChannels, w, d);
    }
    for (model::SplitAxis a : {model::SplitAxis::kInputChannels, model::SplitAxis::kRows}) {
      const int64_t v = problem->WorkSize(op, a);
      for (int64_t w = 0; w <= v; ++w) {
        for (int d = 0; d < problem->num_devices(); ++d) problem->LatencyUs(op, a, w, d);
      }
    }
    if (u >= 3) plans[static_cast<size_t>(op)] = PartitionPlan{model::SplitAxis::kOutputChannels, {1, 1, u - 2}};
  }
  StageHeft heft;
  heft.Prepare(*problem, stage, fixed);
  heft.Run(plans);
  heft.Run(plans, stage.front());
  heft.MarkReference();
  PlanSampler sampler;
  std::mt19937_64 rng(1);
  PartitionPlan candidate{model::SplitAxis::kOutputChannels, {1, 1, 1}};
  candidate.work.reserve(8);

  // Plan vectors rotate between the plan table and `candidate`; the first rounds grow
  // the short ones (a None plan holds one entry) to K entries.
  double sink = 0;
  auto round = [&](int iterations) {
    for (int k = 0; k < iterations; ++k) {
      const OpId op = stage[static_cast<size_t>(k) % stage.size()];
      sampler.Sample(*problem, op, rng, candidate);
      std::swap(plans[static_cast<size_t>(op)], candidate);
      sink += heft.Run(plans, op);
      std::swap(plans[static_cast<size_t>(op)], candidate);
    }
  };
  round(2000);
  const long before = allocations.load();
  round(2000);
  EXPECT_EQ(allocations.load() - before, 0);
  EXPECT_GT(sink, 0);
}

}  // namespace
}  // namespace psched::scheduler::partition_aware
