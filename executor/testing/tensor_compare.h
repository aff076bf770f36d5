// Comparing computed tensors with expected ones in tests.
//
// Plain functions over flat float buffers; thread-safe.
#pragma once

#include <vector>

namespace psched::executor::testing {

// ||actual - expected|| / ||expected|| in double precision; infinity when the sizes differ.
double RelativeL2(const std::vector<float>& actual, const std::vector<float>& expected);

}  // namespace psched::executor::testing
