// Micro-architecture names of CPU cores, for `pschedctl platform show` and for telling core
// types apart when grouping cores into clusters.
//
// UarchFromMidr decodes an arm64 MIDR_EL1 value, which sysfs exposes per core on arm64
// (regs/identification/midr_el1) and which the fixture trees carry; it knows the Arm Cortex
// and Neoverse parts and Qualcomm's own Kryo part numbers. LiveCpuNames asks libcpuinfo about
// the machine this process runs on (chip name, and per-core names on x86 too, where sysfs has
// no MIDR); it must only describe the live system, never a fixture tree. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace psched::platform {

// "Cortex-A76", "Kryo 4xx Silver (Cortex-A55)"; for a part not in the table, its implementer
// and part number ("MIDR 0x41:0xd99"), which still tells different parts apart.
std::string UarchFromMidr(uint64_t midr);

struct LiveCpuNames {
  // The SoC or processor name libcpuinfo reports ("AMD EPYC 7B13"); empty when unknown.
  std::string chip;
  // Linux CPU id -> micro-architecture, for the cores libcpuinfo can name.
  std::map<int, std::string> uarch;
};

// libcpuinfo's package name as psched shows it: its placeholder "Unknown" (what it says under
// qemu-user and on SoCs it has no table entry for) becomes empty, as if it had said nothing.
std::string ChipName(std::string_view package_name);

// Empty when libcpuinfo cannot initialise (it logs why on stderr).
LiveCpuNames LiveCpuNamesFromCpuinfo();

}  // namespace psched::platform
