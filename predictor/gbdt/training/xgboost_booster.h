// Thin RAII wrappers over XGBoost's C API (libxgboost-dev 1.7): a dense training matrix and
// a booster, with every C error turned into an absl::Status carrying XGBoost's message.
//
// Training is deterministic for a fixed seed: the caller sets nthread = 1 and the exact tree
// method. ToEnsemble converts the trained trees into psched's own evaluator (tree_ensemble.h)
// through XGBoost's JSON model, renumbering every tree breadth-first so children follow
// their parents. Both types are move-only and not thread-safe.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "predictor/gbdt/tree_ensemble.h"

namespace psched::predictor::gbdt::training {

class XgbMatrix {
 public:
  // `x` holds rows x cols floats, row-major.
  static absl::StatusOr<XgbMatrix> Create(std::span<const float> x, size_t rows, size_t cols);
  XgbMatrix(XgbMatrix&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  XgbMatrix& operator=(XgbMatrix&& other) noexcept;
  ~XgbMatrix();

  absl::Status SetLabels(std::span<const float> labels);
  // Per-row starting margins; the booster's base_score is then not added.
  absl::Status SetBaseMargin(std::span<const float> margins);
  void* handle() const { return handle_; }

 private:
  explicit XgbMatrix(void* handle) : handle_(handle) {}
  void* handle_;
};

class XgbBooster {
 public:
  static absl::StatusOr<XgbBooster> Create(const XgbMatrix& train,
                                           const std::map<std::string, std::string>& params);
  XgbBooster(XgbBooster&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  XgbBooster& operator=(XgbBooster&& other) noexcept;
  ~XgbBooster();

  // One boosting round with the configured objective.
  absl::Status UpdateOneIter(int iteration, const XgbMatrix& train);
  // One boosting round from caller-computed gradients and hessians (a custom objective).
  absl::Status BoostOneIter(const XgbMatrix& train, std::span<float> grad, std::span<float> hess);
  // Raw margins (base margin or base_score plus every tree).
  absl::StatusOr<std::vector<float>> PredictMargins(const XgbMatrix& data) const;
  absl::StatusOr<std::string> SaveJson() const;
  // The trees as a TreeEnsemble over `num_features` features.
  absl::StatusOr<TreeEnsemble> ToEnsemble(int num_features) const;

 private:
  explicit XgbBooster(void* handle) : handle_(handle) {}
  void* handle_;
};

// Converts XGBoost's JSON model (gbtree, one output) into a TreeEnsemble.
absl::StatusOr<TreeEnsemble> EnsembleFromXgboostJson(absl::string_view json, int num_features);

}  // namespace psched::predictor::gbdt::training
