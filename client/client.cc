#include "client/client.h"

#include <grpc/support/time.h>
#include <grpcpp/completion_queue.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace psched::client {

Client::Client(ClientOptions options) : options_(std::move(options)) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  channel_ = grpc::CreateCustomChannel(absl::StrCat("unix:", options_.socket),
                                       grpc::InsecureChannelCredentials(), args);
  models_ = v1::ModelService::NewStub(channel_);
  plans_ = v1::PlanService::NewStub(channel_);
  inference_ = v1::InferenceService::NewStub(channel_);
  admin_ = v1::AdminService::NewStub(channel_);
}

namespace {

// A completion queue for one call's operations, awaited one at a time by polling without
// sleeping for `spin` first: an answer that comes within it costs no thread wake-up. It
// polls only when the client's last call took at most twice `spin` (`last_call_ns`, which it
// updates): a call that waits longer, queued behind other clients' inferences, would find
// the spin spent, and spinning clients would take the cores the daemon answers them with.
// Twice, not once: a call that slept paid the wake-ups the spin avoids (150-250 us here), and
// must not keep the next from spinning.
class SpinningQueue {
 public:
  SpinningQueue(absl::Duration spin, std::atomic<int64_t>& last_call_ns)
      : spin_(absl::Nanoseconds(last_call_ns.load(std::memory_order_relaxed)) <= 2 * spin
                  ? spin
                  : absl::ZeroDuration()),
        last_call_ns_(last_call_ns) {}
  ~SpinningQueue() {
    last_call_ns_.store(absl::ToInt64Nanoseconds(absl::Now() - started_),
                        std::memory_order_relaxed);
    queue_.Shutdown();
    void* tag;
    bool ok;
    while (queue_.Next(&tag, &ok)) {
    }
  }
  grpc::CompletionQueue* get() { return &queue_; }
  // Waits for the operation started last (the only one outstanding); returns its ok.
  bool Await() {
    void* tag = nullptr;
    bool ok = false;
    const absl::Time spin_until = absl::Now() + spin_;
    while (absl::Now() < spin_until) {
      if (queue_.AsyncNext(&tag, &ok, gpr_time_0(GPR_CLOCK_MONOTONIC)) ==
          grpc::CompletionQueue::GOT_EVENT) {
        return ok;
      }
      std::this_thread::yield();  // anything runnable here goes first
    }
    return queue_.Next(&tag, &ok) && ok;
  }

 private:
  const absl::Duration spin_;
  std::atomic<int64_t>& last_call_ns_;
  const absl::Time started_ = absl::Now();
  grpc::CompletionQueue queue_;
};

}  // namespace

void Client::Prepare(grpc::ClientContext& context) const {
  context.set_deadline(absl::ToChronoTime(absl::Now() + options_.timeout));
}

absl::Status Client::Convert(const grpc::Status& status) const {
  if (status.ok()) return absl::OkStatus();
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return absl::UnavailableError(absl::StrCat("no pschedd answers on ", options_.socket,
                                               " (is it running? ", status.error_message(), ")"));
  }
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

#define PSCHED_UNARY(Stub, Method, Request, Response, request)      \
  grpc::ClientContext context;                                      \
  Prepare(context);                                                 \
  Response response;                                                \
  grpc::Status status = Stub->Method(&context, request, &response); \
  if (!status.ok()) return Convert(status);                         \
  return response

absl::StatusOr<v1::StatusResponse> Client::Status() {
  PSCHED_UNARY(admin_, Status, v1::StatusRequest, v1::StatusResponse, v1::StatusRequest());
}

absl::StatusOr<v1::DevicesResponse> Client::Devices() {
  PSCHED_UNARY(admin_, Devices, v1::DevicesRequest, v1::DevicesResponse, v1::DevicesRequest());
}

absl::StatusOr<v1::CacheStatsResponse> Client::CacheStats() {
  PSCHED_UNARY(admin_, CacheStats, v1::CacheStatsRequest, v1::CacheStatsResponse,
               v1::CacheStatsRequest());
}

absl::StatusOr<v1::ListCachedPlansResponse> Client::ListCachedPlans(const std::string& model_id) {
  v1::ListCachedPlansRequest request;
  request.set_model_id(model_id);
  PSCHED_UNARY(admin_, ListCachedPlans, v1::ListCachedPlansRequest, v1::ListCachedPlansResponse,
               request);
}

absl::StatusOr<v1::PurgeCacheResponse> Client::PurgeCache(bool include_models) {
  v1::PurgeCacheRequest request;
  request.set_include_models(include_models);
  PSCHED_UNARY(admin_, PurgeCache, v1::PurgeCacheRequest, v1::PurgeCacheResponse, request);
}

absl::StatusOr<v1::VerifyCacheResponse> Client::VerifyCache() {
  PSCHED_UNARY(admin_, VerifyCache, v1::VerifyCacheRequest, v1::VerifyCacheResponse,
               v1::VerifyCacheRequest());
}

absl::StatusOr<v1::ExportPlansResponse> Client::ExportPlans(const std::string& model_id,
                                                            const std::string& scheduler) {
  v1::ExportPlansRequest request;
  request.set_model_id(model_id);
  request.set_scheduler(scheduler);
  PSCHED_UNARY(plans_, ExportPlans, v1::ExportPlansRequest, v1::ExportPlansResponse, request);
}

absl::StatusOr<v1::ImportPlansResponse> Client::ImportPlans(const std::string& bundle) {
  v1::ImportPlansRequest request;
  request.set_bundle(bundle);
  PSCHED_UNARY(plans_, ImportPlans, v1::ImportPlansRequest, v1::ImportPlansResponse, request);
}

absl::StatusOr<v1::ListModelsResponse> Client::ListModels() {
  PSCHED_UNARY(models_, ListModels, v1::ListModelsRequest, v1::ListModelsResponse,
               v1::ListModelsRequest());
}

absl::StatusOr<v1::RemoveModelResponse> Client::RemoveModel(const std::string& id) {
  v1::RemoveModelRequest request;
  request.set_id(id);
  PSCHED_UNARY(models_, RemoveModel, v1::RemoveModelRequest, v1::RemoveModelResponse, request);
}

absl::StatusOr<v1::InferResponse> Client::Infer(const v1::InferRequest& request) {
  grpc::ClientContext context;
  Prepare(context);
  v1::InferResponse response;
  grpc::Status status;
  SpinningQueue queue(options_.spin, *last_call_ns_);
  std::unique_ptr<grpc::ClientAsyncResponseReader<v1::InferResponse>> call =
      inference_->AsyncInfer(&context, request, queue.get());
  call->Finish(&response, &status, &response);
  queue.Await();
  if (!status.ok()) return Convert(status);
  return response;
}

#undef PSCHED_UNARY

absl::StatusOr<v1::Model> Client::GetModel(const std::string& id) {
  grpc::ClientContext context;
  Prepare(context);
  v1::GetModelRequest request;
  request.set_id(id);
  v1::GetModelResponse response;
  grpc::Status status = models_->GetModel(&context, request, &response);
  if (!status.ok()) return Convert(status);
  return response.model();
}

absl::StatusOr<v1::RegisterModelResponse> Client::RegisterModel(const std::string& onnx,
                                                                const std::string& name,
                                                                bool synthesize_weights) {
  v1::ModelHeader header;
  header.set_name(name);
  header.set_synthesize_weights(synthesize_weights);
  return RegisterModel(onnx, std::move(header));
}

absl::StatusOr<v1::RegisterModelResponse> Client::RegisterModel(const std::string& onnx,
                                                                v1::ModelHeader header) {
  grpc::ClientContext context;
  Prepare(context);
  v1::RegisterModelResponse response;
  std::unique_ptr<grpc::ClientWriter<v1::RegisterModelRequest>> writer =
      models_->RegisterModel(&context, &response);
  v1::RegisterModelRequest message;
  header.set_total_bytes(static_cast<int64_t>(onnx.size()));
  *message.mutable_header() = std::move(header);
  // A failed write means the daemon already answered (e.g. too large); Finish says why.
  bool open = writer->Write(message);
  for (size_t offset = 0; open && offset < onnx.size();
       offset += static_cast<size_t>(options_.chunk_bytes)) {
    v1::RegisterModelRequest chunk;
    chunk.set_chunk(onnx.substr(offset, static_cast<size_t>(options_.chunk_bytes)));
    open = writer->Write(chunk);
  }
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  if (!status.ok()) return Convert(status);
  return response;
}

absl::StatusOr<v1::Plan> Client::GetPlan(
    const std::string& model_id, const std::string& scheduler,
    const std::map<std::string, std::string>& options, bool refresh,
    const std::function<void(const v1::PlanProgress&)>& progress) {
  grpc::ClientContext context;
  Prepare(context);
  v1::GetPlanRequest request;
  request.set_model_id(model_id);
  request.set_scheduler(scheduler);
  request.set_refresh(refresh);
  for (const auto& [key, value] : options) (*request.mutable_options())[key] = value;
  // Every operation has the one tag: they are awaited one at a time.
  SpinningQueue queue(options_.spin, *last_call_ns_);
  void* const tag = &request;
  std::unique_ptr<grpc::ClientAsyncReader<v1::GetPlanResponse>> reader =
      plans_->AsyncGetPlan(&context, request, queue.get(), tag);
  std::optional<v1::Plan> plan;
  if (queue.Await()) {  // started
    v1::GetPlanResponse message;
    for (;;) {
      reader->Read(&message, tag);
      if (!queue.Await()) break;  // the stream ended
      if (message.has_progress() && progress) progress(message.progress());
      if (message.has_plan()) plan = message.plan();
    }
  }
  grpc::Status status;
  reader->Finish(&status, tag);
  queue.Await();
  if (!status.ok()) return Convert(status);
  if (!plan.has_value()) return absl::InternalError("GetPlan stream ended without a plan");
  return *plan;
}

absl::StatusOr<v1::CalibrationResult> Client::Calibrate(
    double budget_s, const std::function<void(const v1::CalibrationProgress&)>& progress) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + options_.timeout +
                                          absl::Seconds(3 * std::max(budget_s, 3.0))));
  v1::CalibrateRequest request;
  request.set_budget_s(budget_s);
  std::unique_ptr<grpc::ClientReader<v1::CalibrateResponse>> reader =
      admin_->Calibrate(&context, request);
  v1::CalibrateResponse message;
  std::optional<v1::CalibrationResult> result;
  while (reader->Read(&message)) {
    if (message.has_progress() && progress) progress(message.progress());
    if (message.has_result()) result = message.result();
  }
  grpc::Status status = reader->Finish();
  if (!status.ok()) return Convert(status);
  if (!result.has_value()) return absl::InternalError("Calibrate stream ended without a result");
  return *result;
}

}  // namespace psched::client
