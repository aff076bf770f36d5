// The psched.v1 gRPC services. Each is thin: it converts protobuf messages to the engine's
// types, forwards to daemon::Engine and converts back; absl status codes map one to one onto
// gRPC codes, with the engine's message. Every handler first finds its caller (Callers) and
// asks the access policy whether the caller's role permits the RPC; state-changing calls and
// refusals are logged with the caller. The Engine and Callers must outlive the services.
//
// Thread-safety: gRPC calls these concurrently; all state lives in the (thread-safe) Engine
// and Callers.
#pragma once

#include <cstdint>
#include <functional>

#include "daemon/access/callers.h"
#include "daemon/engine/engine.h"
#include "psched/v1/admin.grpc.pb.h"
#include "psched/v1/inference.grpc.pb.h"
#include "psched/v1/model.grpc.pb.h"
#include "psched/v1/plan.grpc.pb.h"

namespace psched::daemon {

class ModelServiceImpl final : public psched::v1::ModelService::Service {
 public:
  ModelServiceImpl(Engine* engine, const Callers* callers, int64_t max_model_bytes)
      : engine_(engine), callers_(callers), max_model_bytes_(max_model_bytes) {}

  grpc::Status RegisterModel(grpc::ServerContext* context,
                             grpc::ServerReader<psched::v1::RegisterModelRequest>* reader,
                             psched::v1::RegisterModelResponse* response) override;
  grpc::Status ListModels(grpc::ServerContext* context,
                          const psched::v1::ListModelsRequest* request,
                          psched::v1::ListModelsResponse* response) override;
  grpc::Status GetModel(grpc::ServerContext* context, const psched::v1::GetModelRequest* request,
                        psched::v1::GetModelResponse* response) override;
  grpc::Status RemoveModel(grpc::ServerContext* context,
                           const psched::v1::RemoveModelRequest* request,
                           psched::v1::RemoveModelResponse* response) override;

 private:
  Engine* engine_;
  const Callers* callers_;
  const int64_t max_model_bytes_;
};

// GetPlan and Infer are served from completion queues (CallPollers, daemon/rpc/call_pollers.h),
// not by gRPC's sync threads; Answer is each one's handler and AnswersAtOnce says whether a
// call will be answered without waiting and soon (no planning, no queue, a brief inference),
// so a poller may take it.
class PlanServiceImpl final
    : public psched::v1::PlanService::WithAsyncMethod_GetPlan<psched::v1::PlanService::Service> {
 public:
  PlanServiceImpl(Engine* engine, const Callers* callers) : engine_(engine), callers_(callers) {}
  bool AnswersAtOnce(const psched::v1::GetPlanRequest& request) const;
  // `progress` gets the planner's progress messages; on OK, `last` is the stream's last
  // message (the plan). `cancelled` says whether the caller has gone away (an async call's
  // context may not be asked before the call is done).
  grpc::Status Answer(grpc::ServerContext* context, const CancelledFn& cancelled,
                      const psched::v1::GetPlanRequest& request,
                      const std::function<void(const psched::v1::GetPlanResponse&)>& progress,
                      psched::v1::GetPlanResponse* last);
  grpc::Status ExportPlans(grpc::ServerContext* context,
                           const psched::v1::ExportPlansRequest* request,
                           psched::v1::ExportPlansResponse* response) override;
  grpc::Status ImportPlans(grpc::ServerContext* context,
                           const psched::v1::ImportPlansRequest* request,
                           psched::v1::ImportPlansResponse* response) override;

 private:
  Engine* engine_;
  const Callers* callers_;
};

class InferenceServiceImpl final : public psched::v1::InferenceService::WithAsyncMethod_Infer<
                                       psched::v1::InferenceService::Service> {
 public:
  InferenceServiceImpl(Engine* engine, const Callers* callers)
      : engine_(engine), callers_(callers) {}
  bool AnswersAtOnce(const psched::v1::InferRequest& request) const;
  grpc::Status Answer(grpc::ServerContext* context, const CancelledFn& cancelled,
                      const psched::v1::InferRequest& request, psched::v1::InferResponse* response);

 private:
  Engine* engine_;
  const Callers* callers_;
};

class AdminServiceImpl final : public psched::v1::AdminService::Service {
 public:
  AdminServiceImpl(Engine* engine, const Callers* callers) : engine_(engine), callers_(callers) {}
  grpc::Status Status(grpc::ServerContext* context, const psched::v1::StatusRequest* request,
                      psched::v1::StatusResponse* response) override;
  grpc::Status Devices(grpc::ServerContext* context, const psched::v1::DevicesRequest* request,
                       psched::v1::DevicesResponse* response) override;
  grpc::Status CacheStats(grpc::ServerContext* context,
                          const psched::v1::CacheStatsRequest* request,
                          psched::v1::CacheStatsResponse* response) override;
  grpc::Status ListCachedPlans(grpc::ServerContext* context,
                               const psched::v1::ListCachedPlansRequest* request,
                               psched::v1::ListCachedPlansResponse* response) override;
  grpc::Status PurgeCache(grpc::ServerContext* context,
                          const psched::v1::PurgeCacheRequest* request,
                          psched::v1::PurgeCacheResponse* response) override;
  grpc::Status Calibrate(grpc::ServerContext* context, const psched::v1::CalibrateRequest* request,
                         grpc::ServerWriter<psched::v1::CalibrateResponse>* writer) override;
  grpc::Status VerifyCache(grpc::ServerContext* context,
                           const psched::v1::VerifyCacheRequest* request,
                           psched::v1::VerifyCacheResponse* response) override;

 private:
  Engine* engine_;
  const Callers* callers_;
};

}  // namespace psched::daemon
