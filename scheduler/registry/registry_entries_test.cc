// The partition-aware entries of the registry (registry.cc): names, arguments, errors.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/registry/registry.h"

namespace psched::scheduler {
namespace {

using ::testing::HasSubstr;

TEST(PartitionAwareRegistryTest, BuildsEveryMethodWithItsArgument) {
  const std::pair<const char*, const char*> cases[] = {
      {"partition-only", "partition-only"},       {"pa-heft", "pa-heft"},
      {"expanded-equal:heft", "expanded-equal:heft"}, {"expanded-local:psls", "expanded-local:psls"},
      {"iterative", "iterative:heft"},            {"iterative:peft", "iterative:peft"},
      {"iterative:single:gpu", "iterative:single:gpu"},
  };
  for (const auto& [spec, name] : cases) {
    absl::StatusOr<std::unique_ptr<Scheduler>> s = MakeScheduler(spec);
    ASSERT_TRUE(s.ok()) << spec << ": " << s.status();
    EXPECT_EQ((*s)->name(), name);
  }
  EXPECT_THAT(RegisteredSchedulers(),
              ::testing::IsSupersetOf({"partition-only", "expanded-equal:<list>", "expanded-local:<list>",
                                       "pa-heft", "iterative[:<list>]"}));
}

TEST(PartitionAwareRegistryTest, RejectsBadArgumentsClearly) {
  EXPECT_THAT(std::string(MakeScheduler("pa-heft:heft").status().message()), HasSubstr("takes no argument"));
  EXPECT_THAT(std::string(MakeScheduler("partition-only:x").status().message()), HasSubstr("takes no argument"));
  EXPECT_THAT(std::string(MakeScheduler("expanded-equal").status().message()), HasSubstr("needs an argument"));
  const absl::Status unknown_list = MakeScheduler("expanded-local:magic").status();
  EXPECT_EQ(unknown_list.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(unknown_list.message()), HasSubstr("magic"));
  EXPECT_EQ(MakeScheduler("iterative:magic").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace psched::scheduler
