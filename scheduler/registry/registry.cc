#include "scheduler/registry/registry.h"

#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/exact/exact_scheduler.h"
#include "scheduler/partition_aware/expanded_dag_scheduler.h"
#include "scheduler/partition_aware/iterative_search.h"
#include "scheduler/partition_aware/pa_heft.h"
#include "scheduler/partition_aware/partition_only.h"

namespace psched::scheduler {
namespace {

using Factory = std::function<absl::StatusOr<std::unique_ptr<Scheduler>>(std::string_view arg)>;

struct Entry {
  std::string name;         // the spec up to ':'
  std::string placeholder;  // "<device>" when the name takes an argument, else empty
  bool argument_optional;   // "iterative" and "iterative:<list>" are both valid
  Factory make;
};

absl::StatusOr<std::unique_ptr<Scheduler>> MakeScheduleOnly(std::string_view list_name) {
  absl::StatusOr<std::unique_ptr<ListScheduler>> list = MakeListScheduler(list_name);
  if (!list.ok()) return list.status();
  return std::make_unique<ScheduleOnlyScheduler>(*std::move(list));
}

// The partition-aware methods of scheduler/partition_aware (paper sec. 4.3-4.5 and 5).
void AddPartitionAwareEntries(std::vector<Entry>& e) {
  using Made = absl::StatusOr<std::unique_ptr<Scheduler>>;
  e.push_back(Entry{"partition-only", "", false, [](std::string_view) -> Made {
                      return std::make_unique<partition_aware::PartitionOnlyScheduler>();
                    }});
  // Init-captures below: clang 14 (the TSan build's compiler) cannot capture a structured
  // binding.
  for (auto [name, rule] :
       {std::pair{"expanded-equal", partition_aware::ExpansionRule::kEqualSize},
        std::pair{"expanded-local", partition_aware::ExpansionRule::kMinLocalLatency}}) {
    e.push_back(Entry{
        name, "<list>", false, [rule = rule](std::string_view arg) -> Made {
          absl::StatusOr<std::unique_ptr<ListScheduler>> list = MakeListScheduler(arg);
          if (!list.ok()) return list.status();
          return std::make_unique<partition_aware::ExpandedDagScheduler>(rule, *std::move(list));
        }});
  }
  e.push_back(Entry{"pa-heft", "", false, [](std::string_view) -> Made {
                      return std::make_unique<partition_aware::PaHeftScheduler>();
                    }});
  e.push_back(Entry{"iterative", "<list>", true, [](std::string_view arg) -> Made {
                      absl::StatusOr<std::unique_ptr<ListScheduler>> list =
                          MakeListScheduler(arg.empty() ? "heft" : arg);
                      if (!list.ok()) return list.status();
                      return std::make_unique<partition_aware::IterativeScheduler>(
                          *std::move(list));
                    }});
  // The exact reference solvers (scheduler/exact): the joint space and the paper's three
  // restricted Gurobi rows.
  for (auto [name, space] :
       {std::pair{"exact", exact::ExactSpace::kJoint},
        std::pair{"exact-schedule-only", exact::ExactSpace::kScheduleOnly},
        std::pair{"exact-expanded-local", exact::ExactSpace::kExpandedLocal},
        std::pair{"exact-expanded-equal", exact::ExactSpace::kExpandedEqual}}) {
    e.push_back(Entry{name, "", false, [space = space](std::string_view) -> Made {
                        return std::make_unique<exact::ExactScheduler>(space);
                      }});
  }
}

const std::vector<Entry>& Entries() {
  static const std::vector<Entry> kEntries = [] {
    std::vector<Entry> e;
    e.push_back(Entry{"single", "<device>", false, [](std::string_view arg) {
                        return MakeScheduleOnly("single:" + std::string(arg));
                      }});
    for (std::string_view list : {"heft", "lookahead-heft", "peft", "ldcp", "ceft", "psls"}) {
      e.push_back(Entry{std::string(list), "", false,
                        [list](std::string_view) { return MakeScheduleOnly(list); }});
    }
    AddPartitionAwareEntries(e);
    return e;
  }();
  return kEntries;
}

}  // namespace

std::vector<std::string> RegisteredSchedulers() {
  std::vector<std::string> names;
  for (const Entry& e : Entries()) {
    if (e.placeholder.empty()) {
      names.push_back(e.name);
    } else if (e.argument_optional) {
      names.push_back(e.name + "[:" + e.placeholder + "]");
    } else {
      names.push_back(e.name + ":" + e.placeholder);
    }
  }
  return names;
}

absl::StatusOr<Schedule> PlanWith(const Problem& problem, const std::string& spec) {
  absl::StatusOr<std::unique_ptr<Scheduler>> scheduler = MakeScheduler(spec);
  if (!scheduler.ok()) return scheduler.status();
  SchedulerOptions options;
  options.seed = 1;
  return (*scheduler)->Plan(problem, options);
}

absl::StatusOr<std::unique_ptr<Scheduler>> MakeScheduler(std::string_view spec) {
  const size_t colon = spec.find(':');
  const std::string name(spec.substr(0, colon));
  const bool has_arg = colon != std::string_view::npos;
  const std::string_view arg = has_arg ? spec.substr(colon + 1) : std::string_view();
  for (const Entry& e : Entries()) {
    if (e.name != name) continue;
    if (e.placeholder.empty() && has_arg) {
      return absl::InvalidArgumentError(
          absl::StrCat("scheduler '", name, "' takes no argument, got '", std::string(spec), "'"));
    }
    if (!e.placeholder.empty() && !e.argument_optional && arg.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("scheduler '", name, "' needs an argument: ", name, ":", e.placeholder));
    }
    return e.make(arg);
  }
  return absl::NotFoundError(absl::StrCat("unknown scheduler '", std::string(spec), "'; known: ",
                                          absl::StrJoin(RegisteredSchedulers(), ", ")));
}

}  // namespace psched::scheduler
