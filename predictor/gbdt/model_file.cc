#include "predictor/gbdt/model_file.h"

#include <cmath>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "model/model_hash.h"

namespace psched::predictor::gbdt {

const FamilyModel* DeviceModel::For(OpFamily family) const {
  const auto i = static_cast<size_t>(family);
  if (families[i].has_value()) return &*families[i];
  if (fallback[i].has_value()) {
    const auto& target = families[static_cast<size_t>(*fallback[i])];
    if (target.has_value()) return &*target;
  }
  return nullptr;
}

namespace {

// The non-blank, non-comment lines of a file, each split into tokens, with line numbers.
class LineReader {
 public:
  LineReader(absl::string_view text, absl::string_view source) : source_(source) {
    int number = 0;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      ++number;
      line = absl::StripSuffix(line, "\r");
      const absl::string_view stripped = absl::StripAsciiWhitespace(line);
      if (stripped.empty()) continue;
      if (stripped[0] == '#') {
        absl::string_view comment = absl::StripPrefix(stripped.substr(1), " ");
        absl::StrAppend(&comments_, comments_.empty() ? "" : "\n", comment);
        continue;
      }
      lines_.push_back(
          {number, absl::StrSplit(stripped, absl::ByAnyChar(" \t"), absl::SkipEmpty())});
    }
    last_line_ = number;
    // A file written by FormatModelFile ends in a newline; one that stops inside a line
    // was cut short.
    unterminated_ = !text.empty() && text.back() != '\n';
  }

  bool AtEnd() const { return next_ >= lines_.size(); }
  const std::string& comments() const { return comments_; }

  // The next line, which must start with `key` and have `args` more tokens (-1: any).
  absl::StatusOr<std::vector<absl::string_view>> Expect(absl::string_view key, int args,
                                                        absl::string_view context) {
    if (AtEnd()) {
      return absl::InvalidArgumentError(absl::StrCat(source_, ":", last_line_,
                                                     ": file ends where '", key, "' was expected (",
                                                     context, "); the file is truncated"));
    }
    const Line& line = lines_[next_];
    if (line.tokens[0] != key) {
      return ErrorAtNext(
          absl::StrCat("expected '", key, "' (", context, "), got '", line.tokens[0], "'"));
    }
    if (args >= 0 && static_cast<int>(line.tokens.size()) != args + 1) {
      return ErrorAtNext(absl::StrCat("'", key, "' takes ", args, " value", args == 1 ? "" : "s",
                                      ", got ", line.tokens.size() - 1));
    }
    ++next_;
    return std::vector<absl::string_view>(line.tokens.begin() + 1, line.tokens.end());
  }

  // The first token of the next line ("" at the end).
  absl::string_view PeekKey() const {
    return AtEnd() ? absl::string_view() : lines_[next_].tokens[0];
  }

  // An error about the line most recently returned by Expect (or the next one if none).
  absl::Status Error(absl::string_view what) const {
    const size_t i = next_ == 0 ? 0 : next_ - 1;
    return ErrorAt(i < lines_.size() ? lines_[i].number : last_line_, what);
  }
  absl::Status ErrorAtNext(absl::string_view what) const {
    return ErrorAt(AtEnd() ? last_line_ : lines_[next_].number, what);
  }
  absl::Status ErrorAt(int number, absl::string_view what) const {
    const bool cut = unterminated_ && number == last_line_;
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ":", number, ": ", what,
                     cut ? " (the file ends inside this line: truncated)" : ""));
  }
  // The line number of the line most recently returned by Expect.
  int LastLine() const { return next_ == 0 ? 0 : lines_[next_ - 1].number; }

 private:
  struct Line {
    int number;
    std::vector<absl::string_view> tokens;
  };
  std::string source_;
  std::vector<Line> lines_;
  size_t next_ = 0;
  int last_line_ = 0;
  bool unterminated_ = false;
  std::string comments_;
};

absl::StatusOr<double> Double(const LineReader& in, absl::string_view token,
                              absl::string_view what) {
  double v = 0;
  if (!absl::SimpleAtod(token, &v) || !std::isfinite(v)) {
    return in.Error(absl::StrCat(what, " '", token, "' is not a finite number"));
  }
  return v;
}

absl::StatusOr<int> Count(const LineReader& in, absl::string_view token, absl::string_view what,
                          int max) {
  int v = 0;
  if (!absl::SimpleAtoi(token, &v) || v < 0 || v > max) {
    return in.Error(absl::StrCat(what, " '", token, "' is not an integer in [0, ", max, "]"));
  }
  return v;
}

constexpr int kMaxTrees = 100000;
constexpr int kMaxNodes = 1 << 20;

// Reads one tree; `lines` receives each node's line number.
absl::StatusOr<std::vector<TreeNode>> ParseTree(LineReader& in, int index, int num_features,
                                                absl::string_view family, std::vector<int>& lines) {
  const std::string context = absl::StrCat("tree ", index, " of family ", family);
  absl::StatusOr<std::vector<absl::string_view>> head = in.Expect("tree", 1, context);
  if (!head.ok()) return head.status();
  absl::StatusOr<int> size = Count(in, (*head)[0], "node count", kMaxNodes);
  if (!size.ok()) return size.status();
  if (*size == 0) return in.Error(absl::StrCat(context, " has no nodes"));
  std::vector<TreeNode> nodes;
  nodes.reserve(static_cast<size_t>(*size));
  lines.clear();
  for (int i = 0; i < *size; ++i) {
    const std::string node_context = absl::StrCat("node ", i, " of ", *size, " of ", context);
    const absl::string_view key = in.PeekKey();
    if (key == "l") {
      absl::StatusOr<std::vector<absl::string_view>> t = in.Expect("l", 1, node_context);
      if (!t.ok()) return t.status();
      float v = 0;
      if (!absl::SimpleAtof((*t)[0], &v) || !std::isfinite(v)) {
        return in.Error(absl::StrCat("leaf value '", (*t)[0], "' is not a finite number"));
      }
      nodes.push_back(TreeNode{-1, v, -1, -1, true});
      lines.push_back(in.LastLine());
      continue;
    }
    absl::StatusOr<std::vector<absl::string_view>> t =
        in.Expect("s", 5, absl::StrCat("a split or leaf 'l' line, ", node_context));
    if (!t.ok()) return t.status();
    TreeNode n;
    absl::StatusOr<int> feature = Count(in, (*t)[0], "feature index", num_features - 1);
    if (!feature.ok()) return feature.status();
    if (!absl::SimpleAtof((*t)[1], &n.value) || !std::isfinite(n.value)) {
      return in.Error(absl::StrCat("threshold '", (*t)[1], "' is not a finite number"));
    }
    absl::StatusOr<int> left = Count(in, (*t)[2], "left child", *size - 1);
    if (!left.ok()) return left.status();
    absl::StatusOr<int> right = Count(in, (*t)[3], "right child", *size - 1);
    if (!right.ok()) return right.status();
    if ((*t)[4] != "L" && (*t)[4] != "R") {
      return in.Error(absl::StrCat("missing-value side '", (*t)[4], "' is not L or R"));
    }
    n.feature = *feature;
    n.left = *left;
    n.right = *right;
    n.default_left = (*t)[4] == "L";
    nodes.push_back(n);
    lines.push_back(in.LastLine());
  }
  // Structure (children after parents, one parent each, all reachable), on the node's line.
  const TreeEnsemble single(0.0, num_features, {nodes});
  int bad_node = 0;
  if (absl::Status s = single.Validate(nullptr, &bad_node); !s.ok()) {
    // The check saw this tree alone, as its tree 0.
    absl::string_view detail = s.message();
    absl::ConsumePrefix(&detail, "tree 0 ");
    return in.ErrorAt(lines[static_cast<size_t>(bad_node)], absl::StrCat(context, ", ", detail));
  }
  return nodes;
}

absl::StatusOr<FamilyModel> ParseFamily(LineReader& in, OpFamily family, bool gpu) {
  const std::string name(FamilyName(family));
  const std::vector<std::string>& expected = FeatureNames(family, gpu);
  absl::StatusOr<std::vector<absl::string_view>> features = in.Expect("features", -1, name);
  if (!features.ok()) return features.status();
  if (!std::equal(features->begin(), features->end(), expected.begin(), expected.end())) {
    return in.Error(absl::StrCat(
        "family ", name, " lists features [", absl::StrJoin(*features, " "), "] but this build's ",
        gpu ? "GPU" : "CPU", " layout is [", absl::StrJoin(expected, " "), "]; retrain the model"));
  }
  FamilyModel model;
  absl::StatusOr<std::vector<absl::string_view>> baseline = in.Expect("baseline", 3, name);
  if (!baseline.ok()) return baseline.status();
  double* coefficients[] = {&model.baseline.us_per_mflop, &model.baseline.us_per_mbyte,
                            &model.baseline.constant_us};
  for (size_t i = 0; i < 3; ++i) {
    absl::StatusOr<double> v = Double(in, (*baseline)[i], "baseline coefficient");
    if (!v.ok()) return v.status();
    if (*v < 0) return in.Error(absl::StrCat("baseline coefficient ", *v, " is negative"));
    *coefficients[i] = *v;
  }
  absl::StatusOr<std::vector<absl::string_view>> base = in.Expect("base_score", 1, name);
  if (!base.ok()) return base.status();
  absl::StatusOr<double> base_score = Double(in, (*base)[0], "base_score");
  if (!base_score.ok()) return base_score.status();
  absl::StatusOr<std::vector<absl::string_view>> count = in.Expect("trees", 1, name);
  if (!count.ok()) return count.status();
  absl::StatusOr<int> trees = Count(in, (*count)[0], "tree count", kMaxTrees);
  if (!trees.ok()) return trees.status();
  std::vector<std::vector<TreeNode>> nodes;
  std::vector<int> lines;
  for (int t = 0; t < *trees; ++t) {
    absl::StatusOr<std::vector<TreeNode>> tree =
        ParseTree(in, t, static_cast<int>(expected.size()), name, lines);
    if (!tree.ok()) return tree.status();
    nodes.push_back(*std::move(tree));
  }
  model.trees = TreeEnsemble(*base_score, static_cast<int>(expected.size()), nodes);
  absl::StatusOr<std::vector<absl::string_view>> end =
      in.Expect("end-family", 0, absl::StrCat("after the ", *trees, " trees of family ", name));
  if (!end.ok()) return end.status();
  return model;
}

std::string Float(float v) { return absl::StrFormat("%.9g", v); }
std::string Double(double v) { return absl::StrFormat("%.17g", v); }

}  // namespace

absl::StatusOr<DeviceModel> ParseModelFile(absl::string_view text, absl::string_view source,
                                           const ModelExpectation& expect) {
  LineReader in(text, source);
  DeviceModel model;
  absl::StatusOr<std::vector<absl::string_view>> magic =
      in.Expect(kModelFileMagic, 1, "the first line of a psched GBDT model file");
  if (!magic.ok()) return magic.status();
  if ((*magic)[0] != absl::StrCat(kModelFileVersion)) {
    return in.Error(absl::StrCat("format version ", (*magic)[0],
                                 " is not supported (this build reads ", kModelFileVersion, ")"));
  }
  absl::StatusOr<std::vector<absl::string_view>> device = in.Expect("device", 1, "the header");
  if (!device.ok()) return device.status();
  model.device = std::string((*device)[0]);
  if (!expect.device.empty() && model.device != expect.device) {
    return in.Error(absl::StrCat("model trained for device '", model.device, "', but ",
                                 expect.for_what, " needs one trained for '", expect.device, "'"));
  }
  absl::StatusOr<std::vector<absl::string_view>> kind = in.Expect("kind", 1, "the header");
  if (!kind.ok()) return kind.status();
  if ((*kind)[0] != "gpu" && (*kind)[0] != "cpu") {
    return in.Error(absl::StrCat("device kind '", (*kind)[0], "' is not gpu or cpu"));
  }
  model.gpu = (*kind)[0] == "gpu";
  if (expect.gpu.has_value() && model.gpu != *expect.gpu) {
    return in.Error(absl::StrCat("a ", model.gpu ? "GPU" : "CPU", " model cannot predict ",
                                 expect.for_what, ", a ", *expect.gpu ? "GPU" : "CPU"));
  }
  absl::StatusOr<std::vector<absl::string_view>> dispatch = in.Expect("dispatch", 1, "the header");
  if (!dispatch.ok()) return dispatch.status();
  if (model.gpu == ((*dispatch)[0] == "none")) {
    return in.Error(
        model.gpu ? "a GPU model needs a dispatch scheme, got 'none'"
                  : absl::StrCat("a CPU model has no dispatch scheme, got '", (*dispatch)[0], "'"));
  }
  if (model.gpu) model.dispatch = std::string((*dispatch)[0]);
  if (model.gpu && expect.known_scheme && !expect.known_scheme(model.dispatch)) {
    return in.Error(absl::StrCat("unknown dispatch scheme '", model.dispatch, "'"));
  }

  while (in.PeekKey() == "family" || in.PeekKey() == "fallback") {
    const bool is_fallback = in.PeekKey() == "fallback";
    absl::StatusOr<std::vector<absl::string_view>> line =
        in.Expect(in.PeekKey(), is_fallback ? 2 : 1, "a family section");
    if (!line.ok()) return line.status();
    const std::optional<OpFamily> family = FamilyFromName((*line)[0]);
    if (!family.has_value()) return in.Error(absl::StrCat("unknown op family '", (*line)[0], "'"));
    const auto i = static_cast<size_t>(*family);
    if (model.families[i].has_value() || model.fallback[i].has_value()) {
      return in.Error(absl::StrCat("family ", (*line)[0], " appears twice"));
    }
    if (is_fallback) {
      const std::optional<OpFamily> target = FamilyFromName((*line)[1]);
      if (!target.has_value() || !model.families[static_cast<size_t>(*target)].has_value()) {
        return in.Error(absl::StrCat("fallback of ", (*line)[0], " names '", (*line)[1],
                                     "', which is not a family modelled earlier in the file"));
      }
      model.fallback[i] = *target;
      continue;
    }
    absl::StatusOr<FamilyModel> family_model = ParseFamily(in, *family, model.gpu);
    if (!family_model.ok()) return family_model.status();
    model.families[i] = *std::move(family_model);
  }
  absl::StatusOr<std::vector<absl::string_view>> end =
      in.Expect("end", 0, "family, fallback or end");
  if (!end.ok()) return end.status();
  if (!in.AtEnd()) return in.ErrorAtNext("content after 'end'");
  for (OpFamily f : kAllFamilies) {
    if (IsClassicFamily(f) && model.For(f) == nullptr) {
      return in.Error(absl::StrCat("no model or fallback for family ", FamilyName(f)));
    }
  }
  model.comments = in.comments();
  return model;
}

std::string FormatModelFile(const DeviceModel& model) {
  std::string out = absl::StrCat(kModelFileMagic, " ", kModelFileVersion, "\n");
  absl::StrAppend(&out, "device ", model.device, "\n", "kind ", model.gpu ? "gpu" : "cpu", "\n",
                  "dispatch ", model.gpu ? model.dispatch : "none", "\n");
  if (!model.comments.empty()) {
    for (absl::string_view line : absl::StrSplit(model.comments, '\n')) {
      absl::StrAppend(&out, "#", line.empty() ? "" : " ", line, "\n");
    }
  }
  for (OpFamily f : kAllFamilies) {
    const std::optional<FamilyModel>& fm = model.families[static_cast<size_t>(f)];
    if (!fm.has_value()) continue;
    absl::StrAppend(&out, "family ", FamilyName(f), "\n", "features ",
                    absl::StrJoin(FeatureNames(f, model.gpu), " "), "\n");
    absl::StrAppend(&out, "baseline ", Double(fm->baseline.us_per_mflop), " ",
                    Double(fm->baseline.us_per_mbyte), " ", Double(fm->baseline.constant_us), "\n");
    absl::StrAppend(&out, "base_score ", Double(fm->trees.base_score()), "\n", "trees ",
                    fm->trees.num_trees(), "\n");
    for (int t = 0; t < fm->trees.num_trees(); ++t) {
      const std::span<const TreeNode> nodes = fm->trees.tree(t);
      const int32_t root = fm->trees.tree_begin(t);
      absl::StrAppend(&out, "tree ", nodes.size(), "\n");
      for (const TreeNode& n : nodes) {
        if (n.feature < 0) {
          absl::StrAppend(&out, "l ", Float(n.value), "\n");
        } else {
          absl::StrAppend(&out, "s ", n.feature, " ", Float(n.value), " ", n.left - root, " ",
                          n.right - root, " ", n.default_left ? "L" : "R", "\n");
        }
      }
    }
    absl::StrAppend(&out, "end-family\n");
  }
  for (OpFamily f : kAllFamilies) {
    const std::optional<OpFamily>& target = model.fallback[static_cast<size_t>(f)];
    if (target.has_value()) {
      absl::StrAppend(&out, "fallback ", FamilyName(f), " ", FamilyName(*target), "\n");
    }
  }
  absl::StrAppend(&out, "end\n");
  return out;
}

std::string ModelFileHash(absl::string_view text) {
  return model::ModelHash(std::string_view(text.data(), text.size()));
}

}  // namespace psched::predictor::gbdt
