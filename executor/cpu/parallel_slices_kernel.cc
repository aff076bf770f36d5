#include "executor/cpu/parallel_slices_kernel.h"

#include <pthreadpool.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor/cpu/cpu_threadpool.h"
#include "model/op_cost.h"
#include "model/split.h"

namespace psched::executor::cpu::internal {
namespace {

// Output channels are cut at multiples of this: oneDNN's AVX-512 kernels block channels by 16.
constexpr int64_t kChannelBlock = 16;

// [begin, end) cut into `parts` nearly equal ranges whose inner cuts are multiples of `align`
// (fewer parts when the range is too short).
std::vector<WorkSlice> Cut(model::SplitAxis axis, int64_t begin, int64_t end, int parts,
                           int64_t align) {
  std::vector<WorkSlice> out;
  const int64_t units = (end - begin + align - 1) / align;
  const int64_t n = std::min<int64_t>(parts, units);
  int64_t at = begin;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t next = k + 1 == n ? end : begin + (units * (k + 1) / n) * align;
    out.push_back({axis, at, next});
    at = next;
  }
  return out;
}

class ParallelSlicesKernel final : public CpuKernel {
 public:
  ParallelSlicesKernel(std::vector<WorkSlice> slices, std::vector<std::unique_ptr<CpuKernel>> parts,
                       pthreadpool_t threadpool)
      : slices_(std::move(slices)),
        parts_(std::move(parts)),
        statuses_(parts_.size()),
        threadpool_(threadpool) {
    library_ = absl::StrCat(std::string(parts_[0]->library()), " x", parts_.size());
  }

  absl::Status Setup(std::span<const TensorView> inputs, const TensorView& output) override {
    for (const std::unique_ptr<CpuKernel>& part : parts_) {
      if (absl::Status s = part->Setup(inputs, output); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status Run() override {
    return RunThen([](const WorkSlice&) {});
  }

  absl::Status RunThen(absl::FunctionRef<void(const WorkSlice& written)> written) override {
    ParallelFor(threadpool_, parts_.size(), [&](size_t i) {
      statuses_[i] = parts_[i]->Run();
      if (statuses_[i].ok()) written(slices_[i]);
    });
    for (const absl::Status& s : statuses_) {
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  std::string_view library() const override { return library_; }

 private:
  std::vector<WorkSlice> slices_;  // what parts_[i] computes
  std::vector<std::unique_ptr<CpuKernel>> parts_;
  std::vector<absl::Status> statuses_;  // each written by its own part's thread
  pthreadpool_t threadpool_;
  std::string library_;
};

}  // namespace

std::vector<WorkSlice> PartsForThreads(const model::Graph& graph, model::OpId id, WorkSlice slice,
                                       int threads, double min_flops_per_part) {
  using model::SplitAxis;
  const int64_t work = slice.axis == SplitAxis::kNone ? 1 : model::WorkSize(graph, id, slice.axis);
  const double flops = static_cast<double>(model::OpFlops(graph, id)) *
                       static_cast<double>(slice.end - slice.begin) / static_cast<double>(work);
  threads = std::min<int>(threads, static_cast<int>(flops / min_flops_per_part));
  // Parts of a cin slice would add into the same output at once.
  if (threads < 2 || slice.axis == SplitAxis::kInputChannels) return {slice};
  if (slice.axis == SplitAxis::kRows)
    return Cut(SplitAxis::kRows, slice.begin, slice.end, threads, 1);
  if (slice.axis == SplitAxis::kOutputChannels) {
    return Cut(SplitAxis::kOutputChannels, slice.begin, slice.end, threads, kChannelBlock);
  }
  // Each part reads the operand the cut does not divide in full: rows share the filter, output
  // channels share the input. Cut so that the shared one is the smaller (weight-heavy convs
  // late in a network by channels, early ones by rows).
  const int64_t rows = model::WorkSize(graph, id, SplitAxis::kRows);
  const int64_t channels = model::WorkSize(graph, id, SplitAxis::kOutputChannels);
  const auto& conv = std::get<model::ConvAttrs>(graph.op(id).attrs);
  int64_t filter = 1;
  for (int64_t d : graph.constants[static_cast<size_t>(conv.filter)].dims) filter *= d;
  const int64_t input = graph.tensor(graph.ActivationInputs(id)[0]).shape.Elements();
  const bool by_channels_possible = channels >= 2 * kChannelBlock;
  const bool by_rows_possible = rows >= 2 * threads;
  if (by_channels_possible && (filter > input || !by_rows_possible)) {
    return Cut(SplitAxis::kOutputChannels, 0, channels, threads, kChannelBlock);
  }
  if (by_rows_possible) return Cut(SplitAxis::kRows, 0, rows, threads, 1);
  return {slice};
}

absl::StatusOr<std::unique_ptr<CpuKernel>> CreateParallelSlicesKernel(
    const model::Graph& graph, model::OpId id, WorkSlice slice, pthreadpool_t threadpool,
    const PartFactory& make_part) {
  const int threads = static_cast<int>(pthreadpool_get_threads_count(threadpool));
  std::vector<WorkSlice> slices = PartsForThreads(graph, id, slice, threads);
  std::vector<std::unique_ptr<CpuKernel>> parts;
  for (const WorkSlice& part : slices) {
    absl::StatusOr<std::unique_ptr<CpuKernel>> kernel = make_part(part);
    if (!kernel.ok()) return kernel.status();
    parts.push_back(*std::move(kernel));
  }
  if (parts.size() == 1) return std::move(parts[0]);
  return std::unique_ptr<CpuKernel>(
      new ParallelSlicesKernel(std::move(slices), std::move(parts), threadpool));
}

}  // namespace psched::executor::cpu::internal
