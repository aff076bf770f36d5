// CPU kernels of the general tensor kinds: transpose, reshape, matmul between computed
// tensors, layer norm, reductions, slices and concat along any axis. They read and write
// contiguous row-major buffers (model::PhysicalDims); a fused activation runs as one pass
// after. MatMul runs on oneDNN where the build has it (its JIT GEMM is the fastest kept
// kernel for batched attention products), else on a blocked loop.
//
// Slices (model/split.h) are computed in place in the op's output: a layer norm's rows, a
// MatMul's rows of the flattened batch x M (a sequence of per-matrix row ranges), its output
// columns (strided GEMM operands), or a K range, whose partial sum goes to a buffer of its own
// and is then added into the output, which the runtime zeroes first (as for a conv cin slice).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
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
  TensorKernel(const model::Graph& graph, model::OpId id, const KernelLayout& layout,
               WorkSlice slice = WorkSlice::Whole())
      : KernelBase(graph, id, slice, layout), op_(graph.op(id)) {
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
    if (slice_.axis == model::SplitAxis::kInputChannels) {
      // Partial sum: the runtime applies the activation once every slice has added.
      AddContiguousInto(partial_.data(), output_);
      return absl::OkStatus();
    }
    if (NeedsActivationPass(activation_)) ApplyActivationInPlace(activation_, Written());
    return absl::OkStatus();
  }

  std::string_view library() const override { return "psched"; }

 protected:
  virtual absl::Status Prepare() { return absl::OkStatus(); }
  virtual void Compute(float* y) = 0;

  // The part of the output this kernel writes: rows [begin, end) of a row slice, the columns of
  // a column slice, else all of it.
  TensorView Written() const {
    const int64_t n = slice_.end - slice_.begin;
    switch (slice_.axis) {
      case model::SplitAxis::kRows:
        return TensorView{output_.pixel(slice_.begin, 0), {n, 1, output_shape_.c}, output_stride_};
      case model::SplitAxis::kOutputChannels:
        return TensorView{output_.data + slice_.begin, {output_shape_.h, 1, n}, output_stride_};
      default:
        return output_;
    }
  }

  std::vector<float> partial_;  // K slice: this slice's partial sum, dense
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
  LayerNormKernel(const model::Graph& graph, model::OpId id, const KernelLayout& layout,
                  WorkSlice slice)
      : TensorKernel(graph, id, layout, slice) {
    const auto& ln = std::get<model::LayerNormAttrs>(op_.attrs);
    epsilon_ = ln.epsilon;
    scale_ = graph.constants[static_cast<size_t>(ln.scale)].data;
    bias_ = ln.bias == model::kInvalidId ? std::vector<float>(scale_.size(), 0.0f)
                                         : graph.constants[static_cast<size_t>(ln.bias)].data;
  }

 private:
  void Compute(float* y) override {
    const int64_t n = out_dims_.back();
    const bool sliced = slice_.axis == model::SplitAxis::kRows;
    const int64_t first = sliced ? slice_.begin : 0;
    const int64_t last = sliced ? slice_.end : model::ElementsOf(out_dims_) / n;
    const float* x = data_[0];
    for (int64_t r = first; r < last; ++r) {
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

// C[b] = A[b] x B[b] over the output's batch dims, operands broadcast. A slice computes its
// part as GEMM pieces: rows [r0, r1) of one matrix with columns [n0, n1) over K range [k0, k1).
class MatMulKernel final : public TensorKernel {
 public:
  using TensorKernel::TensorKernel;

 private:
  struct Piece {
    int64_t batch = 0;  // index into a_offsets_ / b_offsets_
    int64_t row = 0;    // first row within the matrix
    int64_t rows = 0;
  };

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
    // The slice's extents: rows of batch x M, columns [n0_, n1_), reduction [k0_, k1_).
    const int64_t total_rows = static_cast<int64_t>(a_offsets_.size()) * m_;
    int64_t r0 = 0, r1 = total_rows;
    n0_ = 0, n1_ = n_, k0_ = 0, k1_ = k_;
    switch (slice_.axis) {
      case model::SplitAxis::kRows: r0 = slice_.begin, r1 = slice_.end; break;
      case model::SplitAxis::kOutputChannels: n0_ = slice_.begin, n1_ = slice_.end; break;
      case model::SplitAxis::kInputChannels: k0_ = slice_.begin, k1_ = slice_.end; break;
      default: break;
    }
    pieces_.clear();
    for (int64_t r = r0; r < r1;) {
      const int64_t b_index = r / m_, row = r % m_;
      const int64_t rows = std::min(m_ - row, r1 - r);
      pieces_.push_back({b_index, row, rows});
      r += rows;
    }
    if (slice_.axis == model::SplitAxis::kInputChannels) {
      partial_.assign(static_cast<size_t>(model::ElementsOf(out_dims_)), 0.0f);
    }
#ifdef PSCHED_HAVE_ONEDNN
    static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
    engine_ = engine;
    stream_ = dnnl::stream(*engine_);
    primitives_.clear();
    for (const Piece& p : pieces_) {
      if (primitives_.contains(p.rows)) continue;
      primitives_.emplace(p.rows, MakeGemm(p.rows));
    }
#endif
    return absl::OkStatus();
  }

  void Compute(float* y) override {
    // A K slice writes its partial sum densely; Run adds it into the output.
    float* c_base = partial_.empty() ? y : partial_.data();
    const int64_t kn = k1_ - k0_, nn = n1_ - n0_;
    for (const Piece& p : pieces_) {
      const float* pa = data_[0] + a_offsets_[static_cast<size_t>(p.batch)] + p.row * k_ + k0_;
      const float* pb = data_[1] + b_offsets_[static_cast<size_t>(p.batch)] + k0_ * n_ + n0_;
      float* pc = c_base + (p.batch * m_ + p.row) * n_ + n0_;
#ifdef PSCHED_HAVE_ONEDNN
      const Gemm& g = primitives_.at(p.rows);
      dnnl::memory am(g.a, *engine_, const_cast<float*>(pa));
      dnnl::memory bm(g.b, *engine_, const_cast<float*>(pb));
      dnnl::memory cm(g.c, *engine_, pc);
      g.primitive.execute(stream_,
                          {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
#else
      for (int64_t r = 0; r < p.rows; ++r) {
        float* row = pc + r * n_;
        std::fill_n(row, nn, 0.0f);
        for (int64_t j = 0; j < kn; ++j) {
          const float a = pa[r * k_ + j];
          const float* brow = pb + j * n_;
          for (int64_t c = 0; c < nn; ++c) row[c] += a * brow[c];
        }
      }
#endif
    }
#ifdef PSCHED_HAVE_ONEDNN
    stream_.wait();
#endif
  }

  int64_t m_ = 0, k_ = 0, n_ = 0;
  int64_t n0_ = 0, n1_ = 0, k0_ = 0, k1_ = 0;
  std::vector<int64_t> a_offsets_, b_offsets_;
  std::vector<Piece> pieces_;
#ifdef PSCHED_HAVE_ONEDNN
  // One GEMM per distinct piece height, on operands and result strided by the whole
  // matrices' row lengths (k_ for A; n_ for B and C).
  struct Gemm {
    dnnl::matmul primitive;
    dnnl::memory::desc a, b, c;
  };
  Gemm MakeGemm(int64_t rows) const {
    using dt = dnnl::memory::data_type;
    const int64_t kn = k1_ - k0_, nn = n1_ - n0_;
    Gemm g;
    g.a = dnnl::memory::desc({rows, kn}, dt::f32, dnnl::memory::dims{k_, 1});
    g.b = dnnl::memory::desc({kn, nn}, dt::f32, dnnl::memory::dims{n_, 1});
    g.c = dnnl::memory::desc({rows, nn}, dt::f32, dnnl::memory::dims{n_, 1});
    g.primitive = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(g.a, g.b, g.c),
                                                            *engine_));
    return g;
  }
  dnnl::engine* engine_ = nullptr;
  dnnl::stream stream_;
  std::map<int64_t, Gemm> primitives_;
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
                                                              model::OpId id, WorkSlice slice,
                                                              const KernelLayout& layout) {
  const OpKind kind = graph.op(id).kind;
  const bool sliceable = kind == OpKind::kMatMul ||
                         (kind == OpKind::kLayerNorm && slice.axis == model::SplitAxis::kRows);
  if (slice.axis != model::SplitAxis::kNone && !sliceable) {
    return absl::UnimplementedError(absl::StrCat(
        "op ", id, " '", graph.op(id).name, "': no sliced CPU kernel for ",
        std::string(model::OpKindName(kind)), " along ",
        std::string(model::SplitAxisName(slice.axis))));
  }
  switch (kind) {
    case OpKind::kTranspose:
      return std::unique_ptr<CpuKernel>(new TransposeKernel(graph, id, layout));
    case OpKind::kReshape:
      return std::unique_ptr<CpuKernel>(new CopyKernel(graph, id, layout));
    case OpKind::kMatMul:
      return std::unique_ptr<CpuKernel>(new MatMulKernel(graph, id, layout, slice));
    case OpKind::kLayerNorm:
      return std::unique_ptr<CpuKernel>(new LayerNormKernel(graph, id, layout, slice));
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
