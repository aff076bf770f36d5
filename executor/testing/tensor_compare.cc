#include "executor/testing/tensor_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace psched::executor::testing {

double RelativeL2(const std::vector<float>& actual, const std::vector<float>& expected) {
  if (actual.size() != expected.size()) return std::numeric_limits<double>::infinity();
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double d = double{actual[i]} - expected[i];
    diff += d * d;
    norm += double{expected[i]} * expected[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

}  // namespace psched::executor::testing
