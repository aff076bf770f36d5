// Cached plan rows read back from SQLite: any text must become a Schedule or a Status, and
// a Schedule must survive ValidateSchedule, over a real model's graph and platform.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/backends/plan_json.h"
#include "model/onnx_import.h"
#include "predictor/profiles.h"
#include "scheduler/problem.h"

namespace {

struct Fixture {
  psched::model::Graph graph;
  psched::predictor::Profile profile = psched::predictor::HostProfile(2);
  std::vector<std::string> devices;
  std::optional<psched::scheduler::Problem> problem;

  static Fixture* Make() {
    auto* fixture = new Fixture;
    psched::model::ImportOptions options;
    fixture->graph = *psched::model::ImportOnnxFile(PSCHED_TINY_MODEL, options);
    for (const auto& device : fixture->profile.platform.devices) {
      fixture->devices.push_back(device.name);
    }
    fixture->problem.emplace(*psched::scheduler::Problem::FromGraph(
        fixture->graph, fixture->profile.platform, *fixture->profile.model));
    return fixture;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* fixture = Fixture::Make();
  nlohmann::json plan = nlohmann::json::parse(reinterpret_cast<const char*>(data),
                                              reinterpret_cast<const char*>(data) + size,
                                              nullptr, /*allow_exceptions=*/false);
  if (plan.is_discarded()) return 0;
  absl::StatusOr<psched::scheduler::Schedule> schedule =
      psched::daemon::ScheduleFromJson(fixture->graph, fixture->devices, plan);
  if (schedule.ok()) (void)psched::scheduler::ValidateSchedule(*fixture->problem, *schedule);
  return 0;
}
