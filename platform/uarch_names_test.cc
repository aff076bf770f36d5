#include "platform/uarch_names.h"

#include "gtest/gtest.h"

namespace psched::platform {
namespace {

TEST(UarchFromMidrTest, NamesKnownPartsWhateverTheirRevision) {
  // RK3588's big core, revision r4p0 (variant 4, revision 0): only implementer and part count.
  EXPECT_EQ(UarchFromMidr(0x414fd0b0), "Cortex-A76");
  EXPECT_EQ(UarchFromMidr(0x410fd0b1), "Cortex-A76");
  EXPECT_EQ(UarchFromMidr(0x410fd050), "Cortex-A55");
}

TEST(UarchFromMidrTest, AnUnknownPartKeepsItsNumbersSoCoreTypesStillDiffer) {
  EXPECT_EQ(UarchFromMidr(0x410fd990), "MIDR 0x41:0xd99");
  EXPECT_NE(UarchFromMidr(0x410fd990), UarchFromMidr(0x410fd980));
}

TEST(ChipNameTest, LibcpuinfosUnknownPlaceholderIsNoName) {
  EXPECT_EQ(ChipName("Unknown"), "");
  EXPECT_EQ(ChipName(""), "");
  EXPECT_EQ(ChipName("AMD EPYC 7B13"), "AMD EPYC 7B13");
  EXPECT_EQ(ChipName("Rockchip RK3588"), "Rockchip RK3588");
}

}  // namespace
}  // namespace psched::platform
