// Cost of one inner SCHEDULE call with a warm workspace: what the iterative search pays
// per candidate plan. A 21-op fork-join stage (the paper's maximum stage is 20 ops) with
// three ops partitioned, on the oneplus11 profile, and the 10-task Topcuoglu example.
#include <benchmark/benchmark.h>

#include "predictor/profiles.h"
#include "scheduler/list_scheduler.h"
#include "scheduler/test_problems.h"

namespace psched::scheduler {
namespace {

const char* const kSchedulers[] = {"heft", "lookahead-heft", "peft", "ldcp", "ceft", "psls"};

void BM_Stage21(benchmark::State& state) {
  const model::Graph g = testing::ConvForkJoin(18);
  const predictor::Profile profile = *predictor::LoadProfile("oneplus11");
  const Problem p = *Problem::FromGraph(g, profile.platform, *profile.model);
  std::vector<PartitionPlan> plans(static_cast<size_t>(p.num_ops()));
  plans[0] = PartitionPlan{model::SplitAxis::kOutputChannels, {32, 16, 16}};
  plans[5] = PartitionPlan{model::SplitAxis::kRows, {14, 14}};
  plans[static_cast<size_t>(p.num_ops() - 1)] =
      PartitionPlan{model::SplitAxis::kInputChannels, {600, 552}};
  auto list = *MakeListScheduler(kSchedulers[state.range(0)]);
  ListScheduler::Workspace ws;
  Schedule out;
  for (auto _ : state) {
    benchmark::DoNotOptimize(list->ScheduleInto(p, plans, ws, out));
  }
  state.SetLabel(kSchedulers[state.range(0)]);
  state.counters["makespan_us"] = out.makespan_us();
}
BENCHMARK(BM_Stage21)->DenseRange(0, 5);

// One 20-op stage at the end of a 503-op graph, the 483 ops before it fixed: the per-call
// cost must stay close to that of a standalone stage.
void BM_LateStageOf503(benchmark::State& state) {
  const model::Graph g = testing::ConvForkJoin(500);
  const predictor::Profile profile = *predictor::LoadProfile("oneplus11");
  const Problem p = *Problem::FromGraph(g, profile.platform, *profile.model);
  auto list = *MakeListScheduler(kSchedulers[state.range(0)]);
  std::vector<OpId> early, stage;
  for (OpId op = 0; op < p.num_ops(); ++op) (op < p.num_ops() - 20 ? early : stage).push_back(op);
  ListScheduler::Workspace ws;
  Schedule fixed, out;
  if (!list->ScheduleInto(p, {}, ws, fixed, ScheduleScope{early, nullptr}).ok()) {
    state.SkipWithError("early stage failed");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(list->ScheduleInto(p, {}, ws, out, ScheduleScope{stage, &fixed}));
  }
  state.SetLabel(kSchedulers[state.range(0)]);
}
BENCHMARK(BM_LateStageOf503)->DenseRange(0, 5);

void BM_Topcuoglu(benchmark::State& state) {
  const Problem p = testing::TopcuogluExample();
  auto list = *MakeListScheduler(kSchedulers[state.range(0)]);
  ListScheduler::Workspace ws;
  Schedule out;
  for (auto _ : state) {
    benchmark::DoNotOptimize(list->ScheduleInto(p, {}, ws, out));
  }
  state.SetLabel(kSchedulers[state.range(0)]);
  state.counters["makespan"] = out.makespan_us();
}
BENCHMARK(BM_Topcuoglu)->DenseRange(0, 5);

}  // namespace
}  // namespace psched::scheduler

BENCHMARK_MAIN();
