// Seeded random scheduling instances for the exact solvers' proofs (tests and
// exact_proof_bench): DAGs over 3 heterogeneous devices with integer costs, optionally
// with partitionable tasks (split tables of a few work units) and several memory domains.
// Pure functions.
#pragma once

#include <cstdint>

#include "platform/platform.h"
#include "scheduler/problem.h"

namespace psched::scheduler::exact::testing {

struct RandomTaskGraphOptions {
  int tasks = 10;
  int devices = 3;
  // Each earlier task feeds a task with this probability (at most 3 inputs per task).
  double edge_probability = 0.3;
  // How many tasks (drawn at random) get split tables, with how many axes and units each.
  int partitionable = 0;
  int axes = 1;
  int max_units = 3;  // U drawn from [2, max_units]
  // Devices alternate between this many memory domains; edges then cost up to
  // max_transfer_us across domains.
  int domains = 1;
  int max_transfer_us = 0;
};

// A platform "random<devices>" whose device 0 is a GPU ("gpu", "cpu.l", "cpu.m", "cpu.3", ...).
platform::Platform RandomPlatform(const RandomTaskGraphOptions& options);

// Task costs: a base of 10..100 us times a per-device speed (GPU fastest, CPU clusters
// 2-5x slower) times +-30% noise, rounded to integers >= 1. A split subtask of u of U
// units costs a per-device overhead plus the whole cost scaled by u / U (rounded up).
TaskGraph RandomTaskGraph(const RandomTaskGraphOptions& options, uint64_t seed);

}  // namespace psched::scheduler::exact::testing
