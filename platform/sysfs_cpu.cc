#include "platform/sysfs_cpu.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace psched::platform {
namespace {

// Largest CPU id accepted: far above any board, low enough that a corrupt list cannot make
// the caller allocate or loop for long.
constexpr int kMaxCpuId = 65535;
// sysfs attribute files are one short line; anything longer is not one.
constexpr size_t kMaxAttributeBytes = 4096;

// The file's text, trimmed. NOT_FOUND when it does not exist (a dangling link included);
// FAILED_PRECONDITION naming the file and the reason when it cannot be read.
absl::StatusOr<std::string> ReadAttribute(const std::filesystem::path& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) {
      return absl::NotFoundError(absl::StrCat(path.string(), " does not exist"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open ", path.string(), ": ", std::strerror(error)));
  }
  std::string text(kMaxAttributeBytes + 1, '\0');
  size_t size = 0;
  while (size < text.size()) {
    const ssize_t n = read(fd, text.data() + size, text.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      close(fd);
      return absl::FailedPreconditionError(
          absl::StrCat("cannot read ", path.string(), ": ", std::strerror(error)));
    }
    if (n == 0) break;
    size += static_cast<size_t>(n);
  }
  close(fd);
  if (size > kMaxAttributeBytes) {
    return absl::FailedPreconditionError(
        absl::StrCat(path.string(), " is longer than ", kMaxAttributeBytes, " bytes"));
  }
  text.resize(size);
  return std::string(absl::StripAsciiWhitespace(text));
}

absl::StatusOr<int64_t> ReadInteger(const std::filesystem::path& path) {
  absl::StatusOr<std::string> text = ReadAttribute(path);
  if (!text.ok()) return text.status();
  int64_t value = 0;
  if (!absl::SimpleAtoi(*text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(), ": '", *text, "' is not an integer"));
  }
  return value;
}

absl::StatusOr<uint64_t> ReadHex(const std::filesystem::path& path) {
  absl::StatusOr<std::string> text = ReadAttribute(path);
  if (!text.ok()) return text.status();
  absl::string_view digits = *text;
  if (absl::StartsWith(digits, "0x") || absl::StartsWith(digits, "0X")) digits.remove_prefix(2);
  uint64_t value = 0;
  if (digits.empty() || !absl::SimpleHexAtoi(digits, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(), ": '", *text, "' is not a hexadecimal number"));
  }
  return value;
}

absl::StatusOr<std::vector<int>> ReadList(const std::filesystem::path& path) {
  absl::StatusOr<std::string> text = ReadAttribute(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<int>> list = ParseCpuList(*text);
  if (!list.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": ", list.status().message()));
  }
  return list;
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text) {
  std::vector<int> cpus;
  if (absl::StripAsciiWhitespace(text).empty()) return cpus;
  for (absl::string_view part : absl::StrSplit(absl::StripAsciiWhitespace(text), ',')) {
    std::vector<absl::string_view> bounds = absl::StrSplit(part, absl::MaxSplits('-', 1));
    int first = 0;
    int last = 0;
    if (!absl::SimpleAtoi(bounds[0], &first) ||
        (bounds.size() == 2 && !absl::SimpleAtoi(bounds[1], &last))) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", text, "' is not a CPU list (like 0-3,6): bad part '", part, "'"));
    }
    if (bounds.size() == 1) last = first;
    if (first < 0 || last < first || last > kMaxCpuId) {
      return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a CPU list: range '",
                                                     part, "' is empty or outside 0-", kMaxCpuId));
    }
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  return cpus;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    parts.push_back(j == i ? absl::StrCat(cpus[i]) : absl::StrCat(cpus[i], "-", cpus[j]));
    i = j + 1;
  }
  return absl::StrJoin(parts, ",");
}

absl::StatusOr<std::vector<int>> ReadCpuListFile(const std::filesystem::path& root,
                                                 std::string_view name) {
  return ReadList(root / name);
}

absl::StatusOr<SysfsCpu> ReadSysfsCpu(const std::filesystem::path& root, int cpu) {
  const std::filesystem::path dir = root / absl::StrCat("cpu", cpu);
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    return absl::NotFoundError(absl::StrCat(dir.string(), " is not a directory"));
  }
  SysfsCpu out;
  out.cpu = cpu;
  out.capacity = ReadInteger(dir / "cpu_capacity");
  out.max_freq_khz = ReadInteger(dir / "cpufreq" / "cpuinfo_max_freq");
  out.cluster_id = ReadInteger(dir / "topology" / "cluster_id");
  out.package_id = ReadInteger(dir / "topology" / "physical_package_id");
  out.midr = ReadHex(dir / "regs" / "identification" / "midr_el1");
  out.core_cpus = ReadList(dir / "topology" / "core_cpus_list");
  if (absl::IsNotFound(out.core_cpus.status())) {
    out.core_cpus = ReadList(dir / "topology" / "thread_siblings_list");
  }
  return out;
}

}  // namespace psched::platform
