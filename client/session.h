// psched::client::Session: one model registered with pschedd and run with named tensors, the
// C++ counterpart of the Python client's InferenceSession (ONNX Runtime's session shape):
//
//   auto session = Session::Create("resnet18.onnx", {.socket = "/run/pschedd/pschedd.sock"});
//   auto outputs = session->Run({{"input", Tensor{{1, 3, 224, 224}, pixels}}});
//
// Create registers the file (registering the same bytes again is free: the id is their
// SHA-256). Run checks the feed against the declared inputs before anything is sent (an
// unknown or missing name, a wrong rank, dimension or element count is INVALID_ARGUMENT
// naming the input) and returns the outputs asked for, in the order asked.
//
// Thread-safety: Run may be called from several threads at once (one Client underneath).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/client.h"

namespace psched::client {

// A float32 tensor in the layout the model declares (row-major, NCHW for images).
struct Tensor {
  std::vector<int64_t> dims;
  std::vector<float> data;
};

// An input or output as the model declares it.
struct TensorSpec {
  std::string name;
  std::vector<int64_t> dims;
};

class Session {
 public:
  // Reads and registers the ONNX file at `path`; `scheduler` picks whose plan runs (empty:
  // the daemon's default).
  static absl::StatusOr<Session> Create(const std::string& path, ClientOptions options = {},
                                        std::string scheduler = "");

  const std::vector<TensorSpec>& inputs() const { return inputs_; }
  const std::vector<TensorSpec>& outputs() const { return outputs_; }
  // pschedd's id of the model (hex SHA-256).
  const std::string& model_id() const { return model_id_; }

  // One inference. `output_names` empty: every output, in model order.
  absl::StatusOr<std::vector<Tensor>> Run(const std::map<std::string, Tensor>& feed,
                                          const std::vector<std::string>& output_names = {});

 private:
  Session(std::unique_ptr<Client> client, const v1::Model& model, std::string scheduler);
  absl::Status CheckFeed(const std::map<std::string, Tensor>& feed) const;

  std::unique_ptr<Client> client_;
  std::string model_id_;
  std::string scheduler_;
  std::vector<TensorSpec> inputs_;
  std::vector<TensorSpec> outputs_;
};

}  // namespace psched::client
