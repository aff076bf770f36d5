#include "scheduler/registry/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/test_problems.h"

namespace psched::scheduler {
namespace {

using ::testing::HasSubstr;

TEST(RegistryTest, BuildsEveryScheduleOnlyMethodByName) {
  const Problem p = testing::TopcuogluExample();
  for (std::string name : {"heft", "lookahead-heft", "peft", "ldcp", "ceft", "psls", "single:d2"}) {
    absl::StatusOr<std::unique_ptr<Scheduler>> s = MakeScheduler(name);
    ASSERT_TRUE(s.ok()) << name << ": " << s.status();
    EXPECT_EQ((*s)->name(), name);
    absl::StatusOr<Schedule> plan = (*s)->Plan(p, SchedulerOptions{});
    ASSERT_TRUE(plan.ok()) << name << ": " << plan.status();
    EXPECT_TRUE(ValidateSchedule(p, *plan).ok()) << name;
  }
}

TEST(RegistryTest, PlanWithPlansByNameOrSaysWhy) {
  const Problem p = testing::TopcuogluExample();
  absl::StatusOr<Schedule> plan = PlanWith(p, "heft");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(ValidateSchedule(p, *plan).ok());
  EXPECT_EQ(PlanWith(p, "magic").status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(PlanWith(p, "single:nope").ok());
}

TEST(RegistryTest, ListsNamesWithPlaceholders) {
  const std::vector<std::string> names = RegisteredSchedulers();
  EXPECT_THAT(names, ::testing::IsSupersetOf({"single:<device>", "heft", "lookahead-heft", "peft",
                                              "ldcp", "ceft", "psls"}));
}

TEST(RegistryTest, RejectsUnknownAndMalformedSpecs) {
  auto unknown = MakeScheduler("magic");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("single:<device>"));
  EXPECT_THAT(std::string(MakeScheduler("heft:3").status().message()),
              HasSubstr("takes no argument"));
  EXPECT_THAT(std::string(MakeScheduler("single").status().message()),
              HasSubstr("needs an argument"));
  EXPECT_THAT(std::string(MakeScheduler("single:").status().message()),
              HasSubstr("needs an argument"));
}

}  // namespace
}  // namespace psched::scheduler
