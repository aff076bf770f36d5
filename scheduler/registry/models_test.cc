// Every schedule-only method on the paper's workloads (graph-only ONNX from
// $PSCHED_SHARED_DIR/models) and every phone profile: schedules must validate, and the
// single-device latencies must relate as the paper's single-device rows suggest.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <ostream>
#include <string>

#include "model/onnx_import.h"
#include "predictor/profiles.h"
#include "scheduler/registry/registry.h"
#include "source_dir.h"

namespace psched::scheduler {
namespace {

std::string ModelPath(const std::string& name) {
  const char* dir = std::getenv("PSCHED_SHARED_DIR");
  const std::string shared = dir != nullptr ? dir : PSCHED_SOURCE_DIR "/../shared";
  return shared + "/models/graph-only/" + name + ".onnx";
}

struct Case {
  std::string model;
  std::string profile;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " on " << c.profile; }

class WorkloadTest : public ::testing::TestWithParam<Case> {};

TEST_P(WorkloadTest, EveryScheduleOnlyMethodValidates) {
  absl::StatusOr<model::Graph> graph = model::ImportOnnxFile(ModelPath(GetParam().model), {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<predictor::Profile> profile = predictor::LoadProfile(GetParam().profile);
  ASSERT_TRUE(profile.ok());
  absl::StatusOr<Problem> problem = Problem::FromGraph(*graph, profile->platform, *profile->model);
  ASSERT_TRUE(problem.ok()) << problem.status();
  std::map<std::string, double> makespan;
  for (const std::string name : {"single:gpu", "single:cpu.l", "single:cpu.m", "heft",
                                 "lookahead-heft", "peft", "ldcp", "ceft", "psls"}) {
    auto scheduler = MakeScheduler(name);
    ASSERT_TRUE(scheduler.ok()) << scheduler.status();
    absl::StatusOr<Schedule> s = (*scheduler)->Plan(*problem, SchedulerOptions{});
    ASSERT_TRUE(s.ok()) << name << ": " << s.status();
    const absl::Status valid = ValidateSchedule(*problem, *s);
    EXPECT_TRUE(valid.ok()) << name << ": " << valid;
    makespan[name] = s->makespan_us();
  }
  // Paper, single-device rows: GPU-only 2.3-4.8x faster than CPU(L)-only on average.
  const double gpu_speedup = makespan["single:cpu.l"] / makespan["single:gpu"];
  EXPECT_GT(gpu_speedup, 1.5);
  EXPECT_LT(gpu_speedup, 7.0);
  // Co-execution never loses to the GPU alone by more than rounding: HEFT places each op
  // at its earliest finish, which the GPU-only placement also offers.
  EXPECT_LE(makespan["heft"], makespan["single:gpu"] * 1.0001);
}

INSTANTIATE_TEST_SUITE_P(Workloads, WorkloadTest,
                         ::testing::Values(Case{"squeezenet_v1_1", "oneplus11"},
                                           Case{"inceptionv3", "oneplus11"},
                                           Case{"peleenet", "motorola2022"},
                                           Case{"hrnet_w18_small_v1", "pixel4"},
                                           Case{"squeezeresnet_v1_0", "pixel5"}),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           return param_info.param.model + "_" + param_info.param.profile;
                         });

}  // namespace
}  // namespace psched::scheduler
