#include "predictor/gbdt/training/xgboost_booster.h"

#include <xgboost/c_api.h>

#include <deque>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace psched::predictor::gbdt::training {
namespace {

absl::Status Check(int rc, absl::string_view what) {
  if (rc == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("xgboost ", what, ": ", XGBGetLastError()));
}

// XGBoost warns on stderr by default (e.g. about parameters it ignores); psched reports
// errors itself.
void Quiet() {
  static const bool once = [] { return XGBSetGlobalConfig(R"({"verbosity": 0})") == 0; }();
  (void)once;
}

}  // namespace

absl::StatusOr<XgbMatrix> XgbMatrix::Create(std::span<const float> x, size_t rows, size_t cols) {
  Quiet();
  DMatrixHandle handle = nullptr;
  if (absl::Status s = Check(XGDMatrixCreateFromMat(x.data(), rows, cols, NAN, &handle), "DMatrix");
      !s.ok()) {
    return s;
  }
  return XgbMatrix(handle);
}

XgbMatrix& XgbMatrix::operator=(XgbMatrix&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) XGDMatrixFree(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

XgbMatrix::~XgbMatrix() {
  if (handle_ != nullptr) XGDMatrixFree(handle_);
}

absl::Status XgbMatrix::SetLabels(std::span<const float> labels) {
  return Check(XGDMatrixSetFloatInfo(handle_, "label", labels.data(), labels.size()), "labels");
}

absl::Status XgbMatrix::SetBaseMargin(std::span<const float> margins) {
  return Check(XGDMatrixSetFloatInfo(handle_, "base_margin", margins.data(), margins.size()),
               "base margin");
}

absl::StatusOr<XgbBooster> XgbBooster::Create(const XgbMatrix& train,
                                              const std::map<std::string, std::string>& params) {
  Quiet();
  BoosterHandle handle = nullptr;
  DMatrixHandle matrices[] = {train.handle()};
  if (absl::Status s = Check(XGBoosterCreate(matrices, 1, &handle), "booster"); !s.ok()) return s;
  XgbBooster booster(handle);
  for (const auto& [key, value] : params) {
    if (absl::Status s = Check(XGBoosterSetParam(handle, key.c_str(), value.c_str()),
                               absl::StrCat("parameter ", key, "=", value));
        !s.ok()) {
      return s;
    }
  }
  return booster;
}

XgbBooster& XgbBooster::operator=(XgbBooster&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) XGBoosterFree(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

XgbBooster::~XgbBooster() {
  if (handle_ != nullptr) XGBoosterFree(handle_);
}

absl::Status XgbBooster::UpdateOneIter(int iteration, const XgbMatrix& train) {
  return Check(XGBoosterUpdateOneIter(handle_, iteration, train.handle()), "update");
}

absl::Status XgbBooster::BoostOneIter(const XgbMatrix& train, std::span<float> grad,
                                      std::span<float> hess) {
  return Check(
      XGBoosterBoostOneIter(handle_, train.handle(), grad.data(), hess.data(), grad.size()),
      "boost");
}

absl::StatusOr<std::vector<float>> XgbBooster::PredictMargins(const XgbMatrix& data) const {
  const bst_ulong* shape = nullptr;
  bst_ulong dims = 0;
  const float* result = nullptr;
  constexpr char kConfig[] =
      R"({"type": 1, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false})";
  if (absl::Status s = Check(
          XGBoosterPredictFromDMatrix(handle_, data.handle(), kConfig, &shape, &dims, &result),
          "predict");
      !s.ok()) {
    return s;
  }
  size_t n = 1;
  for (bst_ulong d = 0; d < dims; ++d) n *= shape[d];
  return std::vector<float>(result, result + n);
}

absl::StatusOr<std::string> XgbBooster::SaveJson() const {
  bst_ulong length = 0;
  const char* bytes = nullptr;
  if (absl::Status s = Check(
          XGBoosterSaveModelToBuffer(handle_, R"({"format": "json"})", &length, &bytes), "save");
      !s.ok()) {
    return s;
  }
  return std::string(bytes, length);
}

absl::StatusOr<TreeEnsemble> XgbBooster::ToEnsemble(int num_features) const {
  absl::StatusOr<std::string> json = SaveJson();
  if (!json.ok()) return json.status();
  return EnsembleFromXgboostJson(*json, num_features);
}

absl::StatusOr<TreeEnsemble> EnsembleFromXgboostJson(absl::string_view text, int num_features) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError("XGBoost model is not valid JSON");
  try {
    const nlohmann::json& learner = doc.at("learner");
    double base_score = 0;
    const std::string base = learner.at("learner_model_param").at("base_score").get<std::string>();
    if (!absl::SimpleAtod(base, &base_score)) {
      return absl::InvalidArgumentError(absl::StrCat("XGBoost base_score '", base, "'"));
    }
    std::vector<std::vector<TreeNode>> trees;
    for (const nlohmann::json& tree : learner.at("gradient_booster").at("model").at("trees")) {
      const auto left = tree.at("left_children").get<std::vector<int>>();
      const auto right = tree.at("right_children").get<std::vector<int>>();
      const auto feature = tree.at("split_indices").get<std::vector<int>>();
      const auto value = tree.at("split_conditions").get<std::vector<float>>();
      const auto default_left = tree.at("default_left").get<std::vector<int>>();
      const size_t n = left.size();
      if (right.size() != n || feature.size() != n || value.size() != n ||
          default_left.size() != n || n == 0) {
        return absl::InvalidArgumentError("XGBoost tree arrays differ in length");
      }
      // Breadth-first from the root: new index of every reachable node.
      std::vector<int> order;
      std::vector<int> renumbered(n, -1);
      std::deque<int> queue = {0};
      while (!queue.empty()) {
        const int old = queue.front();
        queue.pop_front();
        if (old < 0 || static_cast<size_t>(old) >= n || renumbered[static_cast<size_t>(old)] >= 0) {
          return absl::InvalidArgumentError("XGBoost tree is not a tree");
        }
        renumbered[static_cast<size_t>(old)] = static_cast<int>(order.size());
        order.push_back(old);
        if (left[static_cast<size_t>(old)] >= 0) {
          queue.push_back(left[static_cast<size_t>(old)]);
          queue.push_back(right[static_cast<size_t>(old)]);
        }
      }
      std::vector<TreeNode> nodes;
      for (int old : order) {
        const auto o = static_cast<size_t>(old);
        if (left[o] < 0) {
          nodes.push_back(TreeNode{-1, value[o], -1, -1, true});
        } else {
          nodes.push_back(TreeNode{feature[o], value[o], renumbered[static_cast<size_t>(left[o])],
                                   renumbered[static_cast<size_t>(right[o])],
                                   default_left[o] != 0});
        }
      }
      trees.push_back(std::move(nodes));
    }
    TreeEnsemble ensemble(base_score, num_features, trees);
    if (absl::Status s = ensemble.Validate(); !s.ok()) return s;
    return ensemble;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("XGBoost model JSON: ", e.what()));
  }
}

}  // namespace psched::predictor::gbdt::training
