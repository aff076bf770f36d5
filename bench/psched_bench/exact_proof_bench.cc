// exact_proof_bench: the exact solvers on seeded random DAGs, whole-graph - the measured
// evidence of docs/evaluation.md ("Exact reference: proofs"). Per instance it runs the
// branch and bound and the CBC program (both warm-started with HEFT's schedule), and
// brute force where the instance is small enough, and writes one CSV row per solver; with
// --export it also writes each instance as a task-graph file for an outside solver
// (exact_proof.sh feeds them to cpsat_check.py).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/psched_bench/taskgraph_json.h"
#include "fmt/core.h"
#include "scheduler/exact/branch_and_bound.h"
#include "scheduler/exact/brute_force.h"
#include "scheduler/exact/mip_formulation.h"
#include "scheduler/exact/random_task_graphs.h"
#include "scheduler/heft.h"

namespace psched::bench {
namespace {

namespace fs = std::filesystem;
namespace ex = scheduler::exact;

struct Flags {
  int tasks = 20;
  int seeds = 10;
  std::string edge_probabilities = "0.15,0.3,0.5";
  int partitionable = 0;
  int max_units = 3;
  double time_limit_s = 60;
  std::string formulations = "bnb,mip";
  int64_t brute_force_limit = 50'000'000;
  std::string export_dir;
  std::string out_csv;
};

int Main(int argc, char** argv) {
  CLI::App app{"exact_proof_bench: the exact solvers on seeded random DAGs"};
  Flags f;
  app.add_option("--tasks", f.tasks, "tasks per DAG")->capture_default_str();
  app.add_option("--seeds", f.seeds, "instances per edge probability (seeds 1..N)")->capture_default_str();
  app.add_option("--edge-probability", f.edge_probabilities, "comma-separated")->capture_default_str();
  app.add_option("--partitionable", f.partitionable, "tasks with split tables")->capture_default_str();
  app.add_option("--max-units", f.max_units, "work units of a split table (2..N)")->capture_default_str();
  app.add_option("--time-limit", f.time_limit_s, "seconds per solver and instance")->capture_default_str();
  app.add_option("--formulations", f.formulations, "bnb, mip, brute (comma-separated)")->capture_default_str();
  app.add_option("--brute-force-limit", f.brute_force_limit, "largest enumeration brute force attempts");
  app.add_option("--export", f.export_dir, "write every instance as a task-graph JSON file here");
  app.add_option("--out", f.out_csv, "CSV file (default: stdout)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!f.export_dir.empty()) fs::create_directories(f.export_dir);
  std::ofstream file;
  if (!f.out_csv.empty()) file.open(f.out_csv, std::ios::trunc);
  std::ostream& out = f.out_csv.empty() ? std::cout : file;
  out << "instance,tasks,edge_probability,partitionable,formulation,makespan_us,lower_bound_us,proven,seconds,nodes\n";
  const std::vector<std::string> formulations = absl::StrSplit(f.formulations, ',', absl::SkipEmpty());
  for (const std::string& p_text : std::vector<std::string>(absl::StrSplit(f.edge_probabilities, ','))) {
    const double p = std::stod(p_text);
    for (int seed = 1; seed <= f.seeds; ++seed) {
      ex::testing::RandomTaskGraphOptions o;
      o.tasks = f.tasks;
      o.edge_probability = p;
      o.partitionable = f.partitionable;
      o.max_units = f.max_units;
      TaskGraphInput input{ex::testing::RandomPlatform(o), ex::testing::RandomTaskGraph(o, static_cast<uint64_t>(seed)), {}};
      const std::string name = absl::StrCat("n", f.tasks, "_p", p_text, "_s", f.partitionable, "_seed", seed);
      input.platform.name = name;
      if (!f.export_dir.empty()) std::ofstream(fs::path(f.export_dir) / (name + ".json")) << TaskGraphToJson(input);
      absl::StatusOr<scheduler::Problem> problem = scheduler::Problem::FromTaskGraph(input.tasks, input.platform);
      if (!problem.ok()) {
        fmt::print(stderr, "{}: {}\n", name, std::string(problem.status().message()));
        return 1;
      }
      std::vector<scheduler::OpId> ops;
      for (scheduler::OpId op = 0; op < problem->num_ops(); ++op) ops.push_back(op);
      const scheduler::Schedule none(problem->num_ops(), problem->num_devices());
      absl::StatusOr<ex::StageInstance> instance = ex::StageInstance::Build(
          *problem, ops, none, ex::BuildOpSpaces(*problem, ops, ex::ExactSpace::kJoint));
      if (!instance.ok()) {
        fmt::print(stderr, "{}: {}\n", name, std::string(instance.status().message()));
        return 1;
      }
      // HEFT's unpartitioned schedule is the shared warm start.
      absl::StatusOr<scheduler::Schedule> heft = scheduler::HeftScheduler().Schedule(*problem);
      if (!heft.ok()) return 1;
      ex::StageSolution warm;
      warm.subtasks.assign(heft->subtasks().begin(), heft->subtasks().end());
      warm.plans.assign(heft->plans().begin(), heft->plans().end());
      warm.makespan_us = heft->makespan_us();
      ex::SolveLimits limits;
      limits.time_limit_s = f.time_limit_s;
      for (const std::string& formulation : formulations) {
        ex::StageResult r;
        if (formulation == "bnb") {
          r = ex::SolveBranchAndBound(*instance, limits, &warm);
        } else if (formulation == "mip") {
          absl::StatusOr<ex::StageResult> mip = ex::SolveMip(*instance, limits, &warm);
          if (!mip.ok()) {
            fmt::print(stderr, "{} mip: {}\n", name, std::string(mip.status().message()));
            continue;
          }
          r = *std::move(mip);
        } else if (formulation == "brute") {
          const auto begin = std::chrono::steady_clock::now();
          absl::StatusOr<ex::StageSolution> brute = ex::SolveBruteForce(*instance, f.brute_force_limit);
          if (!brute.ok()) {
            fmt::print(stderr, "{} brute: {}\n", name, std::string(brute.status().message()));
            continue;
          }
          r.best = *std::move(brute);
          r.lower_bound_us = r.best.makespan_us;
          r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        } else {
          fmt::print(stderr, "unknown formulation '{}'\n", formulation);
          return 2;
        }
        out << fmt::format("{},{},{},{},{},{:.3f},{:.3f},{},{:.3f},{}\n", name, f.tasks, p_text, f.partitionable,
                           formulation, r.best.makespan_us, r.lower_bound_us, r.proven() ? "true" : "false",
                           r.seconds, r.nodes);
        out.flush();
        fmt::print(stderr, "{} {:<5} {:10.1f} lb {:10.1f} {} {:.2f} s\n", name, formulation, r.best.makespan_us,
                   r.lower_bound_us, r.proven() ? "proven" : "open", r.seconds);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace psched::bench

int main(int argc, char** argv) { return psched::bench::Main(argc, argv); }
