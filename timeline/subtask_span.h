// SubtaskSpan: one subtask on one device's timeline - which op (or slice of its work) ran,
// and when. The plain data the timeline writers (gantt_svg.h, chrome_trace.h) draw, filled
// from whatever the caller has: a schedule, a co-execution run's timings, or a plan or trace
// read back from pschedd by name only. Plain value type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model/split.h"

namespace psched::timeline {

struct SubtaskSpan {
  std::string op = "";    // op name: the label of the bar or event
  int op_id = -1;         // -1: unknown
  std::string kind = "";  // op kind name ("conv2d"); empty: unknown
  int device = 0;         // index into the writer's device names
  model::SplitAxis axis = model::SplitAxis::kNone;
  int64_t begin = 0;  // [begin, end) of the op's work along axis
  int64_t end = 1;
  int64_t work = -1;  // the op's whole work along axis (model::WorkSize); -1: unknown
  double start_us = 0;
  double end_us = 0;
  // A measured subtask's planned times, when a plan ran.
  std::optional<double> predicted_start_us = std::nullopt;
  std::optional<double> predicted_end_us = std::nullopt;
  double device_us = -1;  // the device's own execution time; negative: it reports none
};

}  // namespace psched::timeline
