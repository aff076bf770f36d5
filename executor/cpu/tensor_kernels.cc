// CPU kernels of the general tensor kinds: transpose, reshape, matmul between computed
// tensors, layer norm, reductions, slices and concat along any axis. They read and write
// contiguous row-major buffers (model::PhysicalDims); a fused activation runs as one pass
// after. MatMul runs on oneDNN where the build has it (its JIT GEMM is the fastest kept
// kernel for batched attention products), else on a blocked loop.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor/common/nd_index.h"
#include "executor/cpu/kernel_base.h"

#ifdef PSCHED_HAVE_ONEDNN
#include <dnnl.hpp>
#endif

namespace psched::executor::cpu::internal {
namespace {

using model::OpKind;

// Input data of each op input: the bound activation view, or the constant's values.
class TensorKernel : public KernelBase {
 public:
  TensorKernel(const model::Graph& graph, model::OpId id, const KernelLayout& layout)
      : KernelBase(graph, id, WorkSlice::Whole(), layout), op_(graph.op(id)) {
    for (model::TensorId t : op_.inputs) {
      const model::Tensor& tensor = graph.tensor(t);
      in_dims_.push_back(model::PhysicalDims(tensor));
      constants_.push_back(tensor.constant == model::kInvalidId
                               ? std::vector<float>{}
                               : graph.constants[static_cast<size_t>(tensor.constant)].data);
      is_constant_.push_back(tensor.constant != model::kInvalidId);
    }
    out_dims_ = model::PhysicalDims(graph.tensor(op_.output));
  }

  absl::Status Setup(std::span<const TensorView> inputs, const TensorView& output) override {
    if (auto s = BindViews(inputs, output); !s.ok()) return s;
    data_.clear();
    size_t next = 0;
    for (size_t i = 0; i < op_.inputs.size(); ++i) {
      data_.push_back(is_constant_[i] ? constants_[i].data() : inputs_[next++].data);
    }
    return Prepare();
  }

  absl::Status Run() override {
    Compute(output_.data);
    if (NeedsActivationPass(activation_)) ApplyActivationInPlace(activation_, output_);
    return absl::OkStatus();
  }

  std::string_view library() const override { return "psched"; }

 protected:
  virtual absl::Status Prepare() { return absl::OkStatus(); }
  virtual void Compute(float* y) = 0;

  model::Op op_;
  std::vector<std::vector<int64_t>> in_dims_;
  std::vector<int64_t> out_dims_;
  std::vector<std::vector<float>> constants_;
  std::vector<bool> is_constant_;
  std::vector<const float*> data_;
};

class TransposeKernel final : public TensorKernel {
 public:
  using TensorKernel::TensorKernel;

 private:
  void Compute(float* y) override {
    const auto& t = std::get<model::TransposeAttrs>(op_.attrs);
    const std::vector<int64_t> in_strides = RowMajorStrides(t.in_dims);
    std::vector<int64_t> dims, strides;
    for (int32_t p : t.perm) {
      dims.push_back(t.in_dims[static_cast<size_t>(p)]);
      strides.push_back(in_strides[static_cast<size_t>(p)]);
    }
    // The innermost output axis is copied in one strided loop.
    const int64_t inner = dims.back(), inner_stride = strides.back();
    dims.back() = 1;
    const float* x = data_[0];
    float* out = y;
    ForEachOffset(dims, strides, [&](int64_t o) {
      const float* src = x + o;
      for (int64_t i = 0; i < inner; ++i) out[i] = src[i * inner_stride];
      out += inner;
    });
  }
};

class CopyKernel final : public TensorKernel {
 public:
  using TensorKernel::TensorKernel;

 private:
  void Compute(float* y) override {
    std::memcpy(y, data_[0], static_cast<size_t>(model::ElementsOf(out_dims_)) * sizeof(float));
  }
};

class SliceKernel final : public TensorKernel {
 public:
  using TensorKernel::TensorKernel;

 private:
  void Compute(float* y) override {
    const auto& s = std::get<model::SliceAttrs>(op_.attrs);
    const std::vector<int64_t> in_strides = RowMajorStrides(in_dims_[0]);
    int64_t base = 0;
    std::vector<int64_t> dims = s.sizes, strides;
    for (size_t a = 0; a < in_strides.size(); ++a) {
      base += s.starts[a] * in_strides[a];
      strides.push_back(s.steps[a] * in_strides[a]);
    }
    const int64_t inner = dims.back(), inner_stride = strides.back();
    dims.back() = 1;
    const float* x = data_[0] + base;
    float* out = y;
    ForEachOffset(dims, strides, [&](int64_t o) {
      if (inner_stride == 1) {
        std::memcpy(out, x + o, static_cast<size_t>(inner) * sizeof(float));
      } else {
        for (int64_t i = 0; i < inner; ++i) out[i] = x[o + i * inner_stride];
      }
      out += inner;
    });
  }
};

class ConcatAxisKernel final : public TensorKernel {
 public:
  using TensorKernel::TensorKernel;

 private:
  void Compute(float* y) override {
    const auto axis = static_cast<size_t>(std::get<model::ConcatAttrs>(op_.attrs).axis);
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < axis; ++i) outer *= out_dims_[i];
    for (size_t i = axis + 1; i < out_dims_.size(); ++i) inner *= out_dims_[i];
    const int64_t out_row = out_dims_[axis] * inner;
    int64_t offset = 0;
    for (size_t t = 0; t < data_.size(); ++t) {
      const int64_t row = in_dims_[t][axis] * inner;
      for (int64_t o = 0; o < outer; ++o) {
        std::memcpy(y + o * out_row + offset, data_[t] + o * row,
                    static_cast<size_t>(row) * sizeof(float));
      }
      offset += row;
    }
  }
};

class LayerNormKernel final : public TensorKernel {
 public:
  LayerNormKernel(const model::Graph& graph, model::OpId id, const KernelLayout& layout)
      : TensorKernel(graph, id, layout) {
    const auto& ln = std::get<model::LayerNormAttrs>(op_.attrs);
    epsilon_ = ln.epsilon;
    scale_ = graph.constants[static_cast<size_t>(ln.scale)].data;
    bias_ = ln.bias == model::kInvalidId ? std::vector<float>(scale_.size(), 0.0f)
                                         : graph.constants[static_cast<size_t>(ln.bias)].data;
  }

 private:
  void Compute(float* y) override {
    const int64_t n = out_dims_.back();
    const int64_t rows = model::ElementsOf(out_dims_) / n;
    const float* x = data_[0];
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * n;
      float* dst = y + r * n;
      float sum = 0.0f;
      for (int64_t i = 0; i < n; ++i) sum += row[i];
      const float mean = sum / static_cast<float>(n);
      float sq = 0.0f;
      for (int64_t i = 0; i < n; ++i) {
        const float d = row[i] - mean;
        dst[i] = d;
        sq += d * d;
      }
      const float inv = 1.0f / std::sqrt(sq / static_cast<float>(n) + epsilon_);
      for (int64_t i = 0; i < n; ++i) dst[i] = dst[i] * inv * scale_[i] + bias_[i];
    }
  }

  float epsilon_ = 1e-5f;
  std::vector<float> scale_, bias_;
};

class ReduceKernel final : public TensorKernel {
 public:
  using TensorKernel::TensorKernel;

 private:
  void Compute(float* y) override {
    const auto& r = std::get<model::ReduceAttrs>(op_.attrs);
    std::vector<int64_t> kept = in_dims_[0];
    for (int32_t a : r.axes) kept[static_cast<size_t>(a)] = 1;
    const int64_t count = model::ElementsOf(kept);
    const bool max = r.reduce == model::ReduceKind::kMax;
    std::fill_n(y, count, max ? -std::numeric_limits<float>::infinity() : 0.0f);
    const std::vector<int64_t> strides = BroadcastStrides(kept, in_dims_[0]);
    const float* x = data_[0];
    ForEachOffset(in_dims_[0], strides, [&](int64_t o) {
      y[o] = max ? std::max(y[o], *x) : y[o] + *x;
      ++x;
    });
    if (r.reduce == model::ReduceKind::kMean) {
      const float scale =
          static_cast<float>(count) / static_cast<float>(model::ElementsOf(in_dims_[0]));
      for (int64_t i = 0; i < count; ++i) y[i] *= scale;
    }
  }
};

// C[b] = A[b] x B[b] over the output's batch dims, operands broadcast.
class MatMulKernel final : public TensorKernel {
 public:
  using TensorKernel::TensorKernel;

 private:
  absl::Status Prepare() override {
    const std::vector<int64_t>& a = in_dims_[0];
    const std::vector<int64_t>& b = in_dims_[1];
    m_ = a[a.size() - 2];
    k_ = a.back();
    n_ = b.back();
    const std::vector<int64_t> batch(out_dims_.begin(), out_dims_.end() - 2);
    a_offsets_.clear();
    b_offsets_.clear();
    ForEachOffset(batch, BroadcastStrides(std::vector<int64_t>(a.begin(), a.end() - 2), batch),
                  [&](int64_t o) { a_offsets_.push_back(o * m_ * k_); });
    ForEachOffset(batch, BroadcastStrides(std::vector<int64_t>(b.begin(), b.end() - 2), batch),
                  [&](int64_t o) { b_offsets_.push_back(o * k_ * n_); });
#ifdef PSCHED_HAVE_ONEDNN
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
    engine_ = engine;
    const dnnl::memory::desc a_md({m_, k_}, dt::f32, tag::ab);
    const dnnl::memory::desc b_md({k_, n_}, dt::f32, tag::ab);
    const dnnl::memory::desc c_md({m_, n_}, dt::f32, tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), *engine_);
    primitive_ = dnnl::matmul(pd);
    stream_ = dnnl::stream(*engine_);
    a_md_ = a_md;
    b_md_ = b_md;
    c_md_ = c_md;
#endif
    return absl::OkStatus();
  }

  void Compute(float* y) override {
    for (size_t i = 0; i < a_offsets_.size(); ++i) {
      const float* pa = data_[0] + a_offsets_[i];
      const float* pb = data_[1] + b_offsets_[i];
      float* pc = y + static_cast<int64_t>(i) * m_ * n_;
#ifdef PSCHED_HAVE_ONEDNN
      dnnl::memory am(a_md_, *engine_, const_cast<float*>(pa));
      dnnl::memory bm(b_md_, *engine_, const_cast<float*>(pb));
      dnnl::memory cm(c_md_, *engine_, pc);
      primitive_.execute(stream_, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
#else
      for (int64_t r = 0; r < m_; ++r) {
        float* row = pc + r * n_;
        std::fill_n(row, n_, 0.0f);
        for (int64_t j = 0; j < k_; ++j) {
          const float a = pa[r * k_ + j];
          const float* brow = pb + j * n_;
          for (int64_t c = 0; c < n_; ++c) row[c] += a * brow[c];
        }
      }
#endif
    }
#ifdef PSCHED_HAVE_ONEDNN
    stream_.wait();
#endif
  }

  int64_t m_ = 0, k_ = 0, n_ = 0;
  std::vector<int64_t> a_offsets_, b_offsets_;
#ifdef PSCHED_HAVE_ONEDNN
  dnnl::engine* engine_ = nullptr;
  dnnl::matmul primitive_;
  dnnl::stream stream_;
  dnnl::memory::desc a_md_, b_md_, c_md_;
#endif
};

}  // namespace

bool IsTensorKernelKind(const model::Op& op) {
  switch (op.kind) {
    case OpKind::kTranspose:
    case OpKind::kReshape:
    case OpKind::kMatMul:
    case OpKind::kLayerNorm:
    case OpKind::kReduce:
    case OpKind::kSlice:
      return true;
    case OpKind::kConcat: {
      const auto* attrs = std::get_if<model::ConcatAttrs>(&op.attrs);
      return attrs != nullptr && attrs->axis >= 0;
    }
    default:
      return false;
  }
}

absl::StatusOr<std::unique_ptr<CpuKernel>> CreateTensorKernel(const model::Graph& graph,
                                                              model::OpId id,
                                                              const KernelLayout& layout) {
  switch (graph.op(id).kind) {
    case OpKind::kTranspose:
      return std::unique_ptr<CpuKernel>(new TransposeKernel(graph, id, layout));
    case OpKind::kReshape:
      return std::unique_ptr<CpuKernel>(new CopyKernel(graph, id, layout));
    case OpKind::kMatMul:
      return std::unique_ptr<CpuKernel>(new MatMulKernel(graph, id, layout));
    case OpKind::kLayerNorm:
      return std::unique_ptr<CpuKernel>(new LayerNormKernel(graph, id, layout));
    case OpKind::kReduce:
      return std::unique_ptr<CpuKernel>(new ReduceKernel(graph, id, layout));
    case OpKind::kSlice:
      return std::unique_ptr<CpuKernel>(new SliceKernel(graph, id, layout));
    case OpKind::kConcat:
      return std::unique_ptr<CpuKernel>(new ConcatAxisKernel(graph, id, layout));
    default:
      return absl::UnimplementedError(
          absl::StrCat("op ", id, ": no CPU tensor kernel for ",
                       std::string(model::OpKindName(graph.op(id).kind))));
  }
}

}  // namespace psched::executor::cpu::internal
