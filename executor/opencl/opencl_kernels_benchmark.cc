// Throughput of the OpenCL conv kernel against XNNPACK on the same core, the cost of each split
// kind (what a split adds beyond its share of the work), the sync dispatch overhead, and the
// OpenCL matmul against the CPU executor's at a ViT-B/16 shape, and the element-wise, transpose
// and transposed-convolution kernels against the CPU kernels of the same ops.
//
//   POCL_MAX_PTHREAD_COUNT=1 psched_opencl_benchmark [--benchmark_filter=...]
//
// Runs on PSCHED_OPENCL_DEVICE (DeviceSelector text) or device 0. Wall-clock numbers belong in
// reports as ratios, never in unit tests.
#include <benchmark/benchmark.h>
#include <xnnpack.h>

#include <cstdlib>
#include <limits>
#include <memory>
#include <vector>

#include "executor/cpu/cpu_graph_executor.h"
#include "executor/cpu/cpu_kernel.h"
#include "executor/opencl/opencl_kernels.h"
#include "executor/opencl/sync_kernels.h"
#include "executor/testing/graph_builder.h"

namespace psched::executor::opencl {
namespace {

constexpr int64_t kH = 56, kW = 56, kC = 64;
constexpr double kConvFlops = 2.0 * kH * kW * kC * kC * 9;

model::Graph ConvGraph() {
  executor::testing::GraphBuilder b("conv3x3_56x56x64");
  model::TensorId x = b.AddInput({kH, kW, kC});
  model::ConvAttrs attrs;
  attrs.window = {3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  attrs.filter = b.AddConstant({kC, 3, 3, kC}, executor::testing::RandomVector(kC * 9 * kC, 1));
  attrs.bias = b.AddConstant({kC}, executor::testing::RandomVector(kC, 2));
  model::Activation relu;
  relu.kind = model::ActivationKind::kRelu;
  b.MarkOutput(b.AddOp(model::OpKind::kConv2d, {x}, {kH, kW, kC}, attrs, relu));
  return b.Build();
}

struct Setup {
  std::unique_ptr<OpenClDevice> device;
  model::Graph graph;
  std::unique_ptr<SvmArena> arena;
  std::unique_ptr<KernelFactory> factory;
};

Setup* Shared() {
  static Setup* setup = [] {
    auto* s = new Setup;
    const char* env = std::getenv("PSCHED_OPENCL_DEVICE");
    absl::StatusOr<DeviceSelector> selector = DeviceSelector::Parse(env != nullptr ? env : "0");
    if (!selector.ok()) return s;
    absl::StatusOr<std::unique_ptr<OpenClDevice>> device = OpenClDevice::Open(*selector);
    if (!device.ok()) return s;
    s->device = std::move(*device);
    s->graph = ConvGraph();
    const size_t elements = static_cast<size_t>(kH * kW * kC);
    s->arena = std::move(*SvmArena::Create(s->device.get(), 2 * elements));
    std::vector<float> input = executor::testing::RandomVector(elements, 3);
    (void)s->arena->Write(0, input);
    s->factory = std::move(*KernelFactory::Create(s->device.get(), &s->graph, s->arena.get(),
                                                  {0, static_cast<int64_t>(elements)}));
    return s;
  }();
  return setup;
}

// Enqueues `kernels` once per iteration and waits; reports GFLOP/s of the whole conv.
void RunKernels(benchmark::State& state, const std::vector<std::unique_ptr<OpKernel>>& kernels) {
  Setup* s = Shared();
  // The first launch of a kernel JIT-compiles its work-group function on PoCL; keep that out.
  for (const auto& k : kernels) (void)k->Enqueue();
  (void)s->device->Finish();
  for (auto _ : state) {
    for (const auto& k : kernels) {
      if (!k->Enqueue().ok()) state.SkipWithError("enqueue failed");
    }
    if (!s->device->Finish().ok()) state.SkipWithError("finish failed");
  }
  state.counters["GFLOPs"] = benchmark::Counter(
      kConvFlops * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
}

void BM_OpenClConv(benchmark::State& state) {
  Setup* s = Shared();
  if (s->factory == nullptr) return state.SkipWithError("no OpenCL device");
  std::vector<std::unique_ptr<OpKernel>> kernels;
  kernels.push_back(std::move(*s->factory->Create(0)));
  RunKernels(state, kernels);
}

// The whole conv as `parts` slices along `axis` on the one queue: the extra time over
// BM_OpenClConv is what the split itself costs (dispatches, halo reads, partial-sum combining).
void SplitConv(benchmark::State& state, model::SplitAxis axis, bool atomic) {
  Setup* s = Shared();
  if (s->factory == nullptr) return state.SkipWithError("no OpenCL device");
  const int parts = static_cast<int>(state.range(0));
  const int64_t work = model::WorkSize(s->graph, 0, axis);
  std::vector<std::unique_ptr<OpKernel>> kernels;
  if (axis == model::SplitAxis::kInputChannels) {
    kernels.push_back(std::move(*s->factory->CreateZeroFill(0)));
  }
  for (int p = 0; p < parts; ++p) {
    kernels.push_back(std::move(*s->factory->Create(
        0, {axis, work * p / parts, work * (p + 1) / parts}, KernelOptions{atomic})));
  }
  if (axis == model::SplitAxis::kInputChannels) {
    kernels.push_back(std::move(*s->factory->CreateActivationEpilogue(0)));
  }
  RunKernels(state, kernels);
}

void BM_OpenClConvCout(benchmark::State& state) {
  SplitConv(state, model::SplitAxis::kOutputChannels, true);
}
void BM_OpenClConvRows(benchmark::State& state) { SplitConv(state, model::SplitAxis::kRows, true); }
void BM_OpenClConvCinAtomic(benchmark::State& state) {
  SplitConv(state, model::SplitAxis::kInputChannels, true);
}
void BM_OpenClConvCinPlain(benchmark::State& state) {
  SplitConv(state, model::SplitAxis::kInputChannels, false);
}

// The partial-sum combining cost on its own: a 1x1 conv 56x56x8->64 is almost all output
// traffic, so running it as one input-channel slice (zero fill + accumulate + activation
// epilogue) instead of whole shows what combining adds per output element.
// Arg 0: whole op (plain stores); 1: one cin slice, CAS adds; 2: one cin slice, plain adds.
void BM_OpenClCombineCost(benchmark::State& state) {
  Setup* s = Shared();
  if (s->device == nullptr) return state.SkipWithError("no OpenCL device");
  constexpr int64_t kCin = 8;
  static model::Graph* graph = [] {
    executor::testing::GraphBuilder b("conv1x1_56x56x8");
    model::TensorId x = b.AddInput({kH, kW, kCin});
    model::ConvAttrs attrs;
    attrs.filter =
        b.AddConstant({kC, 1, 1, kCin}, executor::testing::RandomVector(kC * kCin, 4));
    model::Activation relu;
    relu.kind = model::ActivationKind::kRelu;
    b.MarkOutput(b.AddOp(model::OpKind::kConv2d, {x}, {kH, kW, kC}, attrs, relu));
    return new model::Graph(b.Build());
  }();
  static std::unique_ptr<SvmArena> arena =
      std::move(*SvmArena::Create(s->device.get(), kH * kW * (kCin + kC)));
  absl::StatusOr<std::unique_ptr<KernelFactory>> factory =
      KernelFactory::Create(s->device.get(), graph, arena.get(), {0, kH * kW * kCin});
  if (!factory.ok()) return state.SkipWithError("factory failed");
  std::vector<std::unique_ptr<OpKernel>> kernels;
  if (state.range(0) == 0) {
    kernels.push_back(std::move(*(*factory)->Create(0)));
  } else {
    kernels.push_back(std::move(*(*factory)->CreateZeroFill(0)));
    kernels.push_back(std::move(*(*factory)->Create(
        0, {model::SplitAxis::kInputChannels, 0, kCin}, KernelOptions{state.range(0) == 1})));
    kernels.push_back(std::move(*(*factory)->CreateActivationEpilogue(0)));
  }
  for (const auto& k : kernels) (void)k->Enqueue();
  (void)s->device->Finish();
  for (auto _ : state) {
    for (const auto& k : kernels) {
      if (!k->Enqueue().ok()) state.SkipWithError("enqueue failed");
    }
    if (!s->device->Finish().ok()) state.SkipWithError("finish failed");
  }
  state.counters["ns_per_output"] = benchmark::Counter(
      static_cast<double>(kH * kW * kC) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_XnnpackConv(benchmark::State& state) {
  if (xnn_initialize(nullptr) != xnn_status_success) {
    return state.SkipWithError("xnn_initialize failed");
  }
  const model::Graph graph = ConvGraph();
  std::vector<float> input = executor::testing::RandomVector(kH * kW * kC, 3);
  std::vector<float> output(kH * kW * kC);
  xnn_operator_t op = nullptr;
  // Filter OHWI is XNNPACK's layout for groups == 1.
  if (xnn_create_convolution2d_nhwc_f32(1, 1, 1, 1, 3, 3, 1, 1, 1, 1, 1, kC, kC, kC, kC,
                                        graph.constants[0].data.data(),
                                        graph.constants[1].data.data(), 0.0f,
                                        std::numeric_limits<float>::infinity(), 0,
                                        &op) != xnn_status_success ||
      xnn_setup_convolution2d_nhwc_f32(op, 1, kH, kW, input.data(), output.data(), nullptr) !=
          xnn_status_success) {
    return state.SkipWithError("XNNPACK convolution setup failed");
  }
  for (auto _ : state) {
    if (xnn_run_operator(op, nullptr) != xnn_status_success) state.SkipWithError("run failed");
    benchmark::DoNotOptimize(output.data());
  }
  xnn_delete_operator(op);
  state.counters["GFLOPs"] = benchmark::Counter(
      kConvFlops * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
}

void BM_SyncDispatchOverhead(benchmark::State& state) {
  Setup* s = Shared();
  if (s->device == nullptr) return state.SkipWithError("no OpenCL device");
  double us = 0.0;
  for (auto _ : state) {
    absl::StatusOr<double> measured = MeasureDispatchOverheadUs(s->device.get(), 200);
    if (!measured.ok()) return state.SkipWithError("measurement failed");
    us = *measured;
  }
  state.counters["overhead_us"] = us;
}

// ViT-B/16 token x feature product: [197, 768] x [768, 768], both operands activations.
constexpr int64_t kTokens = 197, kDim = 768;
constexpr double kMatMulFlops = 2.0 * kTokens * kDim * kDim;

model::Graph MatMulGraph() {
  executor::testing::GraphBuilder b("matmul_vit_b16");
  const std::vector<std::vector<int64_t>> dims{{kTokens, kDim}, {kDim, kDim}, {kTokens, kDim}};
  model::TensorId x = b.AddInput(model::ViewOf(dims[0], false));
  model::TensorId w = b.AddInput(model::ViewOf(dims[1], false));
  b.MarkOutput(b.AddOp(model::OpKind::kMatMul, {x, w}, model::ViewOf(dims[2], false)));
  model::Graph g = b.Build();
  for (size_t t = 0; t < dims.size(); ++t) {
    g.tensors[t].dims = dims[t];
    g.tensors[t].channels_last = false;
    g.tensors[t].onnx_rank = 2;
  }
  return g;
}

void BM_OpenClMatMulVit(benchmark::State& state) {
  Setup* s = Shared();
  if (s->device == nullptr) return state.SkipWithError("no OpenCL device");
  const model::Graph graph = MatMulGraph();
  const int64_t a = kTokens * kDim, b = kDim * kDim;
  auto arena = SvmArena::Create(s->device.get(), static_cast<size_t>(2 * a + b));
  if (!arena.ok()) return state.SkipWithError("arena failed");
  (void)(*arena)->Write(0, executor::testing::RandomVector(static_cast<size_t>(a + b), 4));
  auto factory = KernelFactory::Create(s->device.get(), &graph, arena->get(), {0, a, a + b});
  if (!factory.ok()) return state.SkipWithError("factory failed");
  auto kernel = (*factory)->Create(0);
  if (!kernel.ok()) return state.SkipWithError("kernel failed");
  (void)(*kernel)->Enqueue();
  (void)s->device->Finish();
  for (auto _ : state) {
    if (!(*kernel)->Enqueue().ok()) state.SkipWithError("enqueue failed");
    if (!s->device->Finish().ok()) state.SkipWithError("finish failed");
  }
  state.counters["GFLOPs"] = benchmark::Counter(
      kMatMulFlops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

// The CPU executor's matmul kernel (oneDNN where built) on one thread; the run includes
// copying the operands in and the product out.
void BM_CpuMatMulVit(benchmark::State& state) {
  const model::Graph graph = MatMulGraph();
  auto cpu = cpu::CpuGraphExecutor::Create(graph, {.cores = {0}, .threads = 1});
  if (!cpu.ok()) return state.SkipWithError("CPU executor failed");
  const std::vector<std::vector<float>> inputs{
      executor::testing::RandomVector(static_cast<size_t>(kTokens * kDim), 4),
      executor::testing::RandomVector(static_cast<size_t>(kDim * kDim), 5)};
  for (auto _ : state) {
    auto out = (*cpu)->Run(inputs);
    if (!out.ok()) state.SkipWithError("run failed");
    benchmark::DoNotOptimize(out);
  }
  state.counters["GFLOPs"] = benchmark::Counter(
      kMatMulFlops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

// One op at a ViT-B/16 shape (0-3) or a UNet upsampling (4), as its own graph: the residual
// add, GELU over the MLP's hidden rows, the head-split transpose, K's last-two-axes swap for
// Q.K^T, and a stride-2 ConvTranspose 28x28x64 -> 56x56x32.
model::Graph SingleOpGraph(int which) {
  executor::testing::GraphBuilder b("single_op");
  if (which == 4) {
    model::TensorId x = b.AddInput({28, 28, 64});
    model::ConvAttrs conv;
    conv.window = {3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
    conv.output_padding_h = conv.output_padding_w = 1;
    conv.filter = b.AddConstant({32, 3, 3, 64},
                                executor::testing::RandomVector(32 * 9 * 64, 3, -0.1f, 0.1f));
    conv.bias = b.AddConstant({32}, executor::testing::RandomVector(32, 4));
    b.MarkOutput(b.AddOp(model::OpKind::kConvTranspose2d, {x}, {56, 56, 32}, conv,
                         {.kind = model::ActivationKind::kRelu}));
    return b.Build();
  }
  std::vector<std::vector<int64_t>> dims;
  model::OpKind kind = model::OpKind::kAdd;
  model::OpAttrs attrs;
  model::Activation act;
  switch (which) {
    case 0: dims = {{kTokens, kDim}, {kTokens, kDim}, {kTokens, kDim}}; break;
    case 1:
      kind = model::OpKind::kActivation;
      dims = {{kTokens, 4 * kDim}, {kTokens, 4 * kDim}};
      act.kind = model::ActivationKind::kGelu;
      break;
    case 2:
      kind = model::OpKind::kTranspose;
      dims = {{kTokens, 12, 64}, {12, kTokens, 64}};
      attrs = model::TransposeAttrs{{kTokens, 12, 64}, {1, 0, 2}};
      break;
    default:
      kind = model::OpKind::kTranspose;
      dims = {{12, kTokens, 64}, {12, 64, kTokens}};
      attrs = model::TransposeAttrs{{12, kTokens, 64}, {0, 2, 1}};
      break;
  }
  std::vector<model::TensorId> inputs;
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    inputs.push_back(b.AddInput(model::ViewOf(dims[i], false)));
  }
  b.MarkOutput(b.AddOp(kind, inputs, model::ViewOf(dims.back(), false), attrs, act));
  model::Graph g = b.Build();
  for (size_t t = 0; t < dims.size(); ++t) {
    g.tensors[t].dims = dims[t];
    g.tensors[t].channels_last = false;
    g.tensors[t].onnx_rank = static_cast<int32_t>(dims[t].size());
  }
  return g;
}

// Dense arena offsets of a single-op graph's activation tensors; the total in `size`.
std::vector<int64_t> DenseOffsets(const model::Graph& g, int64_t& size) {
  std::vector<int64_t> offsets;
  size = 0;
  for (const model::Tensor& t : g.tensors) {
    offsets.push_back(t.constant == model::kInvalidId ? size : -1);
    if (t.constant == model::kInvalidId) size += t.shape.Elements();
  }
  return offsets;
}

void BM_OpenClSingleOp(benchmark::State& state) {
  Setup* s = Shared();
  if (s->device == nullptr) return state.SkipWithError("no OpenCL device");
  const model::Graph graph = SingleOpGraph(static_cast<int>(state.range(0)));
  int64_t size = 0;
  const std::vector<int64_t> offsets = DenseOffsets(graph, size);
  auto arena = SvmArena::Create(s->device.get(), static_cast<size_t>(size));
  if (!arena.ok()) return state.SkipWithError("arena failed");
  (void)(*arena)->Write(0, executor::testing::RandomVector(static_cast<size_t>(size), 4));
  auto factory = KernelFactory::Create(s->device.get(), &graph, arena->get(), offsets);
  if (!factory.ok()) return state.SkipWithError("factory failed");
  auto kernel = (*factory)->Create(static_cast<model::OpId>(graph.ops.size()) - 1);
  if (!kernel.ok()) return state.SkipWithError("kernel failed");
  (void)(*kernel)->Enqueue();
  (void)s->device->Finish();
  for (auto _ : state) {
    if (!(*kernel)->Enqueue().ok()) state.SkipWithError("enqueue failed");
    if (!s->device->Finish().ok()) state.SkipWithError("finish failed");
  }
}

// The CPU kernel of the same op on the calling thread, over dense buffers.
void BM_CpuSingleOp(benchmark::State& state) {
  const model::Graph graph = SingleOpGraph(static_cast<int>(state.range(0)));
  const model::OpId id = static_cast<model::OpId>(graph.ops.size()) - 1;
  auto kernel = cpu::CreateCpuKernel(graph, id, WorkSlice::Whole(), {}, nullptr);
  if (!kernel.ok()) return state.SkipWithError("CPU kernel failed");
  std::vector<std::vector<float>> buffers;
  std::vector<TensorView> inputs;
  for (model::TensorId t : graph.ActivationInputs(id)) {
    const model::Shape& shape = graph.tensor(t).shape;
    buffers.push_back(
        executor::testing::RandomVector(static_cast<size_t>(shape.Elements() + 16), 5));
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    const model::Shape& shape = graph.tensor(graph.ActivationInputs(id)[i]).shape;
    inputs.push_back({buffers[i].data(), shape, shape.c});
  }
  const model::Shape& out_shape = graph.output_shape(id);
  std::vector<float> out(static_cast<size_t>(out_shape.Elements() + 16));
  if (!(*kernel)->Setup(inputs, {out.data(), out_shape, out_shape.c}).ok()) {
    return state.SkipWithError("CPU setup failed");
  }
  for (auto _ : state) {
    if (!(*kernel)->Run().ok()) state.SkipWithError("run failed");
    benchmark::DoNotOptimize(out.data());
  }
}

BENCHMARK(BM_XnnpackConv)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OpenClConv)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OpenClConvCout)->Arg(2)->Arg(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OpenClConvRows)->Arg(2)->Arg(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OpenClConvCinAtomic)->Arg(2)->Arg(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OpenClConvCinPlain)->Arg(2)->Arg(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OpenClCombineCost)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_CpuMatMulVit)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OpenClMatMulVit)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpuSingleOp)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_OpenClSingleOp)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_SyncDispatchOverhead)->Iterations(5)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace psched::executor::opencl

int main(int argc, char** argv) {
  setenv("POCL_MAX_PTHREAD_COUNT", "1", /*overwrite=*/0);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
