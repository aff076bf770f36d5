// The op order a co-execution plan guarantees: what the runtime's arena may rely on.
//
// CoExecutionRuntime runs each device's steps in queue order, and a step starts only after every
// step of each predecessor op has finished (through that op's counter, or the queue order when
// they all ran on the same device). Those two kinds of edges make a DAG over the plan's steps;
// op `a` is Before op `b` exactly when every step of `a` reaches every step of `b` in it - then
// no run, however its devices' speeds vary, has `a` and `b` touch the arena at the same time, and
// tensors only they touch may share memory (executor/common/arena_plan.h). For a plan that runs
// every op whole in op order on one device this is OpOrder::Sequential. Plain function;
// thread-safe.
#pragma once

#include "executor/common/op_order.h"
#include "executor/runtime/execution_plan.h"
#include "model/graph.h"

namespace psched::executor::runtime {

// REQUIRES: ValidateExecutionPlan(graph, plan, ...) is OK.
OpOrder PlanOrder(const model::Graph& graph, const ExecutionPlan& plan);

}  // namespace psched::executor::runtime
