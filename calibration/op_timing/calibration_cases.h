// The op configurations a calibration run times, drawn from real models.
//
// BuildCases takes every op of the given graphs, keeps one op per distinct configuration
// (predictor::OpConfig), and adds partition slices of convs and fully-connected ops (cout,
// cin and spatial slices of a quarter, half and three quarters of the work, one of them in
// the middle of the rows so the halo is exercised) - a subtask is predicted as its own
// smaller op, so the fitted model must see small ones. Cases are grouped by category (1x1,
// 3x3, depthwise, strided and other convs, FC, pools, element-wise, concat, the rest),
// shuffled within a category with a fixed seed and interleaved round-robin, so any prefix
// of the list - what a time budget allows - covers every category.
//
// Beside the given graphs BuildCases takes the transformer shape graphs of
// transformer_shapes.h (CaseOptions::transformer_shapes), so the matmul, data-movement and
// normalisation families always have cases; their categories are "matmul", "data_movement"
// and "normalization".
//
// Priority models (the workloads that will be scheduled) come first: their ops claim the
// configurations they share with other models, each of their partitionable ops gets all
// three slice sizes on every axis, and their cases lead every category, so a short budget
// times the shapes that matter and the held-out errors describe them.
//
// A case owns a one-op graph (op 0, no weights: the runner synthesises them when it times
// the case). Functions are pure and thread-safe; cases are immutable values.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/graph.h"
#include "model/split.h"
#include "predictor/op_config.h"

namespace psched::calibration {

struct CalibrationCase {
  std::shared_ptr<const model::Graph> graph;  // one op (id 0); constants without data
  model::SplitAxis axis = model::SplitAxis::kNone;
  int64_t begin = 0;
  int64_t end = 1;
  predictor::OpConfig config;  // the subtask's own configuration
  std::string category;
  std::string source;     // "squeezenet_v1_1/op 12 'conv3' cout[0,32)"
  bool priority = false;  // from one of CaseOptions::priority_models
};

struct CaseOptions {
  uint64_t seed = 1;
  // Add cout / cin / spatial slices of partitionable ops.
  bool include_slices = true;
  // Graph names (model::Graph::name) of the priority models.
  std::vector<std::string> priority_models;
  // Also take TransformerShapeGraphs() (transformer_shapes.h), after the given models: the
  // transformer kinds' families get samples whatever models are registered.
  bool transformer_shapes = true;
};

// What makes two cases the same: BuildCases keeps one case per key, and a sample of a
// configuration stands for every case with its key.
std::string ConfigKey(const predictor::OpConfig& config);

// Op `id` of `graph` as a graph of its own: its activation inputs become graph inputs, its
// constant operands and weights are copied (data included when present).
model::Graph ExtractOp(const model::Graph& graph, model::OpId id);

std::vector<CalibrationCase> BuildCases(std::span<const model::Graph> models,
                                        const CaseOptions& options = {});

}  // namespace psched::calibration
