#include "executor/common/op_order.h"

namespace psched::executor {

OpOrder::OpOrder(int num_ops)
    : num_ops_(num_ops),
      bits_((static_cast<size_t>(num_ops) * static_cast<size_t>(num_ops) + 63) / 64, 0) {}

OpOrder OpOrder::Unordered(int num_ops) { return OpOrder(num_ops); }

OpOrder OpOrder::Sequential(int num_ops) {
  OpOrder order(num_ops);
  for (model::OpId a = 0; a < num_ops; ++a) {
    for (model::OpId b = a + 1; b < num_ops; ++b) order.Order(a, b);
  }
  return order;
}

void OpOrder::Order(model::OpId a, model::OpId b) {
  const size_t bit =
      static_cast<size_t>(a) * static_cast<size_t>(num_ops_) + static_cast<size_t>(b);
  bits_[bit / 64] |= uint64_t{1} << (bit % 64);
}

}  // namespace psched::executor
