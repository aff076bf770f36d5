// The results of a psched-bench run and their summaries: normalisation to a per-model
// reference (`exact` where it produced a schedule, else the best method on that model), the
// per-method average and worst normalised makespan (the paper's Table 3), and CSV, JSON and
// text renderings. Plain values and pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace psched::bench {

struct ResultRow {
  std::string model;
  std::string platform;
  std::string method;
  bool ok = false;           // a schedule came back and passed ValidateSchedule
  std::string error;         // why not, when !ok
  double makespan_us = 0;
  double planning_ms = 0;    // problem construction (predictions) + planning
  int ops = 0;
  int subtasks = 0;
  int partitioned_ops = 0;   // ops with more than one active subtask
  double normalized = 0;     // makespan / reference of the model; 0 when !ok
  std::string reference;     // the method the model was normalised to
  // Exact methods only (scheduler/exact): how their search ended.
  int stages = 0;
  int stages_proven = 0;            // stages whose schedule is proven optimal
  double stage_gap = 0;             // sum over stages of (makespan - lower bound) / makespan
  double lower_bound_us = 0;        // root bound of the whole problem in the method's space
  double staged_makespan_us = 0;    // the staged solution (makespan_us may be a warm start's)
  std::string exact_source;         // "staged", or the whole-graph warm start that was better
};

// Fills `normalized` and `reference` of every row, per model.
void Normalize(std::vector<ResultRow>& rows);

struct MethodSummary {
  std::string method;
  int models = 0;  // rows with a schedule
  int failed = 0;
  double avg = 0;    // mean normalised makespan
  double worst = 0;  // largest normalised makespan
  double avg_planning_ms = 0;
  double max_planning_ms = 0;
};

// One summary per method, in first-appearance order.
std::vector<MethodSummary> Summarize(const std::vector<ResultRow>& rows);

std::string CsvHeader();
std::string CsvLine(const ResultRow& row);
nlohmann::json ToJson(const std::vector<ResultRow>& rows, const std::vector<MethodSummary>& summary);
// A model x method matrix of normalised makespans, then the Avg/Worst rows per method.
std::string TextTable(const std::vector<ResultRow>& rows, const std::vector<MethodSummary>& summary);

}  // namespace psched::bench
