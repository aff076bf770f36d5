#include "predictor/gbdt/tree_ensemble.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace psched::predictor::gbdt {

struct TreeEnsemble::Batch {
  const float* x;
  size_t stride;
  const std::vector<char>* monotone;  // per feature: non-decreasing over the rows, no NaN
  std::vector<double>* delta;         // difference array: rows + 1 entries
};

TreeEnsemble::TreeEnsemble(double base_score, int num_features,
                           const std::vector<std::vector<TreeNode>>& trees)
    : base_score_(base_score), num_features_(num_features) {
  for (const std::vector<TreeNode>& tree : trees) {
    const auto offset = static_cast<int32_t>(nodes_.size());
    roots_.push_back(offset);
    for (TreeNode n : tree) {
      if (n.feature >= 0) {
        n.left += offset;
        n.right += offset;
      }
      nodes_.push_back(n);
    }
    tree_end_.push_back(static_cast<int32_t>(nodes_.size()));
  }
}

std::span<const TreeNode> TreeEnsemble::tree(int t) const {
  const int32_t begin = roots_[static_cast<size_t>(t)];
  return std::span<const TreeNode>(nodes_.data() + begin,
                                   static_cast<size_t>(tree_end_[static_cast<size_t>(t)] - begin));
}

absl::Status TreeEnsemble::Validate(int* bad_tree, int* bad_node) const {
  if (!std::isfinite(base_score_)) {
    return absl::InvalidArgumentError(absl::StrCat("base score ", base_score_, " is not finite"));
  }
  std::vector<int> parents;
  for (size_t t = 0; t < roots_.size(); ++t) {
    const int32_t begin = roots_[t];
    const int32_t end = tree_end_[t];
    if (begin == end) return absl::InvalidArgumentError(absl::StrCat("tree ", t, " has no nodes"));
    parents.assign(static_cast<size_t>(end - begin), 0);
    for (int32_t i = begin; i < end; ++i) {
      const TreeNode& n = nodes_[static_cast<size_t>(i)];
      const auto where = [&] {
        if (bad_tree != nullptr) *bad_tree = static_cast<int>(t);
        if (bad_node != nullptr) *bad_node = i - begin;
        return absl::StrCat("tree ", t, " node ", i - begin, ": ");
      };
      if (!std::isfinite(n.value)) {
        return absl::InvalidArgumentError(absl::StrCat(where(), "value is not finite"));
      }
      if (n.feature < 0) continue;
      if (n.feature >= num_features_) {
        return absl::InvalidArgumentError(
            absl::StrCat(where(), "splits on feature ", n.feature, " of ", num_features_));
      }
      for (int32_t child : {n.left, n.right}) {
        if (child <= i || child >= end) {
          return absl::InvalidArgumentError(
              absl::StrCat(where(), "child ", child - begin, " is not a later node of the tree"));
        }
        if (++parents[static_cast<size_t>(child - begin)] > 1) {
          return absl::InvalidArgumentError(
              absl::StrCat(where(), "node ", child - begin, " has two parents"));
        }
      }
    }
    for (size_t i = 1; i < parents.size(); ++i) {
      if (parents[i] == 0) {
        if (bad_tree != nullptr) *bad_tree = static_cast<int>(t);
        if (bad_node != nullptr) *bad_node = static_cast<int>(i);
        return absl::InvalidArgumentError(absl::StrCat("tree ", t, " node ", i, " is unreachable"));
      }
    }
  }
  return absl::OkStatus();
}

double TreeEnsemble::WalkRow(const float* row, int32_t node) const {
  const TreeNode* nodes = nodes_.data();
  while (nodes[node].feature >= 0) {
    const TreeNode& n = nodes[node];
    const float x = row[n.feature];
    node = std::isnan(x) ? (n.default_left ? n.left : n.right) : (x < n.value ? n.left : n.right);
  }
  return nodes[node].value;
}

double TreeEnsemble::Predict(std::span<const float> row) const {
  double sum = base_score_;
  for (int32_t root : roots_) sum += WalkRow(row.data(), root);
  return sum;
}

void TreeEnsemble::Walk(const Batch& b, int32_t node, size_t lo, size_t hi) const {
  while (true) {
    const TreeNode& n = nodes_[static_cast<size_t>(node)];
    if (n.feature < 0) {
      (*b.delta)[lo] += n.value;
      (*b.delta)[hi] -= n.value;
      return;
    }
    if (!(*b.monotone)[static_cast<size_t>(n.feature)]) {
      for (size_t r = lo; r < hi; ++r) {
        const double v = WalkRow(b.x + r * b.stride, node);
        (*b.delta)[r] += v;
        (*b.delta)[r + 1] -= v;
      }
      return;
    }
    // Rows [lo, split) have x < threshold and go left.
    size_t first = lo, count = hi - lo;
    while (count > 0) {
      const size_t half = count / 2;
      if (b.x[(first + half) * b.stride + static_cast<size_t>(n.feature)] < n.value) {
        first += half + 1;
        count -= half + 1;
      } else {
        count = half;
      }
    }
    if (first == lo) {
      node = n.right;
    } else if (first == hi) {
      node = n.left;
    } else {
      Walk(b, n.left, lo, first);
      node = n.right;
      lo = first;
    }
  }
}

void TreeEnsemble::PredictBatch(std::span<const float> x, size_t stride,
                                std::span<double> out) const {
  const size_t rows = out.size();
  if (rows == 0) return;
  std::vector<char> monotone(static_cast<size_t>(num_features_), 1);
  for (size_t f = 0; f < monotone.size(); ++f) {
    for (size_t r = 0; r < rows && monotone[f]; ++r) {
      const float v = x[r * stride + f];
      if (std::isnan(v) || (r > 0 && v < x[(r - 1) * stride + f])) monotone[f] = 0;
    }
  }
  std::vector<double> delta(rows + 1, 0.0);
  const Batch batch{x.data(), stride, &monotone, &delta};
  for (int32_t root : roots_) Walk(batch, root, 0, rows);
  double running = 0;
  for (size_t r = 0; r < rows; ++r) {
    running += delta[r];
    out[r] = base_score_ + running;
  }
}

}  // namespace psched::predictor::gbdt
