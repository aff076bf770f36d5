// The paper's cross-platform table (sec. 6, "Cross-Platform Scheduling"): a schedule planned
// with one platform's latency predictions, then run as a fixed plan on another platform
// (here: re-timed under that platform's predictions, scheduler/retime.h). Each cell is,
// over the models, the re-timed makespan divided by the makespan of the plan made for the
// executing platform itself, so the diagonal is 1 (the paper normalises to its exact
// solver instead, which puts its diagonal at 1.00-1.04).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/graph.h"
#include "predictor/profiles.h"
#include "scheduler/problem.h"
#include "scheduler/scheduler.h"

namespace psched::bench {

struct CrossPlatformResult {
  std::vector<std::string> platforms;
  std::vector<std::string> models;
  // ratio[planned_on][executed_on][model].
  std::vector<std::vector<std::vector<double>>> ratio;
};

// Plans every graph on every profile with `scheduler` and runs each plan on every profile.
// InvalidArgument when the profiles' devices differ (names and order must match, so that a
// plan's device means the same unit everywhere) or fewer than two profiles are given.
absl::StatusOr<CrossPlatformResult> CrossPlatform(const std::vector<model::Graph>& graphs,
                                                  const std::vector<predictor::Profile>& profiles,
                                                  const scheduler::Scheduler& scheduler,
                                                  const scheduler::SchedulerOptions& options,
                                                  const scheduler::ProblemOptions& problem_options);

// Markdown: rows planned on, columns executed on, cells "average / worst" over the models.
std::string CrossPlatformTable(const CrossPlatformResult& result);

}  // namespace psched::bench
