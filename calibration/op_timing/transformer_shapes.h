// Calibration graphs of the tensor kinds transformers add, at the shapes of real models.
//
// The registered models of a machine may hold no transformer, and the graph-only CNNs that
// psched-calibrate times by default hold none; without samples the host model could only guess
// at a MatMul between activations, a transpose, a layer norm. So BuildCases also takes these
// graphs: one per model family, each a set of independent ops (every input a graph input)
// with the shapes of one attention block and the model's head - layer norm; the qkv,
// projection and MLP fully-connected layers over the token rows; the qkv split (transpose,
// slice), K^T, Q.K^T, softmax, A.V and the head merge (transpose, reshape); GELU, the
// residual add, a division; the class token's concat and slice, the token mean.
//
//   shapes_vit_b16: 197 tokens of 768, 12 heads of 64, MLP 3072 (ViT-B/16 at 224x224)
//   shapes_vit_b32: 50 tokens of 768 (ViT-B/32)
//   shapes_swin_t:  49-token windows, 64 windows of 96 channels in 3 heads of 32 (stage 1)
//                   and 4 windows of 384 in 12 heads (stage 3), the window partition
//   shapes_small:   65 tokens of 192 in 3 heads of 64, 17 tokens of 64 in 2 heads of 32
//
// Each graph is its own group in the host training's model-grouped folds. Constants have
// dims but no data (the runner synthesises weights). Pure; thread-safe.
#pragma once

#include <vector>

#include "model/graph.h"

namespace psched::calibration {

std::vector<model::Graph> TransformerShapeGraphs();

}  // namespace psched::calibration
