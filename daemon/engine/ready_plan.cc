#include "daemon/engine/ready_plan.h"

namespace psched::daemon {
namespace {

// The plan was validated before it became ready; a field that is still missing reads as its
// default, as the API's empty values.
std::vector<PlanSubtaskInfo> SubtasksOf(const nlohmann::json& schedule) {
  std::vector<PlanSubtaskInfo> subtasks;
  const nlohmann::json& list = schedule.value("subtasks", nlohmann::json::array());
  if (!list.is_array()) return subtasks;
  subtasks.reserve(list.size());
  for (const nlohmann::json& s : list) {
    if (!s.is_object()) continue;
    PlanSubtaskInfo info;
    info.op = s.value("op", "");
    info.op_id = s.value("op_id", int64_t{0});
    info.device = s.value("device", "");
    info.strategy = s.value("strategy", "none");
    const nlohmann::json work = s.value("work", nlohmann::json::array({0, 1}));
    if (work.is_array() && work.size() == 2 && work[0].is_number_integer() &&
        work[1].is_number_integer()) {
      info.work_begin = work[0].get<int64_t>();
      info.work_end = work[1].get<int64_t>();
    }
    info.start_us = s.value("start_us", 0.0);
    info.end_us = s.value("end_us", 0.0);
    info.fallback = s.value("fallback", false);
    subtasks.push_back(std::move(info));
  }
  return subtasks;
}

}  // namespace

std::shared_ptr<const ReadyPlan> MakeReady(ReadyPlan plan) {
  auto answer = std::make_shared<PlanAnswer>();
  answer->subtasks = SubtasksOf(plan.output.schedule);
  answer->cached_schedule_json = PlanAnswerJson(plan, /*cached=*/true);
  plan.answer = std::move(answer);
  return std::make_shared<const ReadyPlan>(std::move(plan));
}

std::string PlanAnswerJson(const ReadyPlan& plan, bool cached) {
  nlohmann::json answer = plan.output.schedule;
  answer["cached"] = cached;
  answer["imported"] = plan.imported;
  answer["planning_ms"] = plan.planning_ms;
  answer["scheduler"] = plan.output.scheduler;
  answer["makespan_us"] = plan.output.makespan_us;
  return answer.dump();
}

}  // namespace psched::daemon
