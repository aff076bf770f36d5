#include "daemon/rpc/services.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "model/input_shapes.h"
#include "platform/cpu_topology.h"
#include "spdlog/spdlog.h"

namespace psched::daemon {
namespace {

namespace pb = psched::v1;

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl::StatusCode and grpc::StatusCode share their numbering.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpc(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// Runs the handler of `rpc` (given the caller when it takes one) for the caller of the
// connection the call came on. A caller whose
// role does not permit the RPC is refused (PERMISSION_DENIED naming the role it lacks).
// Nothing the handler throws reaches gRPC (which would answer UNKNOWN "Unexpected error in
// RPC handling" and log nothing): an exception becomes INTERNAL naming the RPC and is logged.
// State-changing calls and refusals are logged with the caller and `detail` (read after the
// handler ran, so it may fill it in).
template <typename Handler>
grpc::Status Guarded(const Callers& callers, grpc::ServerContext* context, Rpc rpc,
                     const std::string& detail, Handler&& handler) {
  const Caller caller = callers.Lookup(context->peer());
  const absl::Status permitted = callers.policy().Permit(caller, rpc);
  grpc::Status status = ToGrpc(permitted);
  if (permitted.ok()) {
    try {
      if constexpr (std::is_invocable_v<Handler, const Caller&>) {
        status = handler(caller);
      } else {
        status = handler();
      }
    } catch (const std::exception& e) {
      spdlog::error("{}: unexpected exception: {}", RpcName(rpc), e.what());
      status = grpc::Status(grpc::StatusCode::INTERNAL,
                            absl::StrCat(RpcName(rpc), ": internal error: ", e.what()));
    }
  }
  if (!permitted.ok() || ChangesState(rpc)) LogCall(caller, rpc, detail, FromGrpc(status));
  return status;
}

CallContext ContextOf(grpc::ServerContext* context, CancelledFn cancelled) {
  CallContext call;
  auto deadline = context->deadline();
  // gRPC reports "no deadline" as a far-future time point.
  if (deadline < std::chrono::system_clock::now() + std::chrono::hours(24 * 365)) {
    call.deadline = absl::FromChrono(deadline);
  }
  call.cancelled = std::move(cancelled);
  return call;
}

// A sync call's context can say at any time whether its caller went away.
CallContext ContextOf(grpc::ServerContext* context) {
  return ContextOf(context, [context] { return context->IsCancelled(); });
}

void FillTensorInfo(const TensorSpec& spec, pb::TensorInfo* info) {
  info->set_name(spec.name);
  for (int64_t d : spec.dims) info->add_dims(d);
}

void FillModel(const ModelInfo& model, bool with_inspect, pb::Model* out) {
  out->set_id(model.id);
  out->set_name(model.name);
  out->set_size_bytes(model.size_bytes);
  out->set_ops(model.summary.value("ops", int64_t{0}));
  out->set_flops(model.summary.value("flops", int64_t{0}));
  out->set_params(model.summary.value("params", int64_t{0}));
  out->set_has_weights(model.has_weights);
  out->set_registered_unix_s(model.registered_unix_s);
  for (const TensorSpec& spec : model.inputs) FillTensorInfo(spec, out->add_inputs());
  for (const TensorSpec& spec : model.outputs) FillTensorInfo(spec, out->add_outputs());
  for (const auto& [name, dims] : model.input_shapes) {
    pb::InputShape* shape = out->add_input_shapes();
    shape->set_name(name);
    for (int64_t d : dims) shape->add_dims(d);
  }
  if (with_inspect) {
    nlohmann::json inspect = model.summary;
    inspect.erase("inputs");
    inspect.erase("outputs");
    out->set_inspect_json(inspect.dump());
  }
}

void FillDevice(const PlatformDeviceInfo& device, pb::Device* out) {
  out->set_name(device.name);
  out->set_kind(device.kind);
  for (int core : device.cores) out->add_cores(core);
  out->set_opencl_device(device.opencl_device);
}

void FillDiscovery(const DiscoveryInfo& discovery, pb::PlatformDiscovery* out) {
  out->set_cpu_devices_from(discovery.cpu_devices_from);
  out->set_error(discovery.error);
  if (!discovery.topology.has_value()) return;
  const platform::CpuTopology& topology = *discovery.topology;
  out->set_sysfs_root(topology.sysfs_root);
  out->set_chip(topology.chip);
  out->set_grouping(topology.grouping);
  for (const platform::CpuCore& core : topology.cores) {
    pb::CpuCore* c = out->add_cores();
    c->set_cpu(core.cpu);
    c->set_capacity(core.capacity.value_or(0));
    c->set_max_freq_khz(core.max_freq_khz.value_or(0));
    c->set_uarch(core.uarch);
    c->set_midr(core.midr.value_or(0));
    c->set_cluster_id(core.cluster_id.value_or(-1));
    c->set_package_id(core.package_id.value_or(-1));
  }
  for (const platform::CpuCluster& cluster : topology.clusters) {
    pb::CpuCluster* c = out->add_clusters();
    c->set_name(cluster.name);
    for (int core : cluster.cores) c->add_cores(core);
    c->set_capacity(cluster.capacity.value_or(0));
    c->set_max_freq_khz(cluster.max_freq_khz.value_or(0));
    c->set_uarch(cluster.uarch);
  }
  for (const std::string& note : topology.notes) out->add_notes(note);
}

void FillCacheStats(const cache::CacheStats& stats, pb::CacheStatsResponse* out) {
  out->set_models(stats.models);
  out->set_plans(stats.plans);
  out->set_db_bytes(stats.db_bytes);
  out->set_hits(stats.hits);
  out->set_misses(stats.misses);
  out->set_path(stats.path);
}

void FillPlan(const PlanResult& plan, pb::Plan* out) {
  out->set_model_id(plan.model_id);
  out->set_scheduler(plan.scheduler);
  out->set_makespan_us(plan.makespan_us);
  out->set_cached(plan.cached);
  out->set_imported(plan.imported);
  out->set_planning_ms(plan.planning_ms);
  out->set_platform_fingerprint(plan.platform_fingerprint);
  out->set_predictor_version(plan.predictor_version);
  const PlanMemory& memory = plan.ready->output.memory;
  pb::PlanMemory* memory_out = out->mutable_memory();
  memory_out->set_peak_bytes(memory.peak_bytes());
  memory_out->set_activation_bytes(memory.activation_bytes);
  memory_out->set_weight_bytes(memory.weight_bytes);
  memory_out->set_io_bytes(memory.io_bytes);
  for (const TensorBytes& tensor : memory.largest_tensors) {
    pb::TensorBytes* t = memory_out->add_largest_tensors();
    t->set_name(tensor.name);
    t->set_bytes(tensor.bytes);
  }
  std::map<std::tuple<std::string, std::string, int64_t>, double> measured;
  if (plan.measured.has_value()) {
    out->set_measured_runs(plan.measured->runs);
    out->set_measured_makespan_us(plan.measured->median_makespan_us);
    for (const MeasuredSubtask& m : plan.measured->subtasks) {
      measured[{m.op, m.device, m.work_begin}] = m.measured_us;
    }
  }
  const PlanAnswer& answer = *plan.ready->answer;
  out->mutable_subtasks()->Reserve(static_cast<int>(answer.subtasks.size()));
  for (const PlanSubtaskInfo& s : answer.subtasks) {
    pb::Subtask* subtask = out->add_subtasks();
    subtask->set_op(s.op);
    subtask->set_op_id(s.op_id);
    subtask->set_device(s.device);
    subtask->set_strategy(s.strategy);
    subtask->set_work_begin(s.work_begin);
    subtask->set_work_end(s.work_end);
    subtask->set_start_us(s.start_us);
    subtask->set_end_us(s.end_us);
    subtask->set_fallback(s.fallback);
    auto it = measured.find({s.op, s.device, s.work_begin});
    if (it != measured.end()) subtask->set_measured_us(it->second);
  }
  // A cached answer (the hot path) was formatted when the plan became ready.
  out->set_schedule_json(plan.cached ? answer.cached_schedule_json
                                     : PlanAnswerJson(*plan.ready, /*cached=*/false));
}

// The header's input shapes by name; the importer checks them against the model.
absl::StatusOr<RegisterOptions> RegisterOptionsOf(const pb::ModelHeader& header) {
  RegisterOptions options;
  options.synthesize_weights = header.synthesize_weights();
  options.graph_only = header.graph_only();
  for (const pb::InputShape& shape : header.input_shapes()) {
    if (shape.name().empty()) {
      return absl::InvalidArgumentError("an input shape has an empty input name");
    }
    if (shape.dims().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input shape for '", shape.name(), "' has no dims"));
    }
    for (int64_t d : shape.dims()) {
      if (d < 1 || d > model::kMaxGivenDim) {
        return absl::InvalidArgumentError(
            absl::StrCat("input shape for '", shape.name(), "' has dim ", d,
                         "; dims are sizes from 1 to ", model::kMaxGivenDim));
      }
    }
    if (!options.input_shapes
             .emplace(shape.name(), std::vector<int64_t>(shape.dims().begin(), shape.dims().end()))
             .second) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", shape.name(), "' is given two shapes"));
    }
  }
  return options;
}

absl::StatusOr<HostTensor> FromProto(const pb::Tensor& tensor) {
  if (tensor.data().size() % sizeof(float) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", tensor.name(), "' has ",
                                                   tensor.data().size(),
                                                   " data bytes, not a multiple of 4 (float32)"));
  }
  HostTensor host;
  host.name = tensor.name();
  host.dims.assign(tensor.dims().begin(), tensor.dims().end());
  host.data.resize(tensor.data().size() / sizeof(float));
  std::memcpy(host.data.data(), tensor.data().data(), tensor.data().size());
  return host;
}

void ToProto(const HostTensor& host, pb::Tensor* out) {
  out->set_name(host.name);
  for (int64_t d : host.dims) out->add_dims(d);
  out->set_data(std::string(reinterpret_cast<const char*>(host.data.data()),
                            host.data.size() * sizeof(float)));
}

}  // namespace

grpc::Status ModelServiceImpl::RegisterModel(grpc::ServerContext* context,
                                             grpc::ServerReader<pb::RegisterModelRequest>* reader,
                                             pb::RegisterModelResponse* response) {
  std::string registered;
  return Guarded(*callers_, context, Rpc::kRegisterModel, registered,
                 [&](const Caller& caller) -> grpc::Status {
    pb::RegisterModelRequest request;
    if (!reader->Read(&request) || !request.has_header()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "RegisterModel: the first message must carry the header");
    }
    const pb::ModelHeader header = request.header();
    auto too_large = [this](int64_t bytes) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat("model is ", bytes, " bytes; this daemon accepts at most ",
                                       max_model_bytes_, " (max_model_bytes)"));
    };
    if (header.total_bytes() > max_model_bytes_) return too_large(header.total_bytes());
    absl::StatusOr<RegisterOptions> options = RegisterOptionsOf(header);
    if (!options.ok()) return ToGrpc(options.status());
    options->owner = std::to_string(caller.credentials.uid);
    options->owner_description = caller.user;
    options->quota_exempt = caller.role == Role::kAdmin;
    std::string onnx;
    // Growing by appends would copy a large model several times over and hold up to twice
    // its size; the announced size (bounded above) is allocated once.
    if (header.total_bytes() > 0) onnx.reserve(static_cast<size_t>(header.total_bytes()));
    while (reader->Read(&request)) {
      if (request.has_header()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "RegisterModel: header sent twice");
      }
      if (static_cast<int64_t>(onnx.size() + request.chunk().size()) > max_model_bytes_) {
        return too_large(static_cast<int64_t>(onnx.size() + request.chunk().size()));
      }
      onnx += request.chunk();
    }
    if (context->IsCancelled())
      return grpc::Status(grpc::StatusCode::CANCELLED, "upload cancelled");
    absl::StatusOr<std::pair<ModelInfo, bool>> result =
        engine_->RegisterModel(std::move(onnx), header.name(), *options);
    if (!result.ok()) return ToGrpc(result.status());
    FillModel(result->first, /*with_inspect=*/true, response->mutable_model());
    response->set_already_registered(result->second);
    registered = absl::StrCat(result->first.id, result->second ? " (already registered)" : "");
    return grpc::Status::OK;
  });
}

grpc::Status ModelServiceImpl::ListModels(grpc::ServerContext* context,
                                          const pb::ListModelsRequest*,
                                          pb::ListModelsResponse* response) {
  return Guarded(*callers_, context, Rpc::kListModels, "", [&]() -> grpc::Status {
    absl::StatusOr<std::vector<ModelInfo>> models = engine_->ListModels();
    if (!models.ok()) return ToGrpc(models.status());
    for (const ModelInfo& model : *models) {
      FillModel(model, /*with_inspect=*/false, response->add_models());
    }
    return grpc::Status::OK;
  });
}

grpc::Status ModelServiceImpl::GetModel(grpc::ServerContext* context,
                                        const pb::GetModelRequest* request,
                                        pb::GetModelResponse* response) {
  return Guarded(*callers_, context, Rpc::kGetModel, "", [&]() -> grpc::Status {
    absl::StatusOr<ModelInfo> model = engine_->GetModel(request->id());
    if (!model.ok()) return ToGrpc(model.status());
    FillModel(*model, /*with_inspect=*/true, response->mutable_model());
    return grpc::Status::OK;
  });
}

grpc::Status ModelServiceImpl::RemoveModel(grpc::ServerContext* context,
                                           const pb::RemoveModelRequest* request,
                                           pb::RemoveModelResponse* response) {
  return Guarded(*callers_, context, Rpc::kRemoveModel, request->id(), [&]() -> grpc::Status {
    absl::StatusOr<std::pair<std::string, int64_t>> removed = engine_->RemoveModel(request->id());
    if (!removed.ok()) return ToGrpc(removed.status());
    response->set_id(removed->first);
    response->set_plans_removed(removed->second);
    return grpc::Status::OK;
  });
}

namespace {
std::map<std::string, std::string> OptionsOf(const pb::GetPlanRequest& request) {
  return {request.options().begin(), request.options().end()};
}
}  // namespace

bool PlanServiceImpl::AnswersAtOnce(const pb::GetPlanRequest& request) const {
  return !request.refresh() &&
         engine_->PlanReady(request.model_id(), request.scheduler(), OptionsOf(request));
}

grpc::Status PlanServiceImpl::Answer(
    grpc::ServerContext* context, const CancelledFn& cancelled, const pb::GetPlanRequest& request,
    const std::function<void(const pb::GetPlanResponse&)>& progress, pb::GetPlanResponse* last) {
  return Guarded(*callers_, context, Rpc::kGetPlan, "", [&](const Caller& caller) -> grpc::Status {
    const absl::Time start = absl::Now();
    auto on_progress = [&progress, start](const PlanProgressEvent& event) {
      pb::GetPlanResponse message;
      pb::PlanProgress* p = message.mutable_progress();
      p->set_stage(event.stage);
      p->set_elapsed_ms(absl::ToDoubleMilliseconds(absl::Now() - start));
      p->set_best_makespan_us(event.best_makespan_us);
      progress(message);
    };
    CallContext call = ContextOf(context, cancelled);
    call.uncapped_planning = caller.role == Role::kAdmin;
    absl::StatusOr<PlanResult> plan =
        engine_->GetPlan(request.model_id(), request.scheduler(), OptionsOf(request),
                         request.refresh(), call, on_progress);
    if (!plan.ok()) return ToGrpc(plan.status());
    FillPlan(*plan, last->mutable_plan());
    return grpc::Status::OK;
  });
}

grpc::Status PlanServiceImpl::ExportPlans(grpc::ServerContext* context,
                                          const pb::ExportPlansRequest* request,
                                          pb::ExportPlansResponse* response) {
  return Guarded(*callers_, context, Rpc::kExportPlans, "", [&]() -> grpc::Status {
    absl::StatusOr<std::pair<std::string, int>> bundle =
        engine_->ExportPlans(request->model_id(), request->scheduler());
    if (!bundle.ok()) return ToGrpc(bundle.status());
    response->set_plans(bundle->second);
    response->set_bundle(std::move(bundle->first));
    return grpc::Status::OK;
  });
}

grpc::Status PlanServiceImpl::ImportPlans(grpc::ServerContext* context,
                                          const pb::ImportPlansRequest* request,
                                          pb::ImportPlansResponse* response) {
  std::string detail = absl::StrCat(request->bundle().size(), " bytes");
  return Guarded(*callers_, context, Rpc::kImportPlans, detail, [&]() -> grpc::Status {
    absl::StatusOr<ImportResult> result = engine_->ImportPlans(request->bundle());
    if (!result.ok()) return ToGrpc(result.status());
    response->set_model_id(result->model_id);
    response->set_calibration(result->calibration);
    for (const ImportedPlanInfo& info : result->plans) {
      pb::ImportedPlan* plan = response->add_plans();
      plan->set_scheduler_config(info.scheduler_config);
      plan->set_predictor_version(info.predictor_version);
      plan->set_served(info.served);
    }
    detail =
        absl::StrCat(detail, ", model ", result->model_id, ", ", result->plans.size(), " plan(s)");
    return grpc::Status::OK;
  });
}

bool InferenceServiceImpl::AnswersAtOnce(const pb::InferRequest& request) const {
  return engine_->InferAnswersAtOnce(request.model_id(), request.scheduler());
}

grpc::Status InferenceServiceImpl::Answer(grpc::ServerContext* context,
                                          const CancelledFn& cancelled,
                                          const pb::InferRequest& request,
                                          pb::InferResponse* response) {
  return Guarded(*callers_, context, Rpc::kInfer, "", [&](const Caller& caller) -> grpc::Status {
    std::vector<HostTensor> inputs;
    for (const pb::Tensor& tensor : request.inputs()) {
      absl::StatusOr<HostTensor> host = FromProto(tensor);
      if (!host.ok()) return ToGrpc(host.status());
      inputs.push_back(std::move(*host));
    }
    CallContext call = ContextOf(context, cancelled);
    call.uncapped_planning = caller.role == Role::kAdmin;
    absl::StatusOr<InferResult> result =
        engine_->Infer(request.model_id(), std::move(inputs), request.scheduler(), call);
    if (!result.ok()) return ToGrpc(result.status());
    for (const HostTensor& output : result->outputs) ToProto(output, response->add_outputs());
    response->set_queue_us(result->queue_us);
    response->set_execute_us(result->execute_us);
    response->set_latency_us(result->latency_us);
    response->set_executor(result->executor);
    response->set_predicted_makespan_us(result->predicted_makespan_us);
    response->set_scheduler(result->scheduler);
    if (request.want_trace()) {
      for (const SubtaskTimingInfo& timing : result->trace) {
        pb::SubtaskTiming* t = response->add_trace();
        t->set_op(timing.op);
        t->set_device(timing.device);
        t->set_start_us(timing.start_us);
        t->set_end_us(timing.end_us);
        t->set_strategy(timing.strategy);
        t->set_work_begin(timing.work_begin);
        t->set_work_end(timing.work_end);
        t->set_predicted_start_us(timing.predicted_start_us);
        t->set_predicted_end_us(timing.predicted_end_us);
        t->set_device_us(timing.device_us);
      }
    }
    return grpc::Status::OK;
  });
}

grpc::Status AdminServiceImpl::Status(grpc::ServerContext* context, const pb::StatusRequest*,
                                      pb::StatusResponse* response) {
  return Guarded(*callers_, context, Rpc::kStatus, "", [&](const Caller& caller) -> grpc::Status {
    EngineStatus status =
        engine_->Status(std::to_string(caller.credentials.uid), caller.role == Role::kAdmin);
    response->set_version(status.version);
    response->set_uptime_s(status.uptime_s);
    for (const PlatformDeviceInfo& device : status.platform.devices) {
      FillDevice(device, response->add_devices());
    }
    response->set_models(status.models);
    response->set_queue_depth(status.queue_depth);
    response->set_queue_capacity(status.queue_capacity);
    response->set_inferences(status.inferences);
    FillCacheStats(status.cache, response->mutable_cache());
    response->set_platform(status.platform.name);
    response->set_executor(status.executor);
    response->set_default_scheduler(status.default_scheduler);
    response->set_calibration(status.calibration);
    const ResourceUsage& used = status.resources;
    pb::ResourceUsage* resources = response->mutable_resources();
    resources->set_cache_bytes(used.cache_bytes);
    resources->set_cache_max_bytes(used.cache_max_bytes);
    resources->set_caller_models(used.caller.models);
    resources->set_caller_model_bytes(used.caller.bytes);
    resources->set_max_models_per_user(used.max_models_per_user);
    resources->set_max_model_bytes_per_user(used.max_model_bytes_per_user);
    resources->set_quota_exempt(used.quota_exempt);
    resources->set_loaded_models(used.loaded_models);
    resources->set_max_loaded_models(used.max_loaded_models);
    resources->set_loaded_bytes(used.loaded_bytes);
    resources->set_max_loaded_bytes(used.max_loaded_bytes);
    resources->set_max_plan_memory_bytes(used.max_plan_memory_bytes);
    resources->set_planning(used.planning);
    resources->set_planning_queued(used.planning_queued);
    resources->set_max_concurrent_plans(used.max_concurrent_plans);
    resources->set_max_planning_s(used.max_planning_s);
    return grpc::Status::OK;
  });
}

grpc::Status AdminServiceImpl::Devices(grpc::ServerContext* context, const pb::DevicesRequest*,
                                       pb::DevicesResponse* response) {
  return Guarded(*callers_, context, Rpc::kDevices, "", [&]() -> grpc::Status {
    const PlatformInfo platform = engine_->platform();
    response->set_platform(platform.name);
    response->set_fingerprint(platform.fingerprint);
    response->set_predictor_version(platform.predictor_version);
    for (const PlatformDeviceInfo& device : platform.devices) FillDevice(device, response->add_devices());
    FillDiscovery(platform.discovery, response->mutable_discovery());
    return grpc::Status::OK;
  });
}

grpc::Status AdminServiceImpl::CacheStats(grpc::ServerContext* context,
                                          const pb::CacheStatsRequest*,
                                          pb::CacheStatsResponse* response) {
  return Guarded(*callers_, context, Rpc::kCacheStats, "", [&]() -> grpc::Status {
    absl::StatusOr<cache::CacheStats> stats = engine_->CacheStats();
    if (!stats.ok()) return ToGrpc(stats.status());
    FillCacheStats(*stats, response);
    return grpc::Status::OK;
  });
}

grpc::Status AdminServiceImpl::ListCachedPlans(grpc::ServerContext* context,
                                               const pb::ListCachedPlansRequest* request,
                                               pb::ListCachedPlansResponse* response) {
  return Guarded(*callers_, context, Rpc::kListCachedPlans, "", [&]() -> grpc::Status {
    absl::StatusOr<std::vector<cache::PlanRecord>> plans =
        engine_->ListCachedPlans(request->model_id());
    if (!plans.ok()) return ToGrpc(plans.status());
    for (const cache::PlanRecord& record : *plans) {
      pb::CachedPlan* plan = response->add_plans();
      plan->set_model_id(record.key.model_id);
      plan->set_scheduler(record.scheduler);
      plan->set_scheduler_config(record.key.scheduler_config);
      plan->set_platform_fingerprint(record.key.platform_fingerprint);
      plan->set_predictor_version(record.key.predictor_version);
      plan->set_makespan_us(record.makespan_us);
      plan->set_planning_ms(record.planning_ms);
      plan->set_hits(record.hits);
      plan->set_created_unix_s(record.created_unix_s);
    }
    return grpc::Status::OK;
  });
}

grpc::Status AdminServiceImpl::PurgeCache(grpc::ServerContext* context,
                                          const pb::PurgeCacheRequest* request,
                                          pb::PurgeCacheResponse* response) {
  const std::string purged = request->include_models() ? "plans and models" : "plans";
  return Guarded(*callers_, context, Rpc::kPurgeCache, purged, [&]() -> grpc::Status {
    absl::StatusOr<cache::PurgeResult> result = engine_->PurgeCache(request->include_models());
    if (!result.ok()) return ToGrpc(result.status());
    response->set_plans_removed(result->plans_removed);
    response->set_models_removed(result->models_removed);
    return grpc::Status::OK;
  });
}

grpc::Status AdminServiceImpl::Calibrate(grpc::ServerContext* context,
                                         const pb::CalibrateRequest* request,
                                         grpc::ServerWriter<pb::CalibrateResponse>* writer) {
  const std::string budget = absl::StrCat("budget ", request->budget_s(), " s");
  return Guarded(*callers_, context, Rpc::kCalibrate, budget, [&]() -> grpc::Status {
    constexpr double kDefaultBudgetS = 3;
    const double budget_s = request->budget_s() == 0 ? kDefaultBudgetS : request->budget_s();
    // Progress arrives on the queue's worker while this thread waits in the engine; the
    // mutex keeps the writes one at a time.
    auto mu = std::make_shared<std::mutex>();
    auto progress = [writer, mu](const CalibrationProgressEvent& event) {
      pb::CalibrateResponse message;
      pb::CalibrationProgress* p = message.mutable_progress();
      p->set_device(event.device);
      p->set_cases_done(event.cases_done);
      p->set_cases_skipped(event.cases_skipped);
      p->set_elapsed_s(event.elapsed_s);
      p->set_budget_s(event.budget_s);
      p->set_finished(event.finished);
      std::lock_guard lock(*mu);
      writer->Write(message);
    };
    absl::StatusOr<CalibrationOutput> output =
        engine_->Calibrate(budget_s, progress, ContextOf(context));
    if (!output.ok()) return ToGrpc(output.status());
    pb::CalibrateResponse message;
    pb::CalibrationResult* result = message.mutable_result();
    result->set_predictor_version(output->predictor_version);
    result->set_samples(output->samples);
    result->set_error_table(output->error_table);
    result->set_report_json(output->report.dump());
    result->set_params_json(output->params.dump());
    for (const std::string& skipped : output->skipped_devices) result->add_skipped_devices(skipped);
    std::lock_guard lock(*mu);
    writer->Write(message);
    return grpc::Status::OK;
  });
}

grpc::Status AdminServiceImpl::VerifyCache(grpc::ServerContext* context,
                                           const pb::VerifyCacheRequest*,
                                           pb::VerifyCacheResponse* response) {
  return Guarded(*callers_, context, Rpc::kVerifyCache, "", [&]() -> grpc::Status {
    absl::StatusOr<CacheVerification> report = engine_->VerifyCache();
    if (!report.ok()) return ToGrpc(report.status());
    response->set_models_checked(report->models_checked);
    response->set_plans_checked(report->plans_checked);
    response->set_plans_skipped(report->plans_skipped);
    for (const CacheProblemInfo& found : report->problems) {
      pb::CacheProblem* problem = response->add_problems();
      problem->set_model_id(found.model_id);
      problem->set_scheduler_config(found.scheduler_config);
      problem->set_reason(found.reason);
    }
    return grpc::Status::OK;
  });
}

}  // namespace psched::daemon
