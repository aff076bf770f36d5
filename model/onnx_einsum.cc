// Einsum of two operands as the ops the runtime already has: each operand is transposed to
// [batch, free, contracted] order and reshaped to one free and one contracted axis, one
// batched MatMul contracts them, and the result is reshaped and transposed to the equation's
// output. Attention written as einsum ("bhid,bhjd->bhij") becomes a transpose and a MatMul.
#include <algorithm>
#include <cctype>
#include <functional>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>

#include "model/onnx_importer.h"

namespace psched::model::onnx_importer {
namespace {

struct Equation {
  std::string a, b, out;
};

// "ab,bc->ac" (explicit) or "ab,bc" (implicit: the letters seen once, sorted).
bool ParseEquation(std::string text, Equation* eq) {
  text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
  const size_t arrow = text.find("->");
  const std::string lhs = text.substr(0, arrow);
  const size_t comma = lhs.find(',');
  if (comma == std::string::npos || lhs.find(',', comma + 1) != std::string::npos) return false;
  eq->a = lhs.substr(0, comma);
  eq->b = lhs.substr(comma + 1);
  if (arrow != std::string::npos) {
    eq->out = text.substr(arrow + 2);
  } else {
    for (char c = 'A'; c <= 'z'; ++c) {
      if (std::count(lhs.begin(), lhs.end(), c) == 1) eq->out += c;
    }
  }
  for (const std::string* s : {&eq->a, &eq->b, &eq->out}) {
    for (char c : *s) {
      if (!std::isalpha(static_cast<unsigned char>(c))) return false;
    }
    // A letter repeated within one term is a diagonal or a trace.
    for (char c : *s) {
      if (std::count(s->begin(), s->end(), c) != 1) return false;
    }
  }
  return true;
}

bool Has(const std::string& s, char c) { return s.find(c) != std::string::npos; }

int64_t Product(const std::vector<int64_t>& d) {
  return std::accumulate(d.begin(), d.end(), int64_t{1}, std::multiplies<>());
}

}  // namespace

absl::Status Importer::ConvertEinsum(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto text = AttrString(node, "equation", "");
  if (!text.ok()) return text.status();
  Equation eq;
  if (node.input_size() != 2 || !ParseEquation(*text, &eq)) {
    return Unsupported(node, absl::StrCat("Einsum '", *text,
                                          "': supported are two operands, letters only, no "
                                          "ellipsis, diagonal or trace"));
  }
  std::vector<Value> operands;
  for (int i = 0; i < 2; ++i) {
    auto v = ActivationInput(node, i);
    if (!v.ok()) return v.status();
    auto r = AsRowMajor(node, **v);
    if (!r.ok()) return r.status();
    operands.push_back(*r);
  }
  const std::string* terms[2] = {&eq.a, &eq.b};
  std::string batch, left, right, contracted;
  for (int i = 0; i < 2; ++i) {
    if (terms[i]->size() != operands[i].onnx_dims.size()) {
      return NodeError(node, absl::StrCat("Einsum '", *text, "': operand ", i, " has rank ",
                                          operands[i].onnx_dims.size(), ", the equation says ",
                                          terms[i]->size()));
    }
  }
  std::unordered_map<char, int64_t> size;
  for (int i = 0; i < 2; ++i) {
    for (size_t k = 0; k < terms[i]->size(); ++k) {
      const char c = (*terms[i])[k];
      const int64_t d = operands[i].onnx_dims[k];
      if (auto it = size.find(c); it != size.end() && it->second != d) {
        return NodeError(node, absl::StrCat("Einsum '", *text, "': '", std::string(1, c), "' is ",
                                            it->second, " and ", d));
      }
      size[c] = d;
    }
  }
  for (char c : eq.out) {
    if (!Has(eq.a, c) && !Has(eq.b, c)) {
      return NodeError(node, absl::StrCat("Einsum '", *text, "': output letter '",
                                          std::string(1, c), "' is in no operand"));
    }
  }
  for (char c : eq.a) {
    if (Has(eq.b, c)) {
      (Has(eq.out, c) ? batch : contracted) += c;
    } else if (Has(eq.out, c)) {
      left += c;
    } else {
      return Unsupported(node, absl::StrCat("Einsum '", *text, "': '", std::string(1, c),
                                            "' is summed within one operand"));
    }
  }
  for (char c : eq.b) {
    if (Has(eq.a, c)) continue;
    if (!Has(eq.out, c)) {
      return Unsupported(node, absl::StrCat("Einsum '", *text, "': '", std::string(1, c),
                                            "' is summed within one operand"));
    }
    right += c;
  }
  auto dims_of = [&](const std::string& letters) {
    std::vector<int64_t> d;
    for (char c : letters) d.push_back(size[c]);
    return d;
  };
  // Brings operand `i` to the letter order `want` and reshapes it to batch + {rows, cols}.
  auto prepare = [&](int i, const std::string& want, int64_t rows,
                     int64_t cols) -> absl::StatusOr<Value> {
    Value v = operands[static_cast<size_t>(i)];
    const std::string& have = *terms[i];
    if (have != want) {
      TransposeAttrs t;
      t.in_dims = v.onnx_dims;
      for (char c : want) t.perm.push_back(static_cast<int32_t>(have.find(c)));
      auto r = AddStep(node, absl::StrCat("einsum_t", i), OpKind::kTranspose, {v.tensor},
                       dims_of(want), t);
      if (!r.ok()) return r.status();
      v = *r;
    }
    std::vector<int64_t> target = dims_of(batch);
    target.push_back(rows);
    target.push_back(cols);
    if (target == v.onnx_dims) return v;
    return AddStep(node, absl::StrCat("einsum_r", i), OpKind::kReshape, {v.tensor}, target);
  };
  const int64_t m = Product(dims_of(left)), k = Product(dims_of(contracted)),
                n = Product(dims_of(right));
  auto lhs = prepare(0, batch + left + contracted, m, k);
  if (!lhs.ok()) return lhs.status();
  auto rhs = prepare(1, batch + contracted + right, k, n);
  if (!rhs.ok()) return rhs.status();
  std::vector<int64_t> mm_dims = dims_of(batch);
  mm_dims.push_back(m);
  mm_dims.push_back(n);
  auto product =
      AddStep(node, "einsum_matmul", OpKind::kMatMul, {lhs->tensor, rhs->tensor}, mm_dims);
  if (!product.ok()) return product.status();
  const std::string order = batch + left + right;
  Value result = *product;
  if (dims_of(order) != result.onnx_dims && order != eq.out) {
    auto r = AddStep(node, "einsum_split", OpKind::kReshape, {result.tensor}, dims_of(order));
    if (!r.ok()) return r.status();
    result = *r;
  }
  if (order == eq.out) return ReshapeRowMajor(node, result, dims_of(eq.out));
  std::vector<int64_t> perm;
  for (char c : eq.out) perm.push_back(static_cast<int64_t>(order.find(c)));
  return TransposeActivation(node, result, perm);
}

}  // namespace psched::model::onnx_importer
