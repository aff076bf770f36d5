#include "daemon/engine/engine.h"

#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <limits>
#include <thread>
#include <vector>

#include "cache/sqlite.h"
#include "gtest/gtest.h"
#include "sync/mutex.h"
#include "sync/notification.h"

namespace psched::daemon {
namespace {

namespace fs = std::filesystem;

// A backend with fixed behaviour: y = 2 * x on a [1, 2] tensor, plans that take `plan_delay`.
// Bytes starting with "BAD" do not import; bytes containing "noweights" have no weights
// unless synthesized; bytes containing "external" reference external data. A shape given for
// "x" becomes the input's dims.
class FakeBackend final : public Backend {
 public:
  struct Counters {
    std::atomic<int> plans{0};
    std::atomic<int> loads{0};
    std::atomic<int> runs{0};
    std::atomic<int> live_handles{0};  // imported models not yet freed
    std::atomic<int> planning{0};       // Plan calls running now
    std::atomic<int> most_planning{0};  // the most at once
    sync::Mutex mu;
    std::string last_timeout_ms ABSL_GUARDED_BY(mu);  // "" when the last plan had none
  };

  // Stands for an imported model's graph, weights and compiled plans.
  class Handle final : public ModelHandle {
   public:
    explicit Handle(std::shared_ptr<Counters> counters) : counters_(std::move(counters)) {
      ++counters_->live_handles;
    }
    ~Handle() override { --counters_->live_handles; }

   private:
    std::shared_ptr<Counters> counters_;
  };

  FakeBackend(std::shared_ptr<Counters> counters, absl::Duration plan_delay,
              sync::Notification* run_gate)
      : counters_(std::move(counters)), plan_delay_(plan_delay), run_gate_(run_gate) {
    platform_.name = "fake";
    platform_.fingerprint = "fake;cpu.0";
    platform_.predictor_version = "fake-v1";
    platform_.devices = {{"cpu.0", "cpu", {0}, ""}};
    platform_.calibration_key = "fake;cpu.0:0";
  }

  PlatformInfo platform() const override {
    sync::MutexLock lock(&mu_);
    return platform_;
  }
  std::string executor_name() const override { return "fake"; }
  bool RunUsesPlan() const override { return true; }

  absl::StatusOr<LoadedModel> Load(std::string_view onnx, const std::string&,
                                   const LoadOptions& options) override {
    ++counters_->loads;
    if (onnx.substr(0, 3) == "BAD") return absl::InvalidArgumentError("not an ONNX model");
    const bool external = onnx.find("external") != std::string_view::npos;
    if (external && options.refuse_external_data) {
      return absl::InvalidArgumentError("tensor 'w' keeps its data in an external file");
    }
    LoadedModel model;
    model.summary = {{"ops", 3}, {"op_counts", {{"conv2d", 2}}}, {"flops", 100}, {"params", 7}};
    auto x = options.input_shapes.find("x");
    model.inputs = {
        {"x", x != options.input_shapes.end() ? x->second : std::vector<int64_t>{1, 2}}};
    model.outputs = {{"y", {1, 2}}};
    model.has_weights = options.synthesize_weights ||
                        (!external && onnx.find("noweights") == std::string_view::npos);
    model.handle = std::make_shared<Handle>(counters_);
    return model;
  }
  absl::Status CheckScheduler(const std::string& scheduler,
                              const std::map<std::string, std::string>&) override {
    if (scheduler == "heft" || scheduler == "peft" || scheduler == "iterative") {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError("unknown scheduler '" + scheduler + "'");
  }
  absl::StatusOr<PlanOutput> Plan(const LoadedModel&, const std::string& scheduler,
                                  const std::map<std::string, std::string>& options,
                                  const ProgressFn& progress, const CancelledFn&) override {
    ++counters_->plans;
    {
      sync::MutexLock lock(&counters_->mu);
      auto timeout = options.find("timeout_ms");
      counters_->last_timeout_ms = timeout != options.end() ? timeout->second : "";
    }
    const int now = ++counters_->planning;
    for (int most = counters_->most_planning.load();
         now > most && !counters_->most_planning.compare_exchange_weak(most, now);) {
    }
    progress({"scheduling", 0});
    absl::SleepFor(plan_delay_);
    --counters_->planning;
    PlanOutput out;
    out.scheduler = scheduler;
    out.makespan_us = 123.5;
    out.schedule = {{"subtasks",
                     {{{"op", "conv"},
                       {"device", "cpu.0"},
                       {"strategy", "none"},
                       {"work", {0, 1}},
                       {"start_us", 0.0},
                       {"end_us", 123.5}}}}};
    return out;
  }
  // A plan is usable when every subtask runs on cpu.0, the fake's only device.
  absl::Status CheckPlan(const LoadedModel&, const nlohmann::json& schedule,
                         const nlohmann::json* /*calibration*/) override {
    if (!schedule.contains("subtasks") || !schedule["subtasks"].is_array()) {
      return absl::DataLossError("no subtasks");
    }
    for (const nlohmann::json& s : schedule["subtasks"]) {
      if (!s.is_object() || s.value("device", nlohmann::json()) != "cpu.0") {
        return absl::DataLossError("unknown device");
      }
    }
    return absl::OkStatus();
  }
  // The input's bytes once compiled: a model of a larger input holds more.
  int64_t ResidentBytes(const LoadedModel& model) const override {
    return model.inputs[0].Elements() * 4;
  }
  // Activations: the input, x, twice (x and y); weights 1 KiB.
  absl::StatusOr<PlanMemory> MemoryOf(const LoadedModel& model, const PlanOutput*) override {
    PlanMemory memory;
    const int64_t x_bytes = model.inputs[0].Elements() * 4;
    memory.activation_bytes = 2 * x_bytes;
    memory.weight_bytes = 1024;
    memory.largest_tensors = {{"x", x_bytes}, {"y", x_bytes}};
    return memory;
  }
  absl::StatusOr<RunOutput> Run(const LoadedModel&, const PlanOutput* plan,
                                const std::vector<HostTensor>& inputs) override {
    ++counters_->runs;
    if (plan == nullptr) return absl::InternalError("no plan");
    if (run_gate_ != nullptr) run_gate_->WaitForNotification();
    RunOutput out;
    HostTensor y{"y", {1, 2}, inputs[0].data};
    for (float& v : y.data) v *= 2;
    out.outputs.push_back(y);
    out.execute_us = 10;
    return out;
  }
  // Fits "fake-cal-<budget>"; a budget of 13 fails like a device error.
  absl::StatusOr<CalibrationOutput> Calibrate(
      const std::vector<std::shared_ptr<const LoadedModel>>& models, double budget_s,
      const CalibrationProgressFn& progress) override {
    if (budget_s == 13) return absl::UnavailableError("device lost");
    progress({"cpu.0", 1, 0, budget_s, budget_s, true});
    CalibrationOutput out;
    out.predictor_version = "fake-cal-" + std::to_string(static_cast<int>(budget_s));
    out.params = {{"version", out.predictor_version}};
    out.samples = static_cast<int>(models.size());
    return out;
  }
  absl::Status UseCalibration(const nlohmann::json& params) override {
    if (!params.contains("version")) return absl::InvalidArgumentError("no version");
    sync::MutexLock lock(&mu_);
    platform_.predictor_version = params["version"].get<std::string>();
    return absl::OkStatus();
  }

 private:
  std::shared_ptr<Counters> counters_;
  absl::Duration plan_delay_;
  sync::Notification* run_gate_;
  mutable sync::Mutex mu_;
  PlatformInfo platform_ ABSL_GUARDED_BY(mu_);
};

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "psched_engine_XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    config_.state_dir = dir_;
    config_.max_model_bytes = 1000;
    config_.queue_capacity = 4;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Engine> MakeEngine(absl::Duration plan_delay = absl::ZeroDuration(),
                                     sync::Notification* run_gate = nullptr) {
    auto store = cache::Store::Open(dir_);
    EXPECT_TRUE(store.ok()) << store.status();
    return std::make_unique<Engine>(config_, std::move(*store),
                                    std::make_unique<FakeBackend>(counters_, plan_delay, run_gate));
  }

  std::string dir_;
  // No background first-start calibration under the tests' plans.
  DaemonConfig config_ = [] {
    DaemonConfig config;
    config.auto_calibrate = false;
    return config;
  }();
  std::shared_ptr<FakeBackend::Counters> counters_ = std::make_shared<FakeBackend::Counters>();
};

TEST_F(EngineTest, RegistersByContentHash) {
  auto engine = MakeEngine();
  auto first = engine->RegisterModel("model bytes", "m", {});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->first.id.size(), 64u);
  EXPECT_FALSE(first->second);
  EXPECT_EQ(first->first.summary["ops"], 3);
  auto again = engine->RegisterModel("model bytes", "other name", {});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->second);
  EXPECT_EQ(again->first.id, first->first.id);
  EXPECT_EQ(again->first.name, "m");

  auto models = engine->ListModels();
  ASSERT_EQ(models->size(), 1u);
  EXPECT_EQ((*models)[0].inputs[0].dims, (std::vector<int64_t>{1, 2}));
  auto got = engine->GetModel(first->first.id.substr(0, 10));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->id, first->first.id);

  auto removed = engine->RemoveModel(first->first.id);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(engine->GetModel(first->first.id).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(EngineTest, RefusesBadAndOversizeModels) {
  auto engine = MakeEngine();
  auto bad = engine->RegisterModel("BAD bytes", "", {});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("not an ONNX model"), std::string::npos);
  auto big = engine->RegisterModel(std::string(1001, 'x'), "", {});
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(engine->RegisterModel("", "", {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->ListModels()->size(), 0u);
}

TEST_F(EngineTest, PlanIsCachedAcrossRestarts) {
  std::string id;
  {
    auto engine = MakeEngine();
    id = engine->RegisterModel("model", "m", {})->first.id;
    auto plan = engine->GetPlan(id, "heft", {}, false, {}, nullptr);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_FALSE(plan->cached);
    EXPECT_DOUBLE_EQ(plan->makespan_us, 123.5);
    engine->Shutdown();
  }
  auto engine = MakeEngine();
  auto plan = engine->GetPlan(id, "heft", {}, false, {}, nullptr);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->cached);
  EXPECT_EQ(plan->ready->output.schedule["subtasks"][0]["device"], "cpu.0");
  EXPECT_EQ(counters_->plans.load(), 1);
  // Different options are a different cache key; refresh recomputes.
  EXPECT_FALSE(engine->GetPlan(id, "heft", {{"seed", "1"}}, false, {}, nullptr)->cached);
  EXPECT_FALSE(engine->GetPlan(id, "heft", {}, true, {}, nullptr)->cached);
  EXPECT_EQ(counters_->plans.load(), 3);
  EXPECT_EQ(engine->GetPlan(id, "nope", {}, false, {}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(engine->GetPlan("0123456789", "heft", {}, false, {}, nullptr).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(EngineTest, ARequestNamingNoSchedulerGetsTheDefaultWithItsOptions) {
  auto engine = MakeEngine();
  const std::string id = engine->RegisterModel("model", "m", {})->first.id;
  auto key_of = [&](const std::string& scheduler, std::map<std::string, std::string> options) {
    auto plan = engine->GetPlan(id, scheduler, options, false, {}, nullptr);
    EXPECT_TRUE(plan.ok()) << plan.status();
    return plan.ok() ? plan->ready->key.scheduler_config : "";
  };
  // config_.default_scheduler is DaemonConfig's default, "iterative;local_moves=5".
  EXPECT_EQ(key_of("", {}), "iterative;local_moves=5");
  EXPECT_EQ(key_of("", {{"seed", "2"}}), "iterative;local_moves=5;seed=2");
  EXPECT_EQ(key_of("", {{"local_moves", "0"}}), "iterative;local_moves=0");
  EXPECT_EQ(key_of("iterative", {}), "iterative");
  EXPECT_EQ(counters_->plans.load(), 4);
  EXPECT_TRUE(engine->PlanReady(id, "", {{"seed", "2"}}));
  EXPECT_FALSE(engine->PlanReady(id, "", {{"seed", "3"}}));
  // The same request again is the same key, answered from memory.
  auto again = engine->GetPlan(id, "", {}, false, {}, nullptr);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->cached);
  EXPECT_EQ(counters_->plans.load(), 4);
  EXPECT_EQ(Engine::ParseSchedulerConfig("pa-heft;alignment=8;seed=1").options,
            (std::map<std::string, std::string>{{"alignment", "8"}, {"seed", "1"}}));
}

TEST_F(EngineTest, ConcurrentIdenticalPlansComputeOnce) {
  auto engine = MakeEngine(absl::Milliseconds(200));
  std::string id = engine->RegisterModel("model", "m", {})->first.id;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  std::atomic<int> progress_events{0};
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] {
      auto plan = engine->GetPlan(id, "peft", {}, false, {},
                                  [&](const PlanProgressEvent&) { ++progress_events; });
      if (plan.ok() && plan->makespan_us == 123.5) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 6);
  EXPECT_EQ(counters_->plans.load(), 1);
  EXPECT_GE(progress_events.load(), 1);
}

TEST_F(EngineTest, PlanDeadlineIsHonoured) {
  auto engine = MakeEngine(absl::Milliseconds(300));
  std::string id = engine->RegisterModel("model", "m", {})->first.id;
  CallContext context;
  context.deadline = absl::Now() + absl::Milliseconds(50);
  auto plan = engine->GetPlan(id, "heft", {}, false, context, nullptr);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kDeadlineExceeded);
  CallContext cancelled;
  cancelled.cancelled = [] { return true; };
  EXPECT_EQ(engine->GetPlan(id, "peft", {}, false, cancelled, nullptr).status().code(),
            absl::StatusCode::kCancelled);
}

// Plans of different keys run at most max_concurrent_plans at once, the others queued (and
// counted by Status); a request waits at most max_planning_s for its plan and asks for a
// search budget (timeout_ms) of at most that, unless an admin asks.
TEST_F(EngineTest, PlanningRunsOnABoundedPoolWithACappedTime) {
  config_.max_concurrent_plans = 1;
  auto engine = MakeEngine(absl::Seconds(1));
  const std::string id = engine->RegisterModel("model", "m", {})->first.id;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  const absl::Time start = absl::Now();
  for (const char* scheduler : {"heft", "peft", "iterative"}) {
    threads.emplace_back([&, scheduler] {
      if (engine->GetPlan(id, scheduler, {}, false, {}, nullptr).ok()) ++ok;
    });
  }
  // Planners run at idle priority, so on a busy machine they may take a while to queue up:
  // wait for all three (within the first plan's second), then look.
  ResourceUsage busy = engine->Status().resources;
  for (const absl::Time until = absl::Now() + absl::Milliseconds(900);
       busy.planning + busy.planning_queued < 3 && absl::Now() < until;
       busy = engine->Status().resources) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(busy.planning, 1);
  EXPECT_EQ(busy.planning_queued, 2);
  EXPECT_EQ(busy.max_concurrent_plans, 1);
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 3);
  EXPECT_EQ(counters_->most_planning.load(), 1);
  EXPECT_GE(absl::Now() - start, absl::Seconds(3));
  {
    sync::MutexLock lock(&counters_->mu);
    EXPECT_EQ(counters_->last_timeout_ms, "") << "the methods' own budgets";
  }
  EXPECT_EQ(engine->Status().resources.planning, 0);

  config_.max_planning_s = 1;
  config_.max_concurrent_plans = 0;
  engine = MakeEngine(absl::Milliseconds(1500));
  auto capped = engine->GetPlan(id, "heft", {{"timeout_ms", "5000"}}, false, {}, nullptr);
  ASSERT_EQ(capped.status().code(), absl::StatusCode::kResourceExhausted) << capped.status();
  EXPECT_NE(capped.status().message().find("took longer than max_planning_s = 1 s"),
            std::string::npos)
      << capped.status();
  {
    sync::MutexLock lock(&counters_->mu);
    EXPECT_EQ(counters_->last_timeout_ms, "1000") << "a longer timeout is cut to the cap";
  }
  CallContext admin;
  admin.uncapped_planning = true;
  auto uncapped = engine->GetPlan(id, "peft", {{"timeout_ms", "5000"}}, false, admin, nullptr);
  EXPECT_TRUE(uncapped.ok()) << uncapped.status();
  sync::MutexLock lock(&counters_->mu);
  EXPECT_EQ(counters_->last_timeout_ms, "5000");
}

TEST_F(EngineTest, InferChecksInputsAndComputes) {
  auto engine = MakeEngine();
  std::string id = engine->RegisterModel("model", "m", {})->first.id;
  auto result = engine->Infer(id, {{"x", {1, 2}, {1.5f, -2.0f}}}, "", {});
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->outputs.size(), 1u);
  EXPECT_EQ(result->outputs[0].data, (std::vector<float>{3.0f, -4.0f}));
  EXPECT_EQ(result->executor, "fake");
  EXPECT_GE(result->latency_us, result->execute_us);

  auto zeros = engine->Infer(id, {}, "", {});
  ASSERT_TRUE(zeros.ok());
  EXPECT_EQ(zeros->outputs[0].data, (std::vector<float>{0.0f, 0.0f}));
  auto unnamed = engine->Infer(id, {{"", {}, {1.0f, 1.0f}}}, "", {});
  ASSERT_TRUE(unnamed.ok());

  struct Case {
    std::vector<HostTensor> inputs;
    const char* expected;
  };
  const Case cases[] = {
      {{{"x", {1, 2}, {1.0f}}}, "has 1 values; shape [1, 2] needs 2"},
      {{{"x", {2, 1}, {1.0f, 2.0f}}}, "has dims [2, 1]; the model declares [1, 2]"},
      {{{"z", {1, 2}, {1.0f, 2.0f}}}, "no input named 'z'"},
      {{{"x", {}, {1.0f, 2.0f}}, {"x", {}, {1.0f, 2.0f}}}, "given twice"},
  };
  for (const Case& c : cases) {
    auto bad = engine->Infer(id, c.inputs, "", {});
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << c.expected;
    EXPECT_NE(bad.status().message().find(c.expected), std::string::npos) << bad.status();
  }
  EXPECT_EQ(engine->Infer("abcdef0123", {}, "", {}).status().code(), absl::StatusCode::kNotFound);
}

// A plan whose peak memory is over max_plan_memory_bytes is refused by GetPlan and Infer,
// naming the peak, the largest tensors and the key, and never runs; one under it is served
// with its memory.
TEST_F(EngineTest, PlansOverTheMemoryBudgetAreRefusedBeforeTheyRun) {
  config_.max_plan_memory_bytes = int64_t{64} << 20;
  auto engine = MakeEngine();
  RegisterOptions big_shape;
  big_shape.input_shapes = {{"x", {1, 16, 1024, 1024}}};  // 64 MiB, twice
  const std::string big = engine->RegisterModel("model", "big", big_shape)->first.id;
  auto plan = engine->GetPlan(big, "heft", {}, false, {}, nullptr);
  ASSERT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted) << plan.status();
  const std::string message(plan.status().message());
  EXPECT_NE(message.find("needs 128.0 MiB (134218752 bytes) at its peak"), std::string::npos)
      << message;
  EXPECT_NE(message.find("largest tensors 'x' 64.0 MiB, 'y' 64.0 MiB"), std::string::npos)
      << message;
  EXPECT_NE(message.find("over max_plan_memory_bytes = 67108864 (64.0 MiB)"), std::string::npos)
      << message;
  auto infer = engine->Infer(big, {}, "heft", {});
  EXPECT_EQ(infer.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(counters_->runs.load(), 0);

  const std::string small = engine->RegisterModel("model", "small", {})->first.id;
  auto served = engine->GetPlan(small, "heft", {}, false, {}, nullptr);
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_EQ(served->ready->output.memory.peak_bytes(), 2 * 2 * 4 + 1024);
  ASSERT_TRUE(engine->Infer(small, {}, "heft", {}).ok());

  // The refusal holds for the plan read back from the cache by a restarted daemon.
  engine->Shutdown();
  engine = MakeEngine();
  EXPECT_EQ(engine->GetPlan(big, "heft", {}, false, {}, nullptr).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(counters_->runs.load(), 1);
}

// Each user's registrations count against their own quota; past it RESOURCE_EXHAUSTED names
// the quota and the usage, and no one's model is removed; admins are exempt.
TEST_F(EngineTest, PerUserQuotasRefuseTheOwnerOnly) {
  config_.max_models_per_user = 2;
  config_.max_model_bytes_per_user = 30;
  auto engine = MakeEngine();
  auto as = [](const std::string& uid, bool admin = false) {
    RegisterOptions options;
    options.owner = uid;
    options.owner_description = "uid " + uid + " (u" + uid + ")";
    options.quota_exempt = admin;
    return options;
  };
  ASSERT_TRUE(engine->RegisterModel("model one", "", as("1000")).ok());
  ASSERT_TRUE(engine->RegisterModel("model two", "", as("1000")).ok());
  auto third = engine->RegisterModel("model three", "", as("1000"));
  ASSERT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted) << third.status();
  EXPECT_NE(third.status().message().find(
                "over max_models_per_user = 2: uid 1000 (u1000) has registered 2 models of "
                "18 bytes (18 bytes)"),
            std::string::npos)
      << third.status();
  // Already registered (by anyone): no room needed.
  EXPECT_TRUE(engine->RegisterModel("model one", "", as("1000")).ok());
  // Bytes: 18 + 13 is over 30.
  ASSERT_TRUE(engine->RegisterModel("model number four.", "", as("1001")).ok());
  auto big = engine->RegisterModel("model five...", "", as("1001"));
  ASSERT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(big.status().message().find(
                "over max_model_bytes_per_user = 30 (30 bytes): uid 1001 (u1001) has registered "
                "1 model of 18 bytes (18 bytes) and this one is 13 bytes"),
            std::string::npos)
      << big.status();
  EXPECT_TRUE(engine->RegisterModel("model three", "", as("0", true)).ok());
  EXPECT_EQ(engine->ListModels()->size(), 4u);
}

TEST_F(EngineTest, ModelWithoutWeightsCannotRun) {
  auto engine = MakeEngine();
  std::string id = engine->RegisterModel("noweights", "g", {})->first.id;
  EXPECT_EQ(engine->Infer(id, {}, "", {}).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(engine->GetPlan(id, "heft", {}, false, {}, nullptr).ok());
}

TEST_F(EngineTest, FullQueueIsResourceExhaustedAndDeadlinesApply) {
  sync::Notification gate;
  config_.queue_capacity = 2;
  auto engine = MakeEngine(absl::ZeroDuration(), &gate);
  std::string id = engine->RegisterModel("model", "m", {})->first.id;
  ASSERT_TRUE(engine->GetPlan(id, "", {}, false, {}, nullptr).ok());
  // GetPlan queued the plan's warm-up; it must not take one of the two places.
  while (engine->QueueProgress().depth > 0) absl::SleepFor(absl::Milliseconds(1));
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&] {
      if (engine->Infer(id, {}, "", {}).ok()) ++ok;
    });
  }
  while (engine->QueueProgress().depth < 2) absl::SleepFor(absl::Milliseconds(1));
  auto refused = engine->Infer(id, {}, "", {});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  gate.Notify();
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 2);
  EXPECT_EQ(engine->Status().inferences, 2);
}

// Cached plans are served from memory; the statistics the store keeps still add up once
// read, and a purge or removal takes the plans out of memory too.
TEST_F(EngineTest, HotPlansComeFromMemoryAndStatisticsStillAddUp) {
  std::string id;
  {
    auto engine = MakeEngine();
    id = engine->RegisterModel("model", "m", {})->first.id;
    ASSERT_FALSE(engine->GetPlan(id, "heft", {}, false, {}, nullptr)->cached);
    for (int i = 0; i < 5; ++i) {
      EXPECT_TRUE(engine->GetPlan(id, "heft", {}, false, {}, nullptr)->cached);
    }
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(engine->Infer(id, {{"x", {1, 2}, {1.0f, 2.0f}}}, "heft", {}).ok());
    }
    EXPECT_EQ(counters_->plans.load(), 1);
    // Five GetPlan calls and three inferences found the plan cached.
    EXPECT_EQ(engine->CacheStats()->hits, 8);
    auto plans = engine->ListCachedPlans(id);
    ASSERT_TRUE(plans.ok());
    ASSERT_EQ(plans->size(), 1u);
    EXPECT_EQ((*plans)[0].hits, 8);

    ASSERT_TRUE(engine->PurgeCache(false).ok());
    EXPECT_FALSE(engine->GetPlan(id, "heft", {}, false, {}, nullptr)->cached);
    EXPECT_EQ(counters_->plans.load(), 2);
    ASSERT_TRUE(engine->Infer(id, {{"x", {1, 2}, {1.0f, 2.0f}}}, "heft", {}).ok());
    engine->Shutdown();
  }
  // Inferences reach the store by the time the engine is gone.
  auto store = cache::Store::Open(dir_);
  ASSERT_TRUE(store.ok());
  auto usage = (*store)->GetUsage(id);
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->inferences, 4);
  EXPECT_GT(usage->total_latency_us, 0);

  auto engine = MakeEngine();
  ASSERT_TRUE(engine->GetPlan(id, "heft", {}, false, {}, nullptr)->cached);
  ASSERT_TRUE(engine->RemoveModel(id).ok());
  EXPECT_EQ(engine->GetPlan(id, "heft", {}, false, {}, nullptr).status().code(),
            absl::StatusCode::kNotFound);
  engine->Shutdown();
}

TEST_F(EngineTest, CalibrationChangesThePlanKeyAndSurvivesRestarts) {
  auto engine = MakeEngine();
  EXPECT_EQ(engine->Calibrate(1, [](const CalibrationProgressEvent&) {}, {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  auto model = engine->RegisterModel("model bytes", "m", {});
  ASSERT_TRUE(model.ok());
  const std::string id = model->first.id;
  ASSERT_TRUE(engine->GetPlan(id, "heft", {}, false, {}, nullptr).ok());
  EXPECT_EQ(counters_->plans, 1);

  for (double bad : {0.0, -1.0, Engine::kMaxCalibrationBudgetS + 1}) {
    EXPECT_EQ(engine->Calibrate(bad, [](const CalibrationProgressEvent&) {}, {}).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  auto failed = engine->Calibrate(13, [](const CalibrationProgressEvent&) {}, {});
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(engine->platform().predictor_version, "fake-v1");

  std::vector<CalibrationProgressEvent> events;
  auto calibrated =
      engine->Calibrate(2, [&](const CalibrationProgressEvent& e) { events.push_back(e); }, {});
  ASSERT_TRUE(calibrated.ok()) << calibrated.status();
  EXPECT_EQ(calibrated->samples, 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].finished);
  EXPECT_EQ(engine->platform().predictor_version, "fake-cal-2");

  // The old plan is keyed by the old predictor version: planning runs again.
  auto replanned = engine->GetPlan(id, "heft", {}, false, {}, nullptr);
  ASSERT_TRUE(replanned.ok());
  EXPECT_FALSE(replanned->cached);
  EXPECT_EQ(replanned->predictor_version, "fake-cal-2");
  EXPECT_EQ(counters_->plans, 2);
  engine->Shutdown();
  engine.reset();

  // A restarted daemon plans with the stored calibration and finds the plan made with it.
  engine = MakeEngine();
  EXPECT_EQ(engine->platform().predictor_version, "fake-cal-2");
  auto cached = engine->GetPlan(id, "heft", {}, false, {}, nullptr);
  ASSERT_TRUE(cached.ok());
  EXPECT_TRUE(cached->cached);
  EXPECT_EQ(counters_->plans, 2);
}

// Edits the engine's database behind its back, as a damaged disk or a hostile user would.
void EditDatabase(const std::string& dir, const std::string& sql) {
  absl::StatusOr<cache::Connection> db =
      cache::Connection::Open((fs::path(dir) / cache::Store::kFileName).string());
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE(db->Exec(sql).ok()) << sql;
}

TEST_F(EngineTest, DamagedModelBytesAreQuarantinedUntilTheOriginalIsAddedAgain) {
  std::string id;
  {
    auto engine = MakeEngine();
    id = engine->RegisterModel("model bytes", "m", {})->first.id;
    engine->Shutdown();
  }
  EditDatabase(dir_, "UPDATE model_chunks SET bytes = CAST('model bytez' AS BLOB)");
  auto engine = MakeEngine();
  const int loads_before = counters_->loads.load();
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto result = engine->Infer(id, {{"x", {1, 2}, {1.0f, 2.0f}}}, "", {});
    EXPECT_EQ(result.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(result.status().message().find(id), std::string::npos) << result.status();
    EXPECT_NE(result.status().message().find("quarantined"), std::string::npos);
  }
  EXPECT_EQ(engine->GetPlan(id, "heft", {}, false, {}, nullptr).status().code(),
            absl::StatusCode::kDataLoss);
  // The damaged bytes never reached the importer.
  EXPECT_EQ(counters_->loads.load(), loads_before);

  auto readded = engine->RegisterModel("model bytes", "m", {});
  ASSERT_TRUE(readded.ok()) << readded.status();
  EXPECT_TRUE(readded->second);
  auto result = engine->Infer(id, {{"x", {1, 2}, {1.0f, 2.0f}}}, "", {});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outputs[0].data, (std::vector<float>{2.0f, 4.0f}));
}

TEST_F(EngineTest, MissingModelChunksAreQuarantinedUntilTheOriginalIsAddedAgain) {
  std::string id;
  {
    auto engine = MakeEngine();
    id = engine->RegisterModel("model bytes", "m", {})->first.id;
    engine->Shutdown();
  }
  EditDatabase(dir_, "DELETE FROM model_chunks");
  auto engine = MakeEngine();
  auto result = engine->Infer(id, {{"x", {1, 2}, {1.0f, 2.0f}}}, "", {});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(result.status().message().find(id), std::string::npos) << result.status();
  EXPECT_NE(result.status().message().find("quarantined"), std::string::npos);
  EXPECT_NE(result.status().message().find("hold 0 bytes, not the 11"), std::string::npos)
      << result.status();
  // The listing and the model's description do not need its bytes.
  EXPECT_TRUE(engine->GetModel(id).ok());
  absl::StatusOr<CacheVerification> report = engine->VerifyCache();
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->problems.size(), 1u);
  EXPECT_EQ(report->problems[0].model_id, id);

  auto readded = engine->RegisterModel("model bytes", "m", {});
  ASSERT_TRUE(readded.ok()) << readded.status();
  EXPECT_TRUE(engine->Infer(id, {{"x", {1, 2}, {1.0f, 2.0f}}}, "", {}).ok());
  report = engine->VerifyCache();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->problems.empty());
}

TEST_F(EngineTest, DamagedCachedPlansAreDroppedAndRecomputed) {
  std::string id;
  {
    auto engine = MakeEngine();
    id = engine->RegisterModel("model", "m", {})->first.id;
    ASSERT_TRUE(engine->GetPlan(id, "heft", {}, false, {}, nullptr).ok());
    engine->Shutdown();
  }
  ASSERT_EQ(counters_->plans.load(), 1);
  const std::vector<std::string> damage = {
      // A device this platform does not have.
      R"(UPDATE plans SET schedule_json = replace(schedule_json, 'cpu.0', 'gpu.9'))",
      // Wrong JSON types.
      R"(UPDATE plans SET schedule_json = '{"subtasks": 5}')",
      // Not JSON at all.
      R"(UPDATE plans SET schedule_json = '{"subtasks": [')",
  };
  int expected_plans = 1;
  for (const std::string& sql : damage) {
    EditDatabase(dir_, sql);
    auto engine = MakeEngine();
    auto plan = engine->GetPlan(id, "heft", {}, false, {}, nullptr);
    ASSERT_TRUE(plan.ok()) << sql << ": " << plan.status();
    EXPECT_FALSE(plan->cached) << sql;
    EXPECT_EQ(counters_->plans.load(), ++expected_plans) << sql;
    // The recomputed plan replaced the damaged row, and inference works on it.
    auto again = engine->GetPlan(id, "heft", {}, false, {}, nullptr);
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->cached);
    EXPECT_EQ(again->ready->output.schedule["subtasks"][0]["device"], "cpu.0");
    EXPECT_TRUE(engine->Infer(id, {{"x", {1, 2}, {1.0f, 2.0f}}}, "heft", {}).ok());
    engine->Shutdown();
  }
}

TEST_F(EngineTest, VerifyCacheFindsDamagedModelsAndPlansWhileServing) {
  auto engine = MakeEngine();
  const std::string good = engine->RegisterModel("good model", "g", {})->first.id;
  const std::string bad = engine->RegisterModel("bad model", "b", {})->first.id;
  ASSERT_TRUE(engine->GetPlan(good, "heft", {}, false, {}, nullptr).ok());
  ASSERT_TRUE(engine->GetPlan(bad, "heft", {}, false, {}, nullptr).ok());
  // Both are loaded and serve from memory.
  ASSERT_TRUE(engine->Infer(bad, {{"x", {1, 2}, {1.0f, 2.0f}}}, "heft", {}).ok());

  absl::StatusOr<CacheVerification> clean = engine->VerifyCache();
  ASSERT_TRUE(clean.ok()) << clean.status();
  EXPECT_EQ(clean->models_checked, 2);
  EXPECT_EQ(clean->plans_checked, 2);
  EXPECT_TRUE(clean->problems.empty());

  // Damaged on disk while the daemon runs: one model's bytes, the other's plan.
  EditDatabase(
      dir_,
      "UPDATE model_chunks SET bytes = CAST('bad modeL' AS BLOB) WHERE model_id = '" + bad + "'");
  EditDatabase(dir_,
               "UPDATE plans SET schedule_json = replace(schedule_json, 'cpu.0', 'gpu.9') "
               "WHERE model_id = '" +
                   good + "'");
  absl::StatusOr<CacheVerification> report = engine->VerifyCache();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->models_checked, 2);
  EXPECT_EQ(report->plans_checked, 1);
  EXPECT_EQ(report->plans_skipped, 1) << "the damaged model's plan is not checked";
  ASSERT_EQ(report->problems.size(), 2u);
  EXPECT_EQ(report->problems[0].model_id, bad);
  EXPECT_EQ(report->problems[0].scheduler_config, "");
  EXPECT_NE(report->problems[0].reason.find("quarantined"), std::string::npos);
  EXPECT_EQ(report->problems[1].model_id, good);
  EXPECT_EQ(report->problems[1].scheduler_config, "heft");
  EXPECT_NE(report->problems[1].reason.find("unknown device"), std::string::npos)
      << report->problems[1].reason;

  // The damaged model is no longer served, even though memory held a good copy; the
  // invalid plan is recomputed on its next use.
  EXPECT_EQ(engine->Infer(bad, {{"x", {1, 2}, {1.0f, 2.0f}}}, "heft", {}).status().code(),
            absl::StatusCode::kDataLoss);
  const int plans_before = counters_->plans.load();
  auto plan = engine->GetPlan(good, "heft", {}, false, {}, nullptr);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->cached);
  EXPECT_EQ(counters_->plans.load(), plans_before + 1);
  engine->Shutdown();
}

// Loaded models (with their compiled plans) are bounded by max_loaded_models, least recently
// used out first, and a removed model's are freed: churn cannot grow the daemon's memory.
TEST_F(EngineTest, LoadedModelsAreBoundedAndRemovedOnesFreed) {
  config_.max_loaded_models = 2;
  auto engine = MakeEngine();
  std::vector<std::string> ids;
  for (const char* bytes : {"model a", "model b", "model c"}) {
    ids.push_back(engine->RegisterModel(bytes, bytes, {})->first.id);
  }
  EXPECT_EQ(counters_->live_handles.load(), 2) << "the first model was unloaded";
  auto infer = [&](const std::string& id) {
    return engine->Infer(id, {{"x", {1, 2}, {1.0f, 2.0f}}}, "heft", {});
  };
  // The queue's worker drops its reference to a model just after Infer returns.
  auto live_handles_settle_at = [&](int most) {
    for (int i = 0; i < 500 && counters_->live_handles.load() > most; ++i) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    return counters_->live_handles.load();
  };
  const int loads = counters_->loads.load();
  ASSERT_TRUE(infer(ids[2]).ok());
  ASSERT_TRUE(infer(ids[1]).ok());
  EXPECT_EQ(counters_->loads.load(), loads) << "both still loaded";
  ASSERT_TRUE(infer(ids[0]).ok()) << "an unloaded model is imported again from the cache";
  EXPECT_EQ(counters_->loads.load(), loads + 1);
  EXPECT_EQ(live_handles_settle_at(2), 2);
  ASSERT_TRUE(infer(ids[1]).ok());
  EXPECT_EQ(counters_->loads.load(), loads + 1) << "ids[1] was used more recently than ids[2]";

  for (int round = 0; round < 20; ++round) {
    const std::string id = engine->RegisterModel("churn", "churn", {})->first.id;
    ASSERT_TRUE(infer(id).ok());
    ASSERT_TRUE(engine->RemoveModel(id).ok());
    EXPECT_LE(live_handles_settle_at(2), 2);
  }
  ASSERT_TRUE(engine->RemoveModel(ids[0]).ok());
  ASSERT_TRUE(engine->RemoveModel(ids[1]).ok());
  EXPECT_EQ(live_handles_settle_at(0), 0) << "removed models are freed";
  engine->Shutdown();
}

// Sixteen 4 MiB models in turn under max_loaded_bytes = 16 MiB: at most four stay loaded,
// the least recently used going first; each still serves when asked again.
TEST_F(EngineTest, LoadedModelsAreBoundedByBytes) {
  config_.max_loaded_bytes = int64_t{16} << 20;
  config_.max_model_bytes = 100000;
  auto engine = MakeEngine();
  RegisterOptions options;
  options.input_shapes = {{"x", {1, 1 << 20}}};
  std::vector<std::string> ids;
  const std::vector<float> x(1 << 20, 1.0f);
  for (int i = 0; i < 16; ++i) {
    ids.push_back(engine->RegisterModel("model " + std::to_string(i), "", options)->first.id);
    ASSERT_TRUE(engine->Infer(ids.back(), {{"x", {1, 1 << 20}, x}}, "heft", {}).ok());
    EXPECT_LE(engine->LoadedBytes(), int64_t{16} << 20) << i;
  }
  EXPECT_EQ(engine->LoadedBytes(), int64_t{16} << 20);
  const int loads = counters_->loads.load();
  ASSERT_TRUE(engine->Infer(ids[15], {{"x", {1, 1 << 20}, x}}, "heft", {}).ok());
  EXPECT_EQ(counters_->loads.load(), loads) << "the most recent is still loaded";
  ASSERT_TRUE(engine->Infer(ids[0], {{"x", {1, 1 << 20}, x}}, "heft", {}).ok());
  EXPECT_EQ(counters_->loads.load(), loads + 1) << "the first was unloaded, and loads again";
  EXPECT_LE(engine->LoadedBytes(), int64_t{16} << 20);
  engine->Shutdown();
}

TEST_F(EngineTest, NonFiniteInputsAreRefusedUnlessAllowed) {
  auto engine = MakeEngine();
  std::string id = engine->RegisterModel("model", "m", {})->first.id;
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    auto result = engine->Infer(id, {{"x", {1, 2}, {1.0f, bad}}}, "", {});
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(result.status().message().find("'x'"), std::string::npos) << result.status();
    EXPECT_NE(result.status().message().find("flat index 1"), std::string::npos) << result.status();
  }
  engine->Shutdown();
  engine.reset();
  config_.allow_non_finite_inputs = true;
  engine = MakeEngine();
  auto result =
      engine->Infer(id, {{"x", {1, 2}, {1.0f, std::numeric_limits<float>::infinity()}}}, "", {});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->outputs[0].data[1], std::numeric_limits<float>::infinity());
}

TEST_F(EngineTest, ReAddingWithSyntheticWeightsIsNotSilentlyIgnored) {
  auto engine = MakeEngine();
  std::string id = engine->RegisterModel("noweights model", "m", {})->first.id;
  auto again = engine->RegisterModel("noweights model", "m", {.synthesize_weights = true});
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("remove it first"), std::string::npos);
  // Re-adding as registered is still fine.
  EXPECT_TRUE(engine->RegisterModel("noweights model", "m", {}).ok());
}

TEST_F(EngineTest, BoundInputShapesMakeAModelOfTheirOwn) {
  std::string plain, bound;
  {
    auto engine = MakeEngine();
    plain = engine->RegisterModel("model bytes", "m", {})->first.id;
    auto registered = engine->RegisterModel("model bytes", "m", {.input_shapes = {{"x", {1, 4}}}});
    ASSERT_TRUE(registered.ok()) << registered.status();
    EXPECT_FALSE(registered->second);
    bound = registered->first.id;
    EXPECT_NE(bound, plain);
    EXPECT_EQ(registered->first.inputs[0].dims, (std::vector<int64_t>{1, 4}));
    EXPECT_EQ(registered->first.input_shapes, (model::InputShapes{{"x", {1, 4}}}));
    auto again = engine->RegisterModel("model bytes", "m", {.input_shapes = {{"x", {1, 4}}}});
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->second);
    EXPECT_EQ(again->first.id, bound);

    ASSERT_TRUE(engine->GetPlan(plain, "heft", {}, false, {}, nullptr).ok());
    auto bound_plan = engine->GetPlan(bound, "heft", {}, false, {}, nullptr);
    ASSERT_TRUE(bound_plan.ok());
    EXPECT_FALSE(bound_plan->cached);  // not the plain model's plan
    EXPECT_EQ(bound_plan->model_id, bound);
    EXPECT_EQ(engine->ListCachedPlans(plain)->size(), 1u);
    EXPECT_EQ(engine->ListCachedPlans(bound)->size(), 1u);
  }
  // A restart imports the stored bytes with the stored shapes.
  auto engine = MakeEngine();
  auto result = engine->Infer(bound, {{"x", {1, 4}, {1, 2, 3, 4}}}, "heft", {});
  ASSERT_TRUE(result.ok()) << result.status();
  auto described = engine->GetModel(bound);
  ASSERT_TRUE(described.ok());
  EXPECT_EQ(described->input_shapes, (model::InputShapes{{"x", {1, 4}}}));
  EXPECT_TRUE(engine->GetModel(plain)->input_shapes.empty());
  ASSERT_TRUE(engine->VerifyCache().ok());
  EXPECT_TRUE(engine->VerifyCache()->problems.empty());
}

TEST_F(EngineTest, ExternalDataIsRefusedUnlessGraphOnlyOrSynthesized) {
  auto engine = MakeEngine();
  auto refused = engine->RegisterModel("external model", "e", {});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("external file"), std::string::npos);
  EXPECT_EQ(engine->ListModels()->size(), 0u);

  auto graph_only = engine->RegisterModel("external model", "e", {.graph_only = true});
  ASSERT_TRUE(graph_only.ok()) << graph_only.status();
  EXPECT_FALSE(graph_only->first.has_weights);
  auto synthesized = engine->RegisterModel("external model 2", "e", {.synthesize_weights = true});
  ASSERT_TRUE(synthesized.ok()) << synthesized.status();
  EXPECT_TRUE(synthesized->first.has_weights);
  // Stored graph-only bytes import again after a restart.
  const std::string id = graph_only->first.id;
  engine.reset();
  engine = MakeEngine();
  EXPECT_TRUE(engine->GetPlan(id, "heft", {}, false, {}, nullptr).ok());
}

}  // namespace
}  // namespace psched::daemon
