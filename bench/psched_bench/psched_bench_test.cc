#include <string>

#include "bench/psched_bench/cross_platform.h"
#include "bench/psched_bench/results_table.h"
#include "bench/psched_bench/schedule_gantt.h"
#include "bench/psched_bench/taskgraph_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/list_scheduler.h"
#include "scheduler/registry/registry.h"
#include "scheduler/test_problems.h"

namespace psched::bench {
namespace {

using ::testing::HasSubstr;

constexpr char kDiamond[] = R"({
  "devices": ["gpu", {"name": "cpu", "kind": "cpu", "memory_domain": 1}],
  "tasks": [
    {"name": "d", "cost": {"gpu": 4, "cpu": 6}},
    {"name": "a", "cost": [2, 3]},
    {"name": "b", "cost": [5, 5]},
    {"name": "c", "cost": [1, 9]}
  ],
  "edges": [["a", "b"], {"from": "a", "to": "c", "transfer_us": 2.5}, ["b", "d"], [3, 0]]
})";

TEST(CrossPlatformTest, OwnPlansOnTheDiagonalMovedPlansElsewhere) {
  const std::vector<model::Graph> graphs{scheduler::testing::ConvForkJoin(3),
                                         scheduler::testing::ConvForkJoin(4)};
  std::vector<predictor::Profile> profiles;
  for (const char* name : {"oneplus11", "pixel5"})
    profiles.push_back(*predictor::LoadProfile(name));
  const scheduler::ScheduleOnlyScheduler heft(*scheduler::MakeListScheduler("heft"));
  absl::StatusOr<CrossPlatformResult> r = CrossPlatform(graphs, profiles, heft, {}, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->platforms, (std::vector<std::string>{"oneplus11", "pixel5"}));
  ASSERT_EQ(r->ratio.size(), 2u);
  for (size_t p = 0; p < 2; ++p) {
    ASSERT_EQ(r->ratio[p][p].size(), 2u);
    for (double v : r->ratio[p][p]) EXPECT_DOUBLE_EQ(v, 1.0);
  }
  // The phones' GPU/CPU balance differs, so a plan's splits fit only the phone it was made for.
  for (size_t m = 0; m < 2; ++m) {
    EXPECT_GT(r->ratio[0][1][m], 1.0) << r->models[m];
    EXPECT_GT(r->ratio[1][0][m], 1.0) << r->models[m];
  }
  const std::string table = CrossPlatformTable(*r);
  EXPECT_THAT(table, HasSubstr("| oneplus11 | 1.000 / 1.000 |"));
  EXPECT_THAT(table, HasSubstr("| planned on \\ run on | oneplus11 | pixel5 |"));
}

TEST(CrossPlatformTest, PlatformsWithOtherDevicesAreRefused) {
  const std::vector<model::Graph> graphs{scheduler::testing::ConvForkJoin(2)};
  std::vector<predictor::Profile> profiles{*predictor::LoadProfile("pixel5"),
                                           predictor::HostProfile(2)};
  const scheduler::ScheduleOnlyScheduler heft(*scheduler::MakeListScheduler("heft"));
  absl::StatusOr<CrossPlatformResult> r = CrossPlatform(graphs, profiles, heft, {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("platform host has devices [cpu.0, cpu.1, gpu]"));
  EXPECT_FALSE(CrossPlatform(graphs, {profiles[0]}, heft, {}, {}).ok());
}

TEST(TaskGraphJsonTest, ParsesAndOrdersTopologically) {
  absl::StatusOr<TaskGraphInput> in = ParseTaskGraphJson(kDiamond);
  ASSERT_TRUE(in.ok()) << in.status();
  ASSERT_EQ(in->platform.devices.size(), 2u);
  EXPECT_EQ(in->platform.devices[1].memory_domain, 1);
  EXPECT_EQ(in->tasks.names, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(in->tasks.cost[3], (std::vector<double>{4, 6}));
  ASSERT_EQ(in->tasks.edges.size(), 4u);
  for (const auto& e : in->tasks.edges) EXPECT_LT(e.from, e.to);
  EXPECT_DOUBLE_EQ(in->tasks.edges[1].transfer_us, 2.5);
  absl::StatusOr<scheduler::Problem> problem =
      scheduler::Problem::FromTaskGraph(in->tasks, in->platform);
  EXPECT_TRUE(problem.ok()) << problem.status();
}

TEST(TaskGraphJsonTest, RejectsBadInputWithItsLocation) {
  const std::pair<const char*, const char*> cases[] = {
      {"not json", "not valid JSON"},
      {R"({"devices": [], "tasks": [{"cost": [1]}]})", "devices: must be a non-empty array"},
      {R"({"devices": ["a"], "tasks": [{"cost": [1, 2]}]})",
       "tasks[0].cost: has 2 entries for 1 devices"},
      {R"({"devices": ["a"], "tasks": [{"cost": [-1]}]})",
       "tasks[0].cost[0]: must be finite and >= 0"},
      {R"({"devices": ["a", "b"], "tasks": [{"cost": {"a": 1}}]})", "no cost for device 'b'"},
      {R"({"devices": ["a"], "tasks": [{"cost": {"z": 1}}]})", "unknown device 'z'"},
      {R"({"devices": ["a", "a"], "tasks": [{"cost": [1, 1]}]})", "duplicate device name 'a'"},
      {R"({"devices": ["a"], "tasks": [{"name": "x", "cost": [1]}, {"name": "x", "cost": [1]}]})",
       "duplicate task name 'x'"},
      {R"({"devices": ["a"], "tasks": [{"cost": [1]}], "edges": [["t0", "nope"]]})",
       "unknown task 'nope'"},
      {R"({"devices": ["a"], "tasks": [{"cost": [1]}], "edges": [[0, 5]]})",
       "task index 5 outside [0, 1)"},
      {R"({"devices": ["a"], "tasks": [{"cost": [1]}, {"cost": [1]}], "edges": [[0, 1], [1, 0]]})",
       "cycle"},
      {R"({"devices": ["a"], "tasks": [{"cost": [1]}], "edges": [[0, 0]]})", "depends on itself"},
  };
  for (const auto& [text, message] : cases) {
    absl::StatusOr<TaskGraphInput> in = ParseTaskGraphJson(text);
    ASSERT_FALSE(in.ok()) << text;
    EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(in.status().message()), HasSubstr(message)) << text;
  }
  EXPECT_EQ(LoadTaskGraphFile("/nonexistent/graph.json").status().code(),
            absl::StatusCode::kNotFound);
}

constexpr char kSplit[] = R"({
  "devices": ["gpu", "cpu"],
  "alignment": 2,
  "max_splits": 2,
  "tasks": [
    {"name": "a", "cost": [4, 9], "splits": {"cout": [[2, 5], [3, 8], {"gpu": 4, "cpu": 9}]}},
    {"name": "b", "cost": [1, 1]}
  ],
  "edges": [["a", "b"]]
})";

TEST(TaskGraphJsonTest, ParsesSplitTablesAndWritesThemBack) {
  absl::StatusOr<TaskGraphInput> in = ParseTaskGraphJson(kSplit);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->options.alignment, 2);
  EXPECT_EQ(in->options.max_splits, 2);
  ASSERT_EQ(in->tasks.splits.size(), 2u);
  ASSERT_EQ(in->tasks.splits[0].size(), 1u);
  EXPECT_EQ(in->tasks.splits[0][0].axis, model::SplitAxis::kOutputChannels);
  EXPECT_EQ(in->tasks.splits[0][0].cost[2], (std::vector<double>{4, 9}));
  EXPECT_TRUE(in->tasks.splits[1].empty());
  absl::StatusOr<scheduler::Problem> problem =
      scheduler::Problem::FromTaskGraph(in->tasks, in->platform, in->options);
  ASSERT_TRUE(problem.ok()) << problem.status();
  EXPECT_EQ(problem->WorkSize(0, model::SplitAxis::kOutputChannels), 3);
  EXPECT_DOUBLE_EQ(problem->LatencyUs(0, model::SplitAxis::kOutputChannels, 2, 1), 8);
  EXPECT_EQ(problem->alignment(), 2);
  // Written and read again, the instance is the same.
  absl::StatusOr<TaskGraphInput> again = ParseTaskGraphJson(TaskGraphToJson(*in));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->tasks.names, in->tasks.names);
  EXPECT_EQ(again->tasks.cost, in->tasks.cost);
  EXPECT_EQ(again->tasks.splits[0][0].cost, in->tasks.splits[0][0].cost);
  EXPECT_EQ(again->tasks.edges.size(), 1u);
  EXPECT_EQ(again->options.alignment, 2);
  EXPECT_EQ(again->platform.devices[1].name, "cpu");
}

TEST(TaskGraphJsonTest, RejectsBadSplitTablesWithTheirLocation) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"devices": ["a"], "tasks": [{"cost": [1], "splits": [1]}]})",
       "tasks[0].splits: must be an object"},
      {R"({"devices": ["a"], "tasks": [{"cost": [1], "splits": {"rows": [[1]]}}]})",
       "unknown split axis"},
      {R"({"devices": ["a"], "tasks": [{"cost": [1], "splits": {"none": [[1]]}}]})",
       "unknown split axis"},
      {R"({"devices": ["a"], "tasks": [{"cost": [1], "splits": {"cin": []}}]})", "non-empty array"},
      {R"({"devices": ["a"], "tasks": [{"cost": [1], "splits": {"cin": [[1, 2]]}}]})",
       "tasks[0].splits.cin[0]: has 2 entries for 1 devices"},
      {R"({"devices": ["a"], "tasks": [{"cost": [1], "splits": {"cin": [[-3]]}}]})",
       "tasks[0].splits.cin[0][0]: must be finite and >= 0"},
      {R"({"devices": ["a"], "alignment": 0, "tasks": [{"cost": [1]}]})",
       "alignment: must be an integer >= 1"},
      {R"({"devices": ["a"], "max_splits": -1, "tasks": [{"cost": [1]}]})",
       "max_splits: must be an integer >= 0"},
  };
  for (const auto& [text, message] : cases) {
    absl::StatusOr<TaskGraphInput> in = ParseTaskGraphJson(text);
    ASSERT_FALSE(in.ok()) << text;
    EXPECT_THAT(std::string(in.status().message()), HasSubstr(message)) << text;
  }
}

TEST(ResultsTableTest, NormalizesToExactOrTheBestMethod) {
  auto row = [](std::string model, std::string method, bool ok, double makespan) {
    ResultRow r;
    r.model = std::move(model);
    r.platform = "p";
    r.method = std::move(method);
    r.ok = ok;
    r.makespan_us = makespan;
    if (!ok) r.error = "boom";
    return r;
  };
  std::vector<ResultRow> rows = {
      row("m1", "heft", true, 200),  row("m1", "iterative", true, 100),
      row("m2", "heft", true, 300),  row("m2", "iterative", true, 150),
      row("m2", "exact", true, 120), row("m2", "pa-heft", false, 0),
  };
  Normalize(rows);
  EXPECT_DOUBLE_EQ(rows[0].normalized, 2.0);
  EXPECT_EQ(rows[0].reference, "iterative");
  EXPECT_DOUBLE_EQ(rows[3].normalized, 1.25);
  EXPECT_EQ(rows[3].reference, "exact");
  EXPECT_DOUBLE_EQ(rows[5].normalized, 0);
  const std::vector<MethodSummary> summary = Summarize(rows);
  ASSERT_EQ(summary.size(), 4u);
  EXPECT_EQ(summary[0].method, "heft");
  EXPECT_DOUBLE_EQ(summary[0].avg, 2.25);
  EXPECT_DOUBLE_EQ(summary[0].worst, 2.5);
  EXPECT_EQ(summary[3].failed, 1);
  EXPECT_THAT(CsvHeader(), HasSubstr("model,platform,method,makespan_us,planning_ms"));
  EXPECT_THAT(CsvLine(rows[5]), HasSubstr("pa-heft"));
  EXPECT_THAT(TextTable(rows, summary), HasSubstr("iterative"));
  EXPECT_EQ(ToJson(rows, summary)["summary"][0]["worst"].get<double>(), 2.5);
}

TEST(ResultsTableTest, ReportsHowTheExactSearchEnded) {
  ResultRow r;
  r.model = "m";
  r.platform = "p";
  r.method = "exact";
  r.ok = true;
  r.makespan_us = 1000;
  r.stages = 5;
  r.stages_proven = 4;
  r.stage_gap = 0.0125;
  r.lower_bound_us = 950;
  r.staged_makespan_us = 1000;
  r.exact_source = "staged";
  std::vector<ResultRow> rows = {r};
  Normalize(rows);
  EXPECT_THAT(
      CsvHeader(),
      HasSubstr("stages,stages_proven,stage_gap,lower_bound_us,staged_makespan_us,exact_source"));
  EXPECT_THAT(CsvLine(rows[0]), HasSubstr(",5,4,0.012500,950.000,1000.000,staged"));
  EXPECT_THAT(TextTable(rows, Summarize(rows)),
              HasSubstr("proven   4/5    gap   1.25%  bound     0.950 ms  staged"));
  EXPECT_EQ(ToJson(rows, Summarize(rows))["results"][0]["exact"]["stages_proven"].get<int>(), 4);
}

TEST(ScheduleGanttTest, DrawsTheProblemsDevicesAndOps) {
  absl::StatusOr<TaskGraphInput> in = ParseTaskGraphJson(kDiamond);
  ASSERT_TRUE(in.ok());
  absl::StatusOr<scheduler::Problem> problem =
      scheduler::Problem::FromTaskGraph(in->tasks, in->platform);
  ASSERT_TRUE(problem.ok());
  scheduler::Schedule s(4, 2);
  s.Add({0, 0, 0, model::SplitAxis::kNone, 0, 1, 0, 2000});
  s.Add({1, 0, 0, model::SplitAxis::kNone, 0, 1, 2000, 7000});
  s.Add({2, 0, 1, model::SplitAxis::kNone, 0, 1, 4500, 13500});
  s.Add({3, 0, 0, model::SplitAxis::kNone, 0, 1, 13500, 17500});
  const std::string svg = ScheduleGanttSvg(*problem, s, timeline::GanttOptions{"demo & test", 800});
  EXPECT_THAT(svg, HasSubstr("<svg"));
  EXPECT_THAT(svg, HasSubstr("demo &amp; test"));
  EXPECT_THAT(svg, HasSubstr(">gpu<"));
  EXPECT_THAT(svg, HasSubstr(">cpu<"));
  EXPECT_THAT(svg, HasSubstr("makespan 17.500 ms"));
  size_t bars = 0;
  for (size_t p = svg.find("<title>"); p != std::string::npos; p = svg.find("<title>", p + 1))
    ++bars;
  EXPECT_EQ(bars, 4u);
  EXPECT_THAT(svg, HasSubstr("<title>c (op 2): 4500.0-13500.0 us</title>"));
  EXPECT_FALSE(WriteScheduleGanttSvg("/nonexistent/dir/x.svg", *problem, s).ok());
}

}  // namespace
}  // namespace psched::bench
