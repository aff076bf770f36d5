// psched::client::Client: a typed C++ client for pschedd's psched.v1 API over its unix
// socket. Each method is one RPC with the client's per-call timeout; errors come back as
// absl::Status with the daemon's code and message, and a daemon that does not answer gives
// UNAVAILABLE "no pschedd answers on <socket> ...".
//
// Depends only on the generated protos and gRPC. Thread-safety: a Client may be shared by
// threads (gRPC channels and stubs are thread-safe).
#pragma once

#include <grpcpp/channel.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "psched/v1/admin.grpc.pb.h"
#include "psched/v1/inference.grpc.pb.h"
#include "psched/v1/model.grpc.pb.h"
#include "psched/v1/plan.grpc.pb.h"

namespace psched::client {

struct ClientOptions {
  // Unix socket of the daemon.
  std::string socket = "/run/pschedd/pschedd.sock";
  // Deadline of every call; planning a large model with a search method may need more.
  absl::Duration timeout = absl::Seconds(60);
  // How long an Infer or GetPlan call's thread polls for each answer before it sleeps: an
  // answer that comes within it costs no thread wake-up (20-50 us where idle cores halt, as in a
  // VM; docs/runtime-performance.md). Only while the client's last such call took at most
  // twice this: one kept waiting longer (queued behind others) sleeps at once. Zero: always.
  absl::Duration spin = absl::Microseconds(250);
  // Upload chunk size for RegisterModel.
  int64_t chunk_bytes = int64_t{1} << 20;
};

class Client {
 public:
  explicit Client(ClientOptions options);

  absl::StatusOr<v1::StatusResponse> Status();
  absl::StatusOr<v1::DevicesResponse> Devices();
  absl::StatusOr<v1::CacheStatsResponse> CacheStats();
  absl::StatusOr<v1::ListCachedPlansResponse> ListCachedPlans(const std::string& model_id = "");
  absl::StatusOr<v1::PurgeCacheResponse> PurgeCache(bool include_models);
  // Hashes every stored model and validates the cached plans (admin role).
  absl::StatusOr<v1::VerifyCacheResponse> VerifyCache();
  // Calls `progress` for every progress message while the devices are timed. The call's
  // deadline is the client timeout plus the budget of three devices.
  absl::StatusOr<v1::CalibrationResult> Calibrate(
      double budget_s,
      const std::function<void(const v1::CalibrationProgress&)>& progress = nullptr);

  // Streams `onnx` in chunks after `header` (its total_bytes is set here).
  absl::StatusOr<v1::RegisterModelResponse> RegisterModel(const std::string& onnx,
                                                          v1::ModelHeader header);
  absl::StatusOr<v1::RegisterModelResponse> RegisterModel(const std::string& onnx,
                                                          const std::string& name,
                                                          bool synthesize_weights);
  absl::StatusOr<v1::ListModelsResponse> ListModels();
  absl::StatusOr<v1::Model> GetModel(const std::string& id);
  absl::StatusOr<v1::RemoveModelResponse> RemoveModel(const std::string& id);

  // Calls `progress` for every progress message while the plan computes.
  absl::StatusOr<v1::Plan> GetPlan(
      const std::string& model_id, const std::string& scheduler,
      const std::map<std::string, std::string>& options = {}, bool refresh = false,
      const std::function<void(const v1::PlanProgress&)>& progress = nullptr);

  absl::StatusOr<v1::InferResponse> Infer(const v1::InferRequest& request);

  // A plan bundle of the model's cached plans for the daemon's platform (empty scheduler:
  // every scheduler's).
  absl::StatusOr<v1::ExportPlansResponse> ExportPlans(const std::string& model_id,
                                                      const std::string& scheduler = "");
  // Stores a bundle's plans in the daemon's cache (admin role).
  absl::StatusOr<v1::ImportPlansResponse> ImportPlans(const std::string& bundle);

  const ClientOptions& options() const { return options_; }

 private:
  void Prepare(grpc::ClientContext& context) const;
  absl::Status Convert(const grpc::Status& status) const;

  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ModelService::Stub> models_;
  std::unique_ptr<v1::PlanService::Stub> plans_;
  std::unique_ptr<v1::InferenceService::Stub> inference_;
  std::unique_ptr<v1::AdminService::Stub> admin_;
  // How long the last Infer or GetPlan took, ns (0: none yet); whether the next one polls
  // for its answer depends on it (client.cc, SpinningQueue).
  std::unique_ptr<std::atomic<int64_t>> last_call_ns_ = std::make_unique<std::atomic<int64_t>>(0);
};

}  // namespace psched::client
