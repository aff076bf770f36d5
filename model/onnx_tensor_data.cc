#include <cstring>

#include "absl/strings/str_join.h"
#include "model/onnx_importer.h"

namespace psched::model::onnx_importer {

std::string DimsString(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

std::string DtypeName(int32_t dtype) {
  return absl::StrCat(TensorProto::DataType_IsValid(dtype)
                          ? TensorProto::DataType_Name(static_cast<TensorProto::DataType>(dtype))
                          : std::string("unknown"),
                      " (", dtype, ")");
}

namespace {

// The file an external tensor names (its "location" entry), for the message.
std::string ExternalLocation(const TensorProto& t) {
  for (const auto& entry : t.external_data()) {
    if (entry.key() == "location") return entry.value();
  }
  return "";
}

absl::Status ExternalDataRefused(const TensorProto& t, absl::string_view where) {
  const std::string location = ExternalLocation(t);
  return absl::InvalidArgumentError(absl::StrCat(
      where, ": tensor '", t.name(), "' keeps its data in an external file",
      location.empty() ? std::string() : absl::StrCat(" ('", location, "')"),
      ", which an upload does not carry; inline the external data (pschedctl model add / "
      "psched.Client.add_model do it), or register the graph alone for planning "
      "(--graph-only / graph_only=True)"));
}

}  // namespace

absl::StatusOr<ConstValue> ReadTensorProto(const TensorProto& t, const ImportOptions& options,
                                           absl::string_view where) {
  ConstValue v;
  v.name = t.name();
  v.dtype = t.data_type();
  int64_t elements = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": tensor '", t.name(), "' has a negative dimension ", d));
    }
    if (d > options.max_tensor_elements || (d > 0 && elements > options.max_tensor_elements / d)) {
      return absl::ResourceExhaustedError(absl::StrCat(where, ": tensor '", t.name(),
                                                       "' has more than max_tensor_elements (",
                                                       options.max_tensor_elements, ") elements"));
    }
    elements *= d;
    v.dims.push_back(d);
  }
  if (t.data_location() == TensorProto::EXTERNAL) {
    if (options.refuse_external_data) return ExternalDataRefused(t, where);
    v.has_data = false;
    return v;
  }
  const auto n = static_cast<size_t>(elements);
  auto size_error = [&](size_t got) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": tensor '", t.name(), "' with dims ",
                                                   DimsString(v.dims), " holds ", got,
                                                   " values, expected ", n));
  };
  const std::string& raw = t.raw_data();
  switch (t.data_type()) {
    case TensorProto::FLOAT:
      if (!raw.empty()) {
        if (raw.size() != n * 4) return size_error(raw.size() / 4);
        v.floats.resize(n);
        std::memcpy(v.floats.data(), raw.data(), raw.size());
      } else {
        if (static_cast<size_t>(t.float_data_size()) != n) return size_error(t.float_data_size());
        v.floats.assign(t.float_data().begin(), t.float_data().end());
      }
      break;
    case TensorProto::DOUBLE:
      if (!raw.empty()) {
        if (raw.size() != n * 8) return size_error(raw.size() / 8);
        v.floats.resize(n);
        for (size_t i = 0; i < n; ++i) {
          double d;
          std::memcpy(&d, raw.data() + 8 * i, 8);
          v.floats[i] = static_cast<float>(d);
        }
      } else {
        if (static_cast<size_t>(t.double_data_size()) != n) return size_error(t.double_data_size());
        v.floats.assign(t.double_data().begin(), t.double_data().end());
      }
      break;
    case TensorProto::INT64:
      if (!raw.empty()) {
        if (raw.size() != n * 8) return size_error(raw.size() / 8);
        v.ints.resize(n);
        std::memcpy(v.ints.data(), raw.data(), raw.size());
      } else {
        if (static_cast<size_t>(t.int64_data_size()) != n) return size_error(t.int64_data_size());
        v.ints.assign(t.int64_data().begin(), t.int64_data().end());
      }
      break;
    case TensorProto::INT32:
      if (!raw.empty()) {
        if (raw.size() != n * 4) return size_error(raw.size() / 4);
        v.ints.resize(n);
        for (size_t i = 0; i < n; ++i) {
          int32_t x;
          std::memcpy(&x, raw.data() + 4 * i, 4);
          v.ints[i] = x;
        }
      } else {
        if (static_cast<size_t>(t.int32_data_size()) != n) return size_error(t.int32_data_size());
        v.ints.assign(t.int32_data().begin(), t.int32_data().end());
      }
      break;
    case TensorProto::BOOL:  // masks; one byte per value in raw_data
      if (!raw.empty()) {
        if (raw.size() != n) return size_error(raw.size());
        v.ints.resize(n);
        for (size_t i = 0; i < n; ++i) v.ints[i] = raw[i] != 0 ? 1 : 0;
      } else {
        if (static_cast<size_t>(t.int32_data_size()) != n) return size_error(t.int32_data_size());
        for (int32_t x : t.int32_data()) v.ints.push_back(x != 0 ? 1 : 0);
      }
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": tensor '", t.name(), "' has unsupported data type ", DtypeName(t.data_type()),
          "; psched reads float32 weights, int64/int32 shapes and bool masks"));
  }
  v.has_data = true;
  return v;
}

}  // namespace psched::model::onnx_importer
