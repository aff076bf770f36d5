#include "client/session.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace psched::client {
namespace {

std::vector<TensorSpec> Specs(const google::protobuf::RepeatedPtrField<v1::TensorInfo>& infos) {
  std::vector<TensorSpec> specs;
  for (const v1::TensorInfo& info : infos) {
    specs.push_back({info.name(), {info.dims().begin(), info.dims().end()}});
  }
  return specs;
}

int64_t Elements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string Stem(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = base.find_last_of('.');
  return dot == std::string::npos ? base : base.substr(0, dot);
}

}  // namespace

absl::StatusOr<Session> Session::Create(const std::string& path, ClientOptions options,
                                        std::string scheduler) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open model file '", path, "'"));
  std::ostringstream bytes;
  bytes << file.rdbuf();
  if (file.bad()) return absl::DataLossError(absl::StrCat("cannot read model file '", path, "'"));
  auto client = std::make_unique<Client>(std::move(options));
  absl::StatusOr<v1::RegisterModelResponse> registered =
      client->RegisterModel(bytes.str(), Stem(path), /*synthesize_weights=*/false);
  if (!registered.ok()) return registered.status();
  return Session(std::move(client), registered->model(), std::move(scheduler));
}

Session::Session(std::unique_ptr<Client> client, const v1::Model& model, std::string scheduler)
    : client_(std::move(client)),
      model_id_(model.id()),
      scheduler_(std::move(scheduler)),
      inputs_(Specs(model.inputs())),
      outputs_(Specs(model.outputs())) {}

absl::Status Session::CheckFeed(const std::map<std::string, Tensor>& feed) const {
  std::vector<std::string> missing;
  for (const TensorSpec& spec : inputs_) {
    if (!feed.contains(spec.name)) missing.push_back(spec.name);
  }
  if (!missing.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("required inputs missing from the feed: ", absl::StrJoin(missing, ", ")));
  }
  for (const auto& [name, tensor] : feed) {
    const TensorSpec* spec = nullptr;
    for (const TensorSpec& s : inputs_) {
      if (s.name == name) spec = &s;
    }
    if (spec == nullptr) return absl::InvalidArgumentError(absl::StrCat("invalid input name: ", name));
    if (tensor.dims != spec->dims) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "' has dims [", absl::StrJoin(tensor.dims, ","),
                       "], the model declares [", absl::StrJoin(spec->dims, ","), "]"));
    }
    if (static_cast<int64_t>(tensor.data.size()) != Elements(tensor.dims)) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "' has ", tensor.data.size(), " values for dims [",
                       absl::StrJoin(tensor.dims, ","), "] (", Elements(tensor.dims), ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> Session::Run(const std::map<std::string, Tensor>& feed,
                                                 const std::vector<std::string>& output_names) {
  for (const std::string& name : output_names) {
    bool known = false;
    for (const TensorSpec& spec : outputs_) known = known || spec.name == name;
    if (!known) return absl::InvalidArgumentError(absl::StrCat("invalid output name: ", name));
  }
  if (absl::Status status = CheckFeed(feed); !status.ok()) return status;

  v1::InferRequest request;
  request.set_model_id(model_id_);
  request.set_scheduler(scheduler_);
  for (const auto& [name, tensor] : feed) {
    v1::Tensor* input = request.add_inputs();
    input->set_name(name);
    input->mutable_dims()->Assign(tensor.dims.begin(), tensor.dims.end());
    input->set_data(reinterpret_cast<const char*>(tensor.data.data()),
                    tensor.data.size() * sizeof(float));
  }
  absl::StatusOr<v1::InferResponse> response = client_->Infer(request);
  if (!response.ok()) return response.status();

  std::map<std::string, Tensor> by_name;
  for (const v1::Tensor& output : response->outputs()) {
    Tensor tensor{{output.dims().begin(), output.dims().end()}, {}};
    tensor.data.resize(output.data().size() / sizeof(float));
    std::memcpy(tensor.data.data(), output.data().data(), tensor.data.size() * sizeof(float));
    by_name.emplace(output.name(), std::move(tensor));
  }
  std::vector<std::string> wanted = output_names;
  if (wanted.empty()) {
    for (const TensorSpec& spec : outputs_) wanted.push_back(spec.name);
  }
  std::vector<Tensor> outputs;
  for (const std::string& name : wanted) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      return absl::InternalError(absl::StrCat("pschedd's answer has no output '", name, "'"));
    }
    outputs.push_back(it->second);
  }
  return outputs;
}

}  // namespace psched::client
