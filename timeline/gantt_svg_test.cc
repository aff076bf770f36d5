#include "timeline/gantt_svg.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace psched::timeline {
namespace {

using ::testing::HasSubstr;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// A diamond on two devices: op 2 runs on the CPU while ops 1 and 3 run on the GPU.
std::vector<SubtaskSpan> Diamond() {
  return {{.op = "a", .op_id = 0, .device = 0, .start_us = 0, .end_us = 2000},
          {.op = "b", .op_id = 1, .device = 0, .start_us = 2000, .end_us = 7000},
          {.op = "c", .op_id = 2, .device = 1, .start_us = 4500, .end_us = 13500},
          {.op = "d", .op_id = 3, .device = 0, .start_us = 13500, .end_us = 17500}};
}

TEST(GanttSvgTest, DrawsOneBarPerSubtaskOnItsDevicesRow) {
  const std::vector<std::string> devices{"gpu", "cpu"};
  const std::string svg = GanttSvg(devices, Diamond(), 17500, GanttOptions{"demo & test", 800});
  EXPECT_THAT(svg, HasSubstr("<svg"));
  EXPECT_THAT(svg, HasSubstr("width=\"800\""));
  EXPECT_THAT(svg, HasSubstr("demo &amp; test"));
  EXPECT_THAT(svg, HasSubstr(">gpu<"));
  EXPECT_THAT(svg, HasSubstr(">cpu<"));
  EXPECT_THAT(svg, HasSubstr("makespan 17.500 ms"));
  EXPECT_EQ(Count(svg, "<title>"), 4u);
  EXPECT_THAT(svg, HasSubstr("<title>c (op 2): 4500.0-13500.0 us</title>"));
}

TEST(GanttSvgTest, SlicesOfOneOpShareAColourAndNameTheirRange) {
  const std::vector<std::string> devices{"gpu", "cpu"};
  const std::vector<SubtaskSpan> spans{
      {.op = "conv",
       .op_id = 7,
       .device = 0,
       .axis = model::SplitAxis::kOutputChannels,
       .begin = 0,
       .end = 24,
       .start_us = 0,
       .end_us = 100},
      {.op = "conv",
       .op_id = 7,
       .device = 1,
       .axis = model::SplitAxis::kOutputChannels,
       .begin = 24,
       .end = 64,
       .start_us = 0,
       .end_us = 100},
      {.op = "bad", .op_id = 8, .device = 2, .start_us = 0, .end_us = 50}};
  const std::string svg = GanttSvg(devices, spans, 100);
  EXPECT_THAT(svg, HasSubstr("conv (op 7) cout [24, 64): 0.0-100.0 us"));
  // The span on device 2 has no row and is left out.
  EXPECT_EQ(Count(svg, "<title>"), 2u);
  const size_t first = svg.find("fill=\"hsl(");
  const size_t second = svg.find("fill=\"hsl(", first + 1);
  ASSERT_NE(second, std::string::npos);
  EXPECT_EQ(svg.substr(first, 30), svg.substr(second, 30));
}

TEST(GanttSvgTest, AnUnwritablePathIsAnErrorNamingIt) {
  const std::vector<std::string> devices{"gpu", "cpu"};
  const absl::Status s = WriteGanttSvg("/nonexistent/dir/x.svg", devices, Diamond(), 17500);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("/nonexistent/dir/x.svg"));
}

}  // namespace
}  // namespace psched::timeline
