#include "platform/uarch_names.h"

#include <cpuinfo.h>

#include <string_view>

#include "absl/strings/str_cat.h"

namespace psched::platform {
namespace {

struct MidrPart {
  uint32_t implementer;
  uint32_t part;
  std::string_view name;
};

// MIDR_EL1 implementer and part numbers from the vendors' technical reference manuals.
constexpr MidrPart kMidrParts[] = {
    {0x41, 0xd03, "Cortex-A53"},
    {0x41, 0xd04, "Cortex-A35"},
    {0x41, 0xd05, "Cortex-A55"},
    {0x41, 0xd07, "Cortex-A57"},
    {0x41, 0xd08, "Cortex-A72"},
    {0x41, 0xd09, "Cortex-A73"},
    {0x41, 0xd0a, "Cortex-A75"},
    {0x41, 0xd0b, "Cortex-A76"},
    {0x41, 0xd0c, "Neoverse-N1"},
    {0x41, 0xd0d, "Cortex-A77"},
    {0x41, 0xd0e, "Cortex-A76AE"},
    {0x41, 0xd40, "Neoverse-V1"},
    {0x41, 0xd41, "Cortex-A78"},
    {0x41, 0xd42, "Cortex-A78AE"},
    {0x41, 0xd44, "Cortex-X1"},
    {0x41, 0xd46, "Cortex-A510"},
    {0x41, 0xd47, "Cortex-A710"},
    {0x41, 0xd48, "Cortex-X2"},
    {0x41, 0xd49, "Neoverse-N2"},
    {0x41, 0xd4b, "Cortex-A78C"},
    {0x41, 0xd4d, "Cortex-A715"},
    {0x41, 0xd4e, "Cortex-X3"},
    {0x41, 0xd4f, "Neoverse-V2"},
    {0x41, 0xd80, "Cortex-A520"},
    {0x41, 0xd81, "Cortex-A720"},
    {0x41, 0xd82, "Cortex-X4"},
    {0x51, 0x800, "Kryo 2xx Gold (Cortex-A73)"},
    {0x51, 0x801, "Kryo 2xx Silver (Cortex-A53)"},
    {0x51, 0x802, "Kryo 3xx Gold (Cortex-A75)"},
    {0x51, 0x803, "Kryo 3xx Silver (Cortex-A55)"},
    {0x51, 0x804, "Kryo 4xx Gold (Cortex-A76)"},
    {0x51, 0x805, "Kryo 4xx Silver (Cortex-A55)"},
};

// libcpuinfo's names for the cores psched meets: boards (Arm) and development machines (x86).
std::string_view CpuinfoUarchName(enum cpuinfo_uarch uarch) {
  switch (uarch) {
    case cpuinfo_uarch_cortex_a53:
      return "Cortex-A53";
    case cpuinfo_uarch_cortex_a55r0:
    case cpuinfo_uarch_cortex_a55:
      return "Cortex-A55";
    case cpuinfo_uarch_cortex_a57:
      return "Cortex-A57";
    case cpuinfo_uarch_cortex_a72:
      return "Cortex-A72";
    case cpuinfo_uarch_cortex_a73:
      return "Cortex-A73";
    case cpuinfo_uarch_cortex_a75:
      return "Cortex-A75";
    case cpuinfo_uarch_cortex_a76:
      return "Cortex-A76";
    case cpuinfo_uarch_cortex_a77:
      return "Cortex-A77";
    case cpuinfo_uarch_cortex_a78:
      return "Cortex-A78";
    case cpuinfo_uarch_cortex_x1:
      return "Cortex-X1";
    case cpuinfo_uarch_neoverse_n1:
      return "Neoverse-N1";
    case cpuinfo_uarch_neoverse_v1:
      return "Neoverse-V1";
    case cpuinfo_uarch_neoverse_n2:
      return "Neoverse-N2";
    case cpuinfo_uarch_zen:
      return "Zen";
    case cpuinfo_uarch_zen2:
      return "Zen 2";
    case cpuinfo_uarch_zen3:
      return "Zen 3";
    case cpuinfo_uarch_sandy_bridge:
      return "Sandy Bridge";
    case cpuinfo_uarch_ivy_bridge:
      return "Ivy Bridge";
    case cpuinfo_uarch_haswell:
      return "Haswell";
    case cpuinfo_uarch_broadwell:
      return "Broadwell";
    case cpuinfo_uarch_sky_lake:
      return "Skylake";
    case cpuinfo_uarch_palm_cove:
      return "Palm Cove";
    case cpuinfo_uarch_sunny_cove:
      return "Sunny Cove";
    case cpuinfo_uarch_goldmont:
      return "Goldmont";
    case cpuinfo_uarch_goldmont_plus:
      return "Goldmont Plus";
    default:
      return "";
  }
}

}  // namespace

std::string UarchFromMidr(uint64_t midr) {
  const uint32_t implementer = static_cast<uint32_t>((midr >> 24) & 0xff);
  const uint32_t part = static_cast<uint32_t>((midr >> 4) & 0xfff);
  for (const MidrPart& known : kMidrParts) {
    if (known.implementer == implementer && known.part == part) return std::string(known.name);
  }
  return absl::StrCat("MIDR 0x", absl::Hex(implementer), ":0x", absl::Hex(part));
}

std::string ChipName(std::string_view package_name) {
  if (package_name == "Unknown") return "";
  return std::string(package_name);
}

LiveCpuNames LiveCpuNamesFromCpuinfo() {
  LiveCpuNames names;
  if (!cpuinfo_initialize()) return names;
  if (cpuinfo_get_packages_count() > 0) names.chip = ChipName(cpuinfo_get_package(0)->name);
  for (uint32_t i = 0; i < cpuinfo_get_processors_count(); ++i) {
    const cpuinfo_processor* processor = cpuinfo_get_processor(i);
    if (processor == nullptr || processor->core == nullptr) continue;
    const std::string_view name = CpuinfoUarchName(processor->core->uarch);
    if (!name.empty()) names.uarch[processor->linux_id] = std::string(name);
  }
  return names;
}

}  // namespace psched::platform
