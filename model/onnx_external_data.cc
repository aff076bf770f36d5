#include "model/onnx_external_data.h"

#include <onnx/onnx_pb.h>

#include <charconv>
#include <climits>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"

namespace psched::model {
namespace {

namespace fs = std::filesystem;

// What one protobuf, and so one ONNX model, can hold.
constexpr int64_t kMaxModelBytes = INT_MAX;

struct ExternalRef {
  std::string location;
  int64_t offset = 0;
  std::optional<int64_t> length;  // absent: to the end of the file
};

std::string TensorLabel(const onnx::TensorProto& t) {
  return absl::StrCat("tensor '", t.name(), "'");
}

absl::StatusOr<int64_t> ByteCount(const onnx::TensorProto& t, const std::string& key,
                                  const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end || value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(TensorLabel(t), ": external_data ", key, " '", text, "' is not a byte count"));
  }
  return value;
}

absl::StatusOr<ExternalRef> ExternalRefOf(const onnx::TensorProto& t) {
  ExternalRef ref;
  for (const onnx::StringStringEntryProto& entry : t.external_data()) {
    if (entry.key() == "location") {
      ref.location = entry.value();
    } else if (entry.key() == "offset") {
      absl::StatusOr<int64_t> offset = ByteCount(t, "offset", entry.value());
      if (!offset.ok()) return offset.status();
      ref.offset = *offset;
    } else if (entry.key() == "length") {
      absl::StatusOr<int64_t> length = ByteCount(t, "length", entry.value());
      if (!length.ok()) return length.status();
      ref.length = *length;
    }
    // "checksum" and unknown keys carry nothing needed to read the bytes.
  }
  if (ref.location.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(TensorLabel(t),
                     " is stored externally but its external_data names no "
                     "location"));
  }
  return ref;
}

absl::Status Outside(const onnx::TensorProto& t, const std::string& location,
                     const fs::path& folder, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "external data location '", location, "' of ", TensorLabel(t), " ", why,
      "; psched reads external data only from files inside the model's folder ", folder.string()));
}

// The file `location` names, checked to lie inside `folder` (already canonical). Empty when
// the file does not exist.
absl::StatusOr<std::optional<fs::path>> ResolveInside(const onnx::TensorProto& t,
                                                      const std::string& location,
                                                      const fs::path& folder) {
  const fs::path relative(location);
  if (relative.is_absolute()) return Outside(t, location, folder, "is an absolute path");
  for (const fs::path& part : relative) {
    if (part == "..") return Outside(t, location, folder, "climbs out with '..'");
  }
  std::error_code error;
  const fs::path real = fs::canonical(folder / relative, error);
  if (error) {
    // A dangling symlink is as absent as a missing file; either way nothing is read.
    return std::optional<fs::path>();
  }
  const fs::path inside = real.lexically_relative(folder);
  if (inside.empty() || *inside.begin() == "..") {
    return Outside(t, location, folder,
                   absl::StrCat("leads out of the folder through a symlink, to ", real.string()));
  }
  if (!fs::is_regular_file(real, error)) {
    return absl::InvalidArgumentError(absl::StrCat("external data location '", location, "' of ",
                                                   TensorLabel(t), " is not a regular file"));
  }
  return std::optional<fs::path>(real);
}

// Reads the tensor's bytes into raw_data and makes it an ordinary (inline) tensor.
absl::StatusOr<int64_t> Inline(onnx::TensorProto& t, const ExternalRef& ref, const fs::path& file,
                               int64_t budget) {
  std::error_code error;
  const auto file_size = static_cast<int64_t>(fs::file_size(file, error));
  if (error) {
    return absl::NotFoundError(absl::StrCat("cannot read the size of '", file.string(), "' (",
                                            TensorLabel(t), "): ", error.message()));
  }
  const int64_t length = ref.length.value_or(file_size - ref.offset);
  if (ref.offset > file_size || length < 0 || length > file_size - ref.offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        TensorLabel(t), " reads bytes [", ref.offset, ", ",
        ref.length.has_value() ? absl::StrCat(ref.offset + *ref.length) : std::string("end"),
        ") of '", ref.location, "', which has ", file_size, " bytes"));
  }
  if (length > budget) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "with its external data inlined the model would be more than ", kMaxModelBytes,
        " bytes (2 GiB - 1), the most one ONNX protobuf holds; psched cannot take it (at ",
        TensorLabel(t), ")"));
  }
  std::ifstream in(file, std::ios::binary);
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(ref.offset);
  in.read(bytes.data(), length);
  if (!in || in.gcount() != length) {
    return absl::DataLossError(absl::StrCat("error reading ", length, " bytes at offset ",
                                            ref.offset, " of '", file.string(), "' (",
                                            TensorLabel(t), ")"));
  }
  t.set_raw_data(std::move(bytes));
  t.clear_external_data();
  // Cleared rather than set to DEFAULT: the tensor serializes as an exporter writes an inline
  // one, so the inlined model has the id of the same model saved self-contained.
  t.clear_data_location();
  return length;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open ONNX file '", path, "'"));
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) return absl::DataLossError(absl::StrCat("error reading '", path, "'"));
  return std::move(contents).str();
}

}  // namespace

absl::StatusOr<InlinedModel> ReadModelInliningExternalData(const std::string& path,
                                                           const InlineOptions& options) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  InlinedModel result;
  if (static_cast<int64_t>(bytes->size()) > kMaxModelBytes) {
    return absl::ResourceExhaustedError(absl::StrCat("'", path, "' is ", bytes->size(),
                                                     " bytes, more than one ONNX protobuf holds (",
                                                     kMaxModelBytes, ")"));
  }
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes->data(), static_cast<int>(bytes->size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is not a valid ONNX model (protobuf parsing failed)"));
  }
  std::error_code error;
  const fs::path given_folder = fs::path(path).parent_path();
  const fs::path folder = fs::canonical(given_folder.empty() ? fs::path(".") : given_folder, error);
  if (error) {
    return absl::NotFoundError(
        absl::StrCat("cannot resolve the folder of '", path, "': ", error.message()));
  }
  int64_t budget = kMaxModelBytes - static_cast<int64_t>(bytes->size());
  for (onnx::TensorProto& t : *model.mutable_graph()->mutable_initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    absl::StatusOr<ExternalRef> ref = ExternalRefOf(t);
    if (!ref.ok()) return ref.status();
    absl::StatusOr<std::optional<fs::path>> file = ResolveInside(t, ref->location, folder);
    if (!file.ok()) return file.status();
    if (!file->has_value()) {
      if (options.allow_missing_files) {
        ++result.tensors_missing;
        continue;
      }
      return absl::NotFoundError(
          absl::StrCat("external data file '", ref->location, "' of ", TensorLabel(t),
                       " is not in ", folder.string(),
                       "; copy it beside the model, or register the graph alone for "
                       "planning (--graph-only) or with synthetic weights (--synthetic-weights)"));
    }
    absl::StatusOr<int64_t> inlined = Inline(t, *ref, **file, budget);
    if (!inlined.ok()) return inlined.status();
    budget -= *inlined;
    ++result.tensors_inlined;
    result.external_bytes += *inlined;
  }
  if (result.tensors_inlined == 0) {
    result.bytes = *std::move(bytes);
    return result;
  }
  if (static_cast<int64_t>(model.ByteSizeLong()) > kMaxModelBytes ||
      !model.SerializeToString(&result.bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "with its external data inlined '", path, "' would be more than ", kMaxModelBytes,
        " bytes (2 GiB - 1), the most one ONNX protobuf holds; psched cannot take it"));
  }
  return result;
}

}  // namespace psched::model
