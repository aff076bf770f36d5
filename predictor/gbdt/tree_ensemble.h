// A gradient-boosted ensemble of regression trees, evaluated natively.
//
// Semantics are XGBoost's (gbtree, reg:squarederror): the margin of a feature row is
// base_score plus one leaf value per tree, reached by going left at a split when
// `x[feature] < threshold` (compared in float) and to the node's default side when x is NaN.
// tree_ensemble_test checks agreement with XGBoost's own predict.
//
// Nodes of all trees live in one flat array; each tree is a root index. Children are always
// after their parent (TreeEnsemble::Validate checks it, so every walk terminates).
//
// PredictBatch exploits how the scheduler asks: one op's subtasks of 1..U work units form a
// batch in which every feature is non-decreasing from row to row. A tree then sends a
// contiguous prefix of the rows left at every split on such a feature, so each tree is
// walked once per leaf it reaches (a binary search per split) instead of once per row; a
// feature that is not monotone in the batch falls back to row-by-row walks below that node.
// Results equal Predict's up to the order of double additions.
//
// A TreeEnsemble is immutable after construction; const methods are thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"

namespace psched::predictor::gbdt {

struct TreeNode {
  int32_t feature = -1;  // < 0: a leaf
  float value = 0;       // split threshold, or the leaf value
  int32_t left = -1;     // node indices within the tree; -1 for leaves
  int32_t right = -1;
  bool default_left = true;  // where a NaN feature goes
};

class TreeEnsemble {
 public:
  TreeEnsemble() = default;
  // `trees[t]` lists tree t's nodes, root first; `num_features` bounds split indices.
  TreeEnsemble(double base_score, int num_features,
               const std::vector<std::vector<TreeNode>>& trees);

  // OK when every split names a feature < num_features, every child index lies after its
  // parent and inside its tree, every node but the root has exactly one parent, and every
  // value is finite. Otherwise InvalidArgument naming the tree and node, which are also
  // stored in `bad_tree` and `bad_node` when given.
  absl::Status Validate(int* bad_tree = nullptr, int* bad_node = nullptr) const;

  int num_trees() const { return static_cast<int>(roots_.size()); }
  int num_features() const { return num_features_; }
  double base_score() const { return base_score_; }
  // Tree t's nodes, root first. Their child indices count from the ensemble's first node:
  // subtract tree_begin(t) for indices within the tree.
  std::span<const TreeNode> tree(int t) const;
  int32_t tree_begin(int t) const { return roots_[static_cast<size_t>(t)]; }

  // REQUIRES: row.size() >= num_features().
  double Predict(std::span<const float> row) const;
  // Rows are `stride` floats apart in `x`; out[r] receives row r's margin.
  // REQUIRES: stride >= num_features(), x.size() >= rows * stride, out.size() >= rows.
  void PredictBatch(std::span<const float> x, size_t stride, std::span<double> out) const;

 private:
  struct Batch;
  void Walk(const Batch& batch, int32_t node, size_t lo, size_t hi) const;
  double WalkRow(const float* row, int32_t node) const;

  double base_score_ = 0;
  int num_features_ = 0;
  std::vector<TreeNode> nodes_;  // all trees; child indices rebased to this array
  std::vector<int32_t> roots_;
  std::vector<int32_t> tree_end_;  // one past tree t's last node
};

}  // namespace psched::predictor::gbdt
