#include "executor/cpu/conv_slice.h"

#include <algorithm>

namespace psched::executor::cpu::internal {

void BuildConvSlice(const model::Graph& graph, model::OpId id, WorkSlice slice, ConvSlice& s) {
  const model::Op& op = graph.op(id);
  const auto& conv = std::get<model::ConvAttrs>(op.attrs);
  const model::Shape& in = graph.tensor(graph.ActivationInputs(id)[0]).shape;
  const model::Shape& out = graph.output_shape(id);
  model::Window2d& w = s.window;
  w = conv.window;
  const int64_t groups = conv.groups;
  const int64_t cin_g = in.c / groups;
  const int64_t cout_g = out.c / groups;
  const int64_t taps = int64_t{w.kernel_h} * w.kernel_w;
  s.filter = graph.constants[static_cast<size_t>(conv.filter)].data.data();
  s.bias = conv.bias == model::kInvalidId
               ? nullptr
               : graph.constants[static_cast<size_t>(conv.bias)].data.data();
  s.groups = groups;
  s.group_in = cin_g;
  s.group_out = cout_g;
  s.in_row_begin = 0;
  s.in_rows = in.h;
  s.in_channel_offset = 0;
  s.out_row_begin = 0;
  s.out_rows = out.h;
  s.out_channel_offset = 0;
  s.out_channels = out.c;
  switch (slice.axis) {
    case model::SplitAxis::kNone:
      break;
    case model::SplitAxis::kOutputChannels: {
      // WorkSize counts output channels for dense conv and whole groups otherwise.
      const int64_t unit = groups == 1 ? 1 : cout_g;
      s.groups = groups == 1 ? 1 : slice.end - slice.begin;
      s.group_out = groups == 1 ? slice.end - slice.begin : cout_g;
      s.filter += slice.begin * unit * taps * cin_g;
      if (s.bias != nullptr) s.bias += slice.begin * unit;
      s.in_channel_offset = groups == 1 ? 0 : slice.begin * cin_g;
      s.out_channel_offset = slice.begin * unit;
      s.out_channels = (slice.end - slice.begin) * unit;
      break;
    }
    case model::SplitAxis::kRows: {
      // Output rows [begin, end) read input rows [first, last); rows outside the input
      // become this slice's own padding.
      const int64_t first = slice.begin * w.stride_h - w.pad_top;
      const int64_t last =
          (slice.end - 1) * w.stride_h - w.pad_top + int64_t{w.dilation_h} * (w.kernel_h - 1) + 1;
      w.pad_top = static_cast<int32_t>(std::max<int64_t>(0, -first));
      w.pad_bottom = static_cast<int32_t>(std::max<int64_t>(0, last - in.h));
      s.in_row_begin = std::max<int64_t>(0, first);
      s.in_rows = std::min(last, in.h) - s.in_row_begin;
      s.out_row_begin = slice.begin;
      s.out_rows = slice.end - slice.begin;
      break;
    }
    case model::SplitAxis::kInputChannels: {
      s.group_in = slice.end - slice.begin;
      s.filter_storage.resize(static_cast<size_t>(out.c * taps * s.group_in));
      for (int64_t o = 0; o < out.c * taps; ++o) {
        std::copy_n(s.filter + o * in.c + slice.begin, s.group_in,
                    s.filter_storage.data() + o * s.group_in);
      }
      s.filter = s.filter_storage.data();
      if (slice.begin != 0) s.bias = nullptr;
      s.in_channel_offset = slice.begin;
      break;
    }
  }
}

}  // namespace psched::executor::cpu::internal
