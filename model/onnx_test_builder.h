// Test-only helper: builds small ONNX models in memory, so tests can state exactly the
// construct (or the defect) they exercise. Header-only; not part of psched_model.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace psched::model::testing {

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int64_t opset = 13) {
    model_.set_ir_version(7);
    auto* import = model_.add_opset_import();
    import->set_domain("");
    import->set_version(opset);
    model_.mutable_graph()->set_name("test_graph");
  }

  OnnxBuilder& Input(const std::string& name, const std::vector<int64_t>& dims,
                     int32_t elem_type = onnx::TensorProto::FLOAT) {
    SetValueInfo(model_.mutable_graph()->add_input(), name, dims, elem_type);
    return *this;
  }
  // A dimension given as -1 is left dynamic (dim_param "N").
  OnnxBuilder& Output(const std::string& name, const std::vector<int64_t>& dims = {}) {
    SetValueInfo(model_.mutable_graph()->add_output(), name, dims, onnx::TensorProto::FLOAT);
    return *this;
  }
  // Float initializer; `data` empty: stored as absent external data (graph-only).
  OnnxBuilder& Weight(const std::string& name, const std::vector<int64_t>& dims,
                      const std::vector<float>& data = {}) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    if (data.empty()) {
      t->set_data_location(onnx::TensorProto::EXTERNAL);
      auto* entry = t->add_external_data();
      entry->set_key("location");
      entry->set_value("absent.weights");
    } else {
      for (float v : data) t->add_float_data(v);
    }
    return *this;
  }
  OnnxBuilder& Ints(const std::string& name, const std::vector<int64_t>& values) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }
  onnx::NodeProto& Node(const std::string& op_type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    onnx::NodeProto* node = model_.mutable_graph()->add_node();
    node->set_op_type(op_type);
    node->set_name(name.empty() ? outputs.at(0) + "_node" : name);
    for (const auto& in : inputs) node->add_input(in);
    for (const auto& out : outputs) node->add_output(out);
    return *node;
  }

  static void AttrInt(onnx::NodeProto& node, const std::string& name, int64_t v) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void AttrInts(onnx::NodeProto& node, const std::string& name,
                       const std::vector<int64_t>& v) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void AttrFloat(onnx::NodeProto& node, const std::string& name, float v) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void AttrString(onnx::NodeProto& node, const std::string& name, const std::string& v) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  // A Constant node holding a 1-D tensor (int64 or float).
  OnnxBuilder& ConstInts(const std::string& output, const std::vector<int64_t>& values) {
    auto& node = Node("Constant", {}, {output});
    auto* a = node.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
    a->mutable_t()->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) a->mutable_t()->add_int64_data(v);
    return *this;
  }
  // A Constant node holding an int64 scalar (rank 0), like exported shape indices.
  OnnxBuilder& ConstScalar(const std::string& output, int64_t value) {
    auto& node = Node("Constant", {}, {output});
    auto* a = node.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
    a->mutable_t()->add_int64_data(value);
    return *this;
  }
  OnnxBuilder& ConstFloats(const std::string& output, const std::vector<int64_t>& dims,
                           const std::vector<float>& values) {
    auto& node = Node("Constant", {}, {output});
    auto* a = node.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) a->mutable_t()->add_dims(d);
    for (float v : values) a->mutable_t()->add_float_data(v);
    return *this;
  }

  onnx::ModelProto& model() { return model_; }
  std::string Bytes() const { return model_.SerializeAsString(); }

 private:
  static void SetValueInfo(onnx::ValueInfoProto* info, const std::string& name,
                           const std::vector<int64_t>& dims, int32_t elem_type) {
    info->set_name(name);
    auto* tensor_type = info->mutable_type()->mutable_tensor_type();
    tensor_type->set_elem_type(elem_type);
    if (dims.empty()) return;
    auto* shape = tensor_type->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d < 0) {
        dim->set_dim_param("N");
      } else {
        dim->set_dim_value(d);
      }
    }
  }

  onnx::ModelProto model_;
};

// Values 0, 1, 2, ... scaled by `step`: easy to trace through layout changes.
inline std::vector<float> Iota(int64_t n, float step = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i) * step;
  return v;
}

}  // namespace psched::model::testing
