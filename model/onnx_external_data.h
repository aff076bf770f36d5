// ONNX external data, inlined on the client side so that an upload is self-contained.
//
// An exporter may store initializers outside the model file (torch.onnx.export beyond 2 GB,
// onnx.save(..., save_as_external_data=True)): such a TensorProto has data_location EXTERNAL
// and external_data entries `location` (a path relative to the model's folder), `offset` and
// `length` (bytes; length absent: to the end of the file). pschedd only receives the model's
// bytes, so `pschedctl model add` reads that data here, puts it in raw_data and drops the
// external references.
//
// Only files inside the model's folder are read: a location that is absolute, contains a
// `..` component or leads out of the folder through a symlink is refused with a message
// naming it and the tensor. Thread-safe; reads the file system only.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace psched::model {

struct InlineOptions {
  // Leave tensors whose external file is absent as they are (a model whose missing weights
  // the daemon synthesizes). Off: an absent file is NotFound naming it.
  bool allow_missing_files = false;
};

struct InlinedModel {
  // The model to send: the file's own bytes when nothing was external.
  std::string bytes;
  // Initializers whose data was read from external files, and how many bytes that was.
  int tensors_inlined = 0;
  int64_t external_bytes = 0;
  // Initializers left external because their file is absent (allow_missing_files).
  int tensors_missing = 0;
};

// Reads the ONNX model at `path` and inlines its initializers' external data. Errors:
// NotFound (model or data file missing), InvalidArgument (not ONNX, a bad external_data
// entry, a location outside the folder, a range beyond the file's end), ResourceExhausted
// (the inlined model would exceed what one protobuf holds, 2 GiB - 1).
absl::StatusOr<InlinedModel> ReadModelInliningExternalData(const std::string& path,
                                                           const InlineOptions& options = {});

}  // namespace psched::model
