#include "executor/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace psched::executor {
namespace {

constexpr absl::string_view kMagic = "\x93NUMPY";

// The value that follows `'key':` in the header dict, up to the next top-level comma.
absl::StatusOr<absl::string_view> HeaderValue(absl::string_view header, absl::string_view key) {
  const std::string quoted = absl::StrCat("'", key, "'");
  const size_t at = header.find(quoted);
  if (at == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("npy header has no ", quoted, " entry"));
  }
  absl::string_view rest = header.substr(at + quoted.size());
  rest = absl::StripLeadingAsciiWhitespace(rest);
  if (!absl::ConsumePrefix(&rest, ":")) {
    return absl::InvalidArgumentError(absl::StrCat("npy header: no ':' after ", quoted));
  }
  rest = absl::StripLeadingAsciiWhitespace(rest);
  if (rest.empty())
    return absl::InvalidArgumentError(absl::StrCat("npy header: no value for ", quoted));
  const size_t end = rest.front() == '(' ? rest.find(')') + 1 : rest.find_first_of(",}");
  if (end == absl::string_view::npos || end == 0) {
    return absl::InvalidArgumentError(absl::StrCat("npy header: unterminated ", quoted));
  }
  return rest.substr(0, end);
}

int64_t Product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

absl::StatusOr<NpyArray> ParseNpy(std::string_view std_bytes) {
  // Debian's Abseil has its own string_view type.
  const absl::string_view bytes(std_bytes.data(), std_bytes.size());
  if (bytes.size() < 10 || bytes.substr(0, kMagic.size()) != kMagic) {
    return absl::InvalidArgumentError("not an npy file (missing \\x93NUMPY magic)");
  }
  const auto major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len =
        static_cast<uint8_t>(bytes[8]) | static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8;
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return absl::InvalidArgumentError("npy file truncated in its preamble");
    for (int i = 0; i < 4; ++i) {
      header_len |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + static_cast<size_t>(i)]))
                    << (8 * i);
    }
    header_start = 12;
  } else {
    return absl::UnimplementedError(
        absl::StrCat("npy format version ", major, " is not supported"));
  }
  if (bytes.size() < header_start + header_len) {
    return absl::InvalidArgumentError("npy file truncated inside its header");
  }
  const absl::string_view header = bytes.substr(header_start, header_len);
  auto descr = HeaderValue(header, "descr");
  if (!descr.ok()) return descr.status();
  if (*descr != "'<f4'" && *descr != "'=f4'") {
    return absl::UnimplementedError(
        absl::StrCat("npy dtype ", *descr, " is not supported (only little-endian float32 '<f4')"));
  }
  auto fortran = HeaderValue(header, "fortran_order");
  if (!fortran.ok()) return fortran.status();
  if (*fortran != "False") {
    return absl::UnimplementedError("npy arrays in Fortran order are not supported");
  }
  auto shape_text = HeaderValue(header, "shape");
  if (!shape_text.ok()) return shape_text.status();
  absl::string_view dims = *shape_text;
  if (!absl::ConsumePrefix(&dims, "(") || !absl::ConsumeSuffix(&dims, ")")) {
    return absl::InvalidArgumentError(absl::StrCat("npy shape ", *shape_text, " is not a tuple"));
  }
  NpyArray array;
  for (absl::string_view part : absl::StrSplit(dims, ',', absl::SkipWhitespace())) {
    int64_t d = 0;
    if (!absl::SimpleAtoi(part, &d) || d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("npy shape ", *shape_text, " has a bad dimension '", part, "'"));
    }
    if (d > 0 && Product(array.shape) > (int64_t{1} << 40) / d) {
      return absl::InvalidArgumentError(absl::StrCat("npy shape ", *shape_text, " is too large"));
    }
    array.shape.push_back(d);
  }
  const int64_t count = Product(array.shape);
  const absl::string_view payload = bytes.substr(header_start + header_len);
  if (payload.size() != static_cast<size_t>(count) * sizeof(float)) {
    return absl::InvalidArgumentError(
        absl::StrCat("npy data holds ", payload.size(), " bytes, shape (",
                     absl::StrJoin(array.shape, ","), ") needs ", count * 4));
  }
  array.data.resize(static_cast<size_t>(count));
  // An empty array (a zero dimension) has no buffer: memcpy from or to null is undefined
  // even for zero bytes (found by fuzz_npy).
  if (count > 0) std::memcpy(array.data.data(), payload.data(), payload.size());
  return array;
}

absl::StatusOr<NpyArray> ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open npy file ", path));
  std::ostringstream content;
  content << in.rdbuf();
  auto array = ParseNpy(content.str());
  if (!array.ok()) {
    return absl::Status(array.status().code(), absl::StrCat(path, ": ", array.status().message()));
  }
  return array;
}

absl::StatusOr<std::string> SerializeNpy(const NpyArray& array) {
  if (static_cast<int64_t>(array.data.size()) != Product(array.shape)) {
    return absl::InvalidArgumentError(absl::StrCat("npy array holds ", array.data.size(),
                                                   " values for shape (",
                                                   absl::StrJoin(array.shape, ","), ")"));
  }
  std::string shape = absl::StrJoin(array.shape, ", ");
  if (array.shape.size() == 1) shape += ",";
  std::string header =
      absl::StrCat("{'descr': '<f4', 'fortran_order': False, 'shape': (", shape, "), }");
  // The preamble plus header is padded with spaces to a multiple of 64, ending in '\n'.
  const size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header.push_back('\n');
  std::string out(kMagic);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  out.append(reinterpret_cast<const char*>(array.data.data()), array.data.size() * sizeof(float));
  return out;
}

absl::Status WriteNpy(const std::string& path, const NpyArray& array) {
  auto bytes = SerializeNpy(array);
  if (!bytes.ok()) return bytes.status();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write npy file ", path));
  out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  if (!out) return absl::DataLossError(absl::StrCat("short write to npy file ", path));
  return absl::OkStatus();
}

}  // namespace psched::executor
