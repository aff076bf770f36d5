#include "bench/psched_bench/cross_platform.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "scheduler/retime.h"

namespace psched::bench {
namespace {

std::vector<std::string> DeviceNames(const platform::Platform& platform) {
  std::vector<std::string> names;
  for (const platform::DeviceSpec& d : platform.devices) names.push_back(d.name);
  return names;
}

}  // namespace

absl::StatusOr<CrossPlatformResult> CrossPlatform(
    const std::vector<model::Graph>& graphs, const std::vector<predictor::Profile>& profiles,
    const scheduler::Scheduler& scheduler, const scheduler::SchedulerOptions& options,
    const scheduler::ProblemOptions& problem_options) {
  if (profiles.size() < 2) {
    return absl::InvalidArgumentError("the cross-platform table needs at least two platforms");
  }
  const std::vector<std::string> devices = DeviceNames(profiles[0].platform);
  for (const predictor::Profile& p : profiles) {
    if (DeviceNames(p.platform) != devices) {
      return absl::InvalidArgumentError(
          absl::StrCat("platform ", p.platform.name, " has devices [",
                       absl::StrJoin(DeviceNames(p.platform), ", "), "], platform ",
                       profiles[0].platform.name, " [", absl::StrJoin(devices, ", "),
                       "]: a plan can only move between platforms with the same devices"));
    }
  }
  const size_t n = profiles.size();
  CrossPlatformResult result;
  for (const predictor::Profile& p : profiles) result.platforms.push_back(p.platform.name);
  result.ratio.assign(n, std::vector<std::vector<double>>(n));
  for (const model::Graph& graph : graphs) {
    result.models.push_back(graph.name);
    std::vector<scheduler::Problem> problems;
    std::vector<scheduler::Schedule> own;
    for (const predictor::Profile& p : profiles) {
      absl::StatusOr<scheduler::Problem> problem =
          scheduler::Problem::FromGraph(graph, p.platform, *p.model, problem_options);
      if (!problem.ok()) return problem.status();
      absl::StatusOr<scheduler::Schedule> schedule = scheduler.Plan(*problem, options);
      if (!schedule.ok()) {
        return absl::Status(
            schedule.status().code(),
            absl::StrCat(graph.name, " on ", p.platform.name, ": ", schedule.status().message()));
      }
      problems.push_back(*std::move(problem));
      own.push_back(*std::move(schedule));
    }
    for (size_t from = 0; from < n; ++from) {
      for (size_t on = 0; on < n; ++on) {
        absl::StatusOr<scheduler::Schedule> moved =
            scheduler::RetimeSchedule(problems[on], own[from]);
        if (!moved.ok()) return moved.status();
        result.ratio[from][on].push_back(moved->makespan_us() / own[on].makespan_us());
      }
    }
  }
  return result;
}

std::string CrossPlatformTable(const CrossPlatformResult& result) {
  std::string out = "| planned on \\ run on |";
  for (const std::string& p : result.platforms) absl::StrAppend(&out, " ", p, " |");
  absl::StrAppend(&out, "\n| --- |");
  for (size_t i = 0; i < result.platforms.size(); ++i) absl::StrAppend(&out, " --- |");
  absl::StrAppend(&out, "\n");
  for (size_t from = 0; from < result.platforms.size(); ++from) {
    absl::StrAppend(&out, "| ", result.platforms[from], " |");
    for (const std::vector<double>& ratios : result.ratio[from]) {
      double sum = 0;
      for (double r : ratios) sum += r;
      const double worst = ratios.empty() ? 0 : *std::max_element(ratios.begin(), ratios.end());
      absl::StrAppend(
          &out, absl::StrFormat(" %.3f / %.3f |", sum / std::max<size_t>(1, ratios.size()), worst));
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace psched::bench
