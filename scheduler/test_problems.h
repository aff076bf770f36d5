// Small scheduling instances shared by the scheduler tests.
#pragma once

#include "scheduler/problem.h"

namespace psched::scheduler::testing {

// `n` devices named d0..d{n-1}; each in its own memory domain when `separate_domains`.
Platform MakePlatform(int n, bool separate_domains);

// The 10-task, 3-processor example of Topcuoglu, Hariri and Wu (2002, Fig. 2): tasks
// 1..10 become 0..9; every processor is its own memory domain, so an edge costs its
// communication cost exactly when its ends run on different processors.
Problem TopcuogluExample();

}  // namespace psched::scheduler::testing
