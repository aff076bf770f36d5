// 1-D convolution as a 2-D one of height 1: [1,C,L] is viewed as the image [1,C,1,L], the
// node is re-read as a Conv with 2-D attributes and weights [M,C/group,1,k], and the result
// [1,M,1,L'] is viewed back as [1,M,L']. The conv kernels, costs and schedulers see an
// ordinary conv2d.
#include <utility>

#include "model/onnx_importer.h"

namespace psched::model::onnx_importer {
namespace {

// The 2-D form of a 1-D window attribute: a leading 1 (kernel, strides, dilations) or zero
// padding above and below (pads [b,e] -> [0,b,0,e]).
void Widen(AttributeProto* attr) {
  if (attr->type() != AttributeProto::INTS) return;
  std::vector<int64_t> v(attr->ints().begin(), attr->ints().end());
  if (attr->name() == "pads" && v.size() == 2) {
    v = {0, v[0], 0, v[1]};
  } else if (attr->name() != "pads" && v.size() == 1) {
    v.insert(v.begin(), 1);
  } else {
    return;  // a malformed attribute: the 2-D reading reports it
  }
  attr->clear_ints();
  for (int64_t x : v) attr->add_ints(x);
}

}  // namespace

absl::Status Importer::ConvertConv1d(const NodeProto& node, const Value& x) {
  const std::vector<int64_t>& in = x.onnx_dims;  // [1,C,L]
  if (in[0] != 1) {
    return Unsupported(node,
                       absl::StrCat("1-D convolution needs batch 1, input is ", DimsString(in)));
  }
  auto w = ConstantInput(node, 1, false);
  if (!w.ok()) return w.status();
  if ((*w)->dims.size() != 3) {
    return NodeError(node, absl::StrCat("weight '", (*w)->name,
                                        "' of a 1-D convolution must be "
                                        "[M,C/group,k], got ",
                                        DimsString((*w)->dims)));
  }
  auto image = AddStep(node, "as_image", OpKind::kReshape, {x.tensor}, {1, in[1], 1, in[2]});
  if (!image.ok()) return image.status();
  NodeProto conv2d = node;
  conv2d.set_input(0, node.output(0) + "/conv1d_input");
  conv2d.set_input(1, node.output(0) + "/conv1d_weight");
  conv2d.set_output(0, node.output(0) + "/conv1d_output");
  for (AttributeProto& attr : *conv2d.mutable_attribute()) Widen(&attr);
  values_[conv2d.input(0)] = *image;
  ConstValue weight = **w;
  weight.dims.insert(weight.dims.begin() + 2, 1);
  Value wv;
  wv.constant = std::make_shared<const ConstValue>(std::move(weight));
  values_[conv2d.input(1)] = std::move(wv);
  if (absl::Status s = ConvertConv(conv2d); !s.ok()) return s;
  const Value out = values_.at(conv2d.output(0));
  return ReshapeRowMajor(node, out, {1, out.onnx_dims[1], out.onnx_dims[3]});
}

}  // namespace psched::model::onnx_importer
