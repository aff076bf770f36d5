#include "scheduler/problem.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "predictor/profiles.h"
#include "scheduler/test_problems.h"

namespace psched::scheduler {
namespace {

using model::SplitAxis;
using ::testing::HasSubstr;

class FromGraphTest : public ::testing::Test {
 protected:
  model::Graph graph_ = testing::ConvForkJoin(3);
  predictor::Profile profile_ = *predictor::LoadProfile("pixel4");
};

TEST_F(FromGraphTest, HasEdgesWorkSizesAndDevices) {
  absl::StatusOr<Problem> p = Problem::FromGraph(graph_, profile_.platform, *profile_.model);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->num_ops(), 6);
  EXPECT_EQ(p->num_devices(), 3);
  EXPECT_EQ(p->max_splits(), 3);
  EXPECT_THAT(p->succs(0), ::testing::ElementsAre(1, 2, 3));
  EXPECT_THAT(p->preds(4), ::testing::ElementsAre(1, 2, 3));
  EXPECT_EQ(p->WorkSize(0, SplitAxis::kOutputChannels), 64);
  EXPECT_EQ(p->WorkSize(0, SplitAxis::kRows), 28);
  EXPECT_EQ(p->WorkSize(4, SplitAxis::kOutputChannels), 0);
  EXPECT_TRUE(p->IsPartitionable(0));
  EXPECT_FALSE(p->IsPartitionable(4));
  // One memory domain: no edge ever costs anything.
  EXPECT_DOUBLE_EQ(p->MeanTransferUs(p->succ_transfer_us(0)[0]), 0.0);
  EXPECT_DOUBLE_EQ(p->EdgeCostUs(p->succ_transfer_us(0)[0], 0, 1), 0.0);
}

TEST_F(FromGraphTest, LatencyIsTheModelsPredictionOfTheSubtask) {
  absl::StatusOr<Problem> p = Problem::FromGraph(graph_, profile_.platform, *profile_.model);
  ASSERT_TRUE(p.ok());
  for (int d = 0; d < 3; ++d) {
    EXPECT_DOUBLE_EQ(p->LatencyUs(1, SplitAxis::kNone, 1, d),
                     profile_.model->PredictUs(predictor::WholeOpConfig(graph_, 1), d));
    EXPECT_DOUBLE_EQ(
        p->LatencyUs(1, SplitAxis::kOutputChannels, 24, d),
        profile_.model->PredictUs(
            predictor::SubtaskConfig(graph_, 1, SplitAxis::kOutputChannels, 0, 24), d));
    // Spatial latency is that of the slice starting at row 0 (halo approximation).
    EXPECT_DOUBLE_EQ(
        p->LatencyUs(1, SplitAxis::kRows, 10, d),
        profile_.model->PredictUs(predictor::SubtaskConfig(graph_, 1, SplitAxis::kRows, 0, 10), d));
    EXPECT_DOUBLE_EQ(p->LatencyUs(1, SplitAxis::kInputChannels, 0, d), 0.0);
  }
  // Memoised: the second call returns the same value.
  EXPECT_DOUBLE_EQ(p->LatencyUs(1, SplitAxis::kOutputChannels, 24, 0),
                   p->LatencyUs(1, SplitAxis::kOutputChannels, 24, 0));
}

// PredictAll predicts in batches what LatencyUs would predict one by one, for the analytic
// and the GBDT models (whose batch walk differs from its single-row walk).
TEST_F(FromGraphTest, PredictAllFillsWhatLazyLookupsWouldPredict) {
  for (const char* name : {"pixel4", "pixel4-measured"}) {
    const predictor::Profile profile = *predictor::LoadProfile(name);
    for (int64_t alignment : {1, 8}) {
      absl::StatusOr<Problem> batch = Problem::FromGraph(graph_, profile.platform, *profile.model,
                                                         ProblemOptions{0, alignment});
      absl::StatusOr<Problem> lazy = Problem::FromGraph(graph_, profile.platform, *profile.model,
                                                        ProblemOptions{0, alignment});
      ASSERT_TRUE(batch.ok() && lazy.ok());
      int64_t expected = 0;
      for (OpId op = 0; op < batch->num_ops(); ++op) {
        for (SplitAxis a : model::kAllSplitAxes) {
          const int64_t u = batch->WorkSize(op, a);
          for (int64_t w = 1; w <= u; ++w)
            expected += (w % alignment == 0 || (u - w) % alignment == 0);
        }
      }
      EXPECT_EQ(batch->PredictAll(), expected) << name;
      for (OpId op = 0; op < batch->num_ops(); ++op) {
        for (SplitAxis a : model::kAllSplitAxes) {
          for (int64_t w = 0; w <= batch->WorkSize(op, a); ++w) {
            for (int d = 0; d < 3; ++d) {
              const double want = lazy->LatencyUs(op, a, w, d);
              EXPECT_NEAR(batch->LatencyUs(op, a, w, d), want, 1e-9 * want)
                  << name << " op " << op << " axis " << static_cast<int>(a) << " work " << w;
            }
          }
        }
      }
    }
  }
}

TEST_F(FromGraphTest, ConcurrentLookupsAgree) {
  absl::StatusOr<Problem> p = Problem::FromGraph(graph_, profile_.platform, *profile_.model);
  ASSERT_TRUE(p.ok());
  std::vector<double> a(65), b(65);
  std::thread t1([&] {
    for (int w = 0; w <= 64; ++w) a[w] = p->LatencyUs(0, SplitAxis::kOutputChannels, w, 0);
  });
  std::thread t2([&] {
    for (int w = 64; w >= 0; --w) b[w] = p->LatencyUs(0, SplitAxis::kOutputChannels, w, 0);
  });
  t1.join();
  t2.join();
  EXPECT_EQ(a, b);
}

TEST_F(FromGraphTest, MaxSplitsIsCappedByDeviceCount) {
  EXPECT_EQ(Problem::FromGraph(graph_, profile_.platform, *profile_.model, {.max_splits = 2})
                ->max_splits(),
            2);
  EXPECT_EQ(Problem::FromGraph(graph_, profile_.platform, *profile_.model, {.max_splits = 8})
                ->max_splits(),
            3);
}

TEST_F(FromGraphTest, RejectsBadOptionsAndMismatchedModel) {
  EXPECT_THAT(
      std::string(Problem::FromGraph(graph_, profile_.platform, *profile_.model, {.max_splits = -1})
                      .status()
                      .message()),
      HasSubstr("max_splits must be >= 0"));
  EXPECT_THAT(
      std::string(Problem::FromGraph(graph_, profile_.platform, *profile_.model, {.alignment = 0})
                      .status()
                      .message()),
      HasSubstr("alignment must be >= 1"));
  platform::Platform two = profile_.platform;
  two.devices.pop_back();
  EXPECT_THAT(std::string(Problem::FromGraph(graph_, two, *profile_.model).status().message()),
              HasSubstr("predicts 3 devices but platform 'pixel4' has 2"));
  platform::Platform none = profile_.platform;
  none.devices.clear();
  EXPECT_FALSE(Problem::FromGraph(graph_, none, *profile_.model).ok());
}

TEST_F(FromGraphTest, RejectsOpsOutOfTopologicalOrder) {
  std::swap(graph_.ops[0], graph_.ops[1]);
  for (model::Tensor& t : graph_.tensors) {
    if (t.producer == 0)
      t.producer = 1;
    else if (t.producer == 1)
      t.producer = 0;
  }
  EXPECT_THAT(
      std::string(
          Problem::FromGraph(graph_, profile_.platform, *profile_.model).status().message()),
      HasSubstr("not in topological order"));
}

TEST(TransferTest, SeparateDomainsPayBytesOverBandwidth) {
  const model::Graph g = testing::ConvForkJoin(1);
  predictor::Profile profile = *predictor::LoadProfile("oneplus11");
  profile.platform.devices[0].memory_domain = 1;  // a discrete GPU
  profile.platform.transfer_bytes_per_us = 1000;
  absl::StatusOr<Problem> p = Problem::FromGraph(g, profile.platform, *profile.model);
  ASSERT_TRUE(p.ok());
  const double bytes = 4.0 * 28 * 28 * 64;
  EXPECT_DOUBLE_EQ(p->succ_transfer_us(0)[0], bytes / 1000);
  EXPECT_DOUBLE_EQ(p->EdgeCostUs(p->succ_transfer_us(0)[0], 0, 1), bytes / 1000);
  EXPECT_DOUBLE_EQ(p->EdgeCostUs(p->succ_transfer_us(0)[0], 1, 2), 0.0);
  // 4 of the 6 ordered pairs of distinct devices cross domains.
  EXPECT_DOUBLE_EQ(p->MeanTransferUs(6.0), 4.0);
}

// The model's op latencies plus a fixed sync cost per ordered device pair.
class SyncModel final : public predictor::LatencyModel {
 public:
  SyncModel(std::shared_ptr<const predictor::LatencyModel> base, std::vector<double> sync)
      : base_(std::move(base)), sync_(std::move(sync)) {}
  int num_devices() const override { return base_->num_devices(); }
  double PredictUs(const predictor::OpConfig& c, int d) const override {
    return base_->PredictUs(c, d);
  }
  double SyncUs(int from, int to) const override {
    return sync_[static_cast<size_t>(from * num_devices() + to)];
  }
  std::string Version() const override { return "sync"; }

 private:
  std::shared_ptr<const predictor::LatencyModel> base_;
  std::vector<double> sync_;
};

TEST(TransferTest, SyncCostsAddToEveryEdgeBetweenDevices) {
  const model::Graph g = testing::ConvForkJoin(1);
  predictor::Profile profile = *predictor::LoadProfile("oneplus11");
  profile.platform.devices[0].memory_domain = 1;
  profile.platform.transfer_bytes_per_us = 1000;
  // gpu, cpu.l, cpu.m: 10 us between the CPUs, 30 from the GPU, 20 to it.
  const SyncModel model(profile.model, {0, 30, 30, 20, 0, 10, 20, 10, 0});
  absl::StatusOr<Problem> p = Problem::FromGraph(g, profile.platform, model);
  ASSERT_TRUE(p.ok()) << p.status();
  const double transfer = p->succ_transfer_us(0)[0];
  EXPECT_DOUBLE_EQ(p->EdgeCostUs(transfer, 0, 1), 30 + transfer);  // and across domains
  EXPECT_DOUBLE_EQ(p->EdgeCostUs(transfer, 1, 2), 10);
  EXPECT_DOUBLE_EQ(p->EdgeCostUs(transfer, 2, 0), 20 + transfer);
  EXPECT_DOUBLE_EQ(p->EdgeCostUs(transfer, 2, 2), 0);
  EXPECT_DOUBLE_EQ(p->MeanTransferUs(6.0), 4.0 + 120.0 / 6);
  EXPECT_FALSE(p->EdgesFree());
  EXPECT_FALSE(p->EdgeFree(0));
  const SyncModel negative(profile.model, {0, -1, 0, 0, 0, 0, 0, 0, 0});
  absl::StatusOr<Problem> bad = Problem::FromGraph(g, profile.platform, negative);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("sync cost -1 us from device gpu"));
  // Without sync costs, one domain: every edge is free.
  profile.platform.devices[0].memory_domain = 0;
  absl::StatusOr<Problem> free = Problem::FromGraph(g, profile.platform, *profile.model);
  ASSERT_TRUE(free.ok());
  EXPECT_TRUE(free->EdgesFree());
  EXPECT_TRUE(free->EdgeFree(123));
}

// On a platform with a coherent cache line, output channels split in whole lines of f32 channels
// (the coarser of that and the alignment option); other axes keep the option; PredictAll
// predicts what such plans use.
TEST(AlignmentTest, OutputChannelsSplitOnCacheLines) {
  const model::Graph g = testing::ConvForkJoin(2);  // 64-channel convs
  predictor::Profile profile = *predictor::LoadProfile("oneplus11");
  absl::StatusOr<Problem> none = Problem::FromGraph(g, profile.platform, *profile.model);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->alignment(SplitAxis::kOutputChannels), 1);
  profile.platform.cache_line_bytes = 64;
  for (int64_t option : {1, 8, 3}) {
    absl::StatusOr<Problem> p =
        Problem::FromGraph(g, profile.platform, *profile.model, ProblemOptions{0, option});
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->alignment(SplitAxis::kOutputChannels), option == 3 ? 48 : 16) << option;
    EXPECT_EQ(p->alignment(SplitAxis::kRows), option);
    EXPECT_EQ(p->alignment(SplitAxis::kInputChannels), option);
  }
  absl::StatusOr<Problem> p = Problem::FromGraph(g, profile.platform, *profile.model);
  ASSERT_TRUE(p.ok());
  int64_t expected = 0;
  for (OpId op = 0; op < p->num_ops(); ++op) {
    for (SplitAxis a : model::kAllSplitAxes) {
      const int64_t u = p->WorkSize(op, a), align = p->alignment(a);
      for (int64_t w = 1; w <= u; ++w) expected += (w % align == 0 || (u - w) % align == 0);
    }
  }
  EXPECT_EQ(p->PredictAll(), expected);
  // The line is part of the platform's identity only when set.
  platform::Platform plain = profile.platform;
  plain.cache_line_bytes = 0;
  EXPECT_EQ(plain.Fingerprint().find("line="), std::string::npos);
  EXPECT_NE(profile.platform.Fingerprint().find(";line=64"), std::string::npos);
}

TEST(FromTaskGraphTest, RejectsEveryKindOfBadInput) {
  const platform::Platform two = testing::MakePlatform(2, false);
  auto error = [&two](TaskGraph g) {
    return std::string(Problem::FromTaskGraph(g, two).status().message());
  };
  EXPECT_THAT(error({{}, {{1, 2}, {1}}, {}, {}}), HasSubstr("task 1 has 1 costs for 2 devices"));
  EXPECT_THAT(error({{}, {{1, 2}, {1, -3}}, {}, {}}), HasSubstr("task 1 device 1: cost -3"));
  EXPECT_THAT(error({{}, {{1, 2}, {1, 2}}, {}, {{1, 0, 0}}}), HasSubstr("does not go forward"));
  EXPECT_THAT(error({{}, {{1, 2}, {1, 2}}, {}, {{0, 5, 0}}}), HasSubstr("outside [0, 2)"));
  EXPECT_THAT(error({{}, {{1, 2}, {1, 2}}, {}, {{0, 1, 1}, {0, 1, 2}}}), HasSubstr("listed twice"));
  EXPECT_THAT(error({{}, {{1, 2}, {1, 2}}, {}, {{0, 1, -1}}}), HasSubstr("transfer cost -1"));
  EXPECT_THAT(error({{"a"}, {{1, 2}, {1, 2}}, {}, {}}), HasSubstr("1 names for 2 tasks"));
  EXPECT_THAT(
      std::string(
          Problem::FromTaskGraph({{}, {{1}}, {}, {}}, platform::Platform{}).status().message()),
      HasSubstr("has no devices"));
}

TEST(FromTaskGraphTest, CostsAreFixedAndNothingIsPartitionable) {
  const Problem p = testing::TopcuogluExample();
  EXPECT_EQ(p.num_ops(), 10);
  EXPECT_DOUBLE_EQ(p.LatencyUs(3, SplitAxis::kNone, 1, 1), 8);
  EXPECT_DOUBLE_EQ(p.LatencyUs(3, SplitAxis::kNone, 0, 1), 0);
  EXPECT_FALSE(p.IsPartitionable(3));
  EXPECT_EQ(p.op_name(3), "t3");
  EXPECT_DOUBLE_EQ(p.MeanTransferUs(18), 18);  // every processor is its own domain
}

}  // namespace
}  // namespace psched::scheduler
