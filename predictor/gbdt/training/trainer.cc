#include "predictor/gbdt/training/trainer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "predictor/error_summary.h"
#include "predictor/gbdt/training/nnls.h"
#include "predictor/gbdt/training/xgboost_booster.h"

namespace psched::predictor::gbdt::training {
namespace {

// Which modelled family predicts a classic family without rows, nearest first. The transformer
// families get no fallback: GbdtLatencyModel predicts them with its analytic roofline, which
// a conv's or an add's trees would not beat.
using F = OpFamily;
constexpr OpFamily kFallbackOrder[kNumClassicFamilies][kNumClassicFamilies - 1] = {
    /*conv*/ {F::kGroupedConv, F::kDepthwiseConv, F::kFullyConnected, F::kPool, F::kGlobalPool,
              F::kConcat, F::kElementwise},
    /*grouped_conv*/
    {F::kConv, F::kDepthwiseConv, F::kFullyConnected, F::kPool, F::kGlobalPool, F::kConcat,
     F::kElementwise},
    /*depthwise_conv*/
    {F::kGroupedConv, F::kConv, F::kPool, F::kFullyConnected, F::kGlobalPool, F::kConcat,
     F::kElementwise},
    /*fully_connected*/
    {F::kConv, F::kGroupedConv, F::kDepthwiseConv, F::kGlobalPool, F::kPool, F::kConcat,
     F::kElementwise},
    /*pool*/
    {F::kGlobalPool, F::kConcat, F::kElementwise, F::kDepthwiseConv, F::kGroupedConv, F::kConv,
     F::kFullyConnected},
    /*global_pool*/
    {F::kPool, F::kConcat, F::kElementwise, F::kDepthwiseConv, F::kGroupedConv, F::kConv,
     F::kFullyConnected},
    /*concat*/
    {F::kElementwise, F::kPool, F::kGlobalPool, F::kDepthwiseConv, F::kGroupedConv, F::kConv,
     F::kFullyConnected},
    /*elementwise*/
    {F::kConcat, F::kPool, F::kGlobalPool, F::kDepthwiseConv, F::kGroupedConv, F::kConv,
     F::kFullyConnected},
};

// The features of op rows as a family's model sees them on the spec's device.
class Featurizer {
 public:
  Featurizer(const TrainingSpec& spec, DispatchFn scheme) : spec_(spec), scheme_(scheme) {}

  size_t Width(OpFamily family) const { return FeatureNames(family, Dispatch(family)).size(); }

  void Append(const OpRow& row, OpFamily family, std::vector<float>& out,
              TrainingReport* report) const {
    const size_t width = Width(family);
    out.resize(out.size() + width);
    std::span<float> dest(out.data() + out.size() - width, width);
    if (!Dispatch(family)) {
      ExtractFeatures(row.config, family, nullptr, dest);
      return;
    }
    DispatchFeatures d = scheme_(row.config);
    auto measured = row.measured.find(spec_.device);
    if (IsTfliteScheme(spec_.dispatch) && measured != row.measured.end() &&
        !measured->second.kernel.empty()) {
      // Train on the kernel the delegate actually ran; count where the rule agrees.
      const std::optional<KernelClass> recorded =
          KernelClassFromTfliteName(measured->second.kernel);
      if (recorded.has_value()) {
        if (report != nullptr) {
          ++report->kernel_rows;
          if (*recorded == d.kernel) {
            ++report->kernel_rule_matches;
          } else if (report->kernel_mismatches.size() < 10) {
            report->kernel_mismatches.push_back(absl::StrCat("line ", row.line, ": recorded ",
                                                             measured->second.kernel, ", rule ",
                                                             static_cast<int>(d.kernel)));
          }
        }
        d = TfliteGpuDispatchWithKernel(row.config, *recorded);
      }
    }
    ExtractFeatures(row.config, family, &d, dest);
  }

 private:
  bool Dispatch(OpFamily family) const { return spec_.gpu && HasDispatchFeatures(family); }
  const TrainingSpec& spec_;
  DispatchFn scheme_;
};

std::map<std::string, std::string> XgbParams(const BoosterParams& p, uint64_t seed,
                                             double base_score) {
  return {
      {"objective", "reg:squarederror"},
      {"tree_method", "exact"},
      {"nthread", "1"},
      {"seed", absl::StrCat(seed % 2147483647)},
      {"max_depth", absl::StrCat(p.max_depth)},
      {"eta", absl::StrFormat("%.17g", p.eta)},
      {"subsample", absl::StrFormat("%.17g", p.subsample)},
      {"colsample_bytree", absl::StrFormat("%.17g", p.colsample)},
      {"min_child_weight", absl::StrFormat("%.17g", p.min_child_weight)},
      {"lambda", absl::StrFormat("%.17g", p.lambda)},
      {"base_score", absl::StrFormat("%.17g", base_score)},
  };
}

// Fits a * mflops + b * mbytes + c to latencies, minimising relative error.
Baseline FitBaseline(const std::vector<const OpRow*>& rows, const std::string& device) {
  Matrix a(static_cast<int>(rows.size()), 3);
  std::vector<double> b(rows.size(), 1.0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const double us = rows[i]->measured.at(device).us;
    const BaselineTerms t = BaselineTermsOf(rows[i]->config);
    a.at(static_cast<int>(i), 0) = t.mflops / us;
    a.at(static_cast<int>(i), 1) = t.mbytes / us;
    a.at(static_cast<int>(i), 2) = 1.0 / us;
  }
  const std::vector<double> x = Nnls(a, b);
  return Baseline{x[0], x[1], x[2]};
}

absl::StatusOr<FamilyModel> TrainFamily(const std::vector<const OpRow*>& rows, OpFamily family,
                                        const TrainingSpec& spec, const Featurizer& featurizer,
                                        TrainingReport* report) {
  FamilyModel model;
  model.baseline = FitBaseline(rows, spec.device);
  std::vector<float> x;
  std::vector<float> labels;
  double mean = 0;
  for (const OpRow* row : rows) {
    featurizer.Append(*row, family, x, report);
    const double label = std::log(row->measured.at(spec.device).us /
                                  model.baseline.Us(BaselineTermsOf(row->config)));
    labels.push_back(static_cast<float>(label));
    mean += label;
  }
  mean /= static_cast<double>(rows.size());
  BoosterParams params = spec.per_op;
  if (static_cast<int>(rows.size()) < spec.small_family_rows) {
    params.max_depth = std::min(params.max_depth, 4);
    params.rounds = std::max(1, params.rounds / 2);
  }
  const size_t width = featurizer.Width(family);
  absl::StatusOr<XgbMatrix> matrix = XgbMatrix::Create(x, rows.size(), width);
  if (!matrix.ok()) return matrix.status();
  if (absl::Status s = matrix->SetLabels(labels); !s.ok()) return s;
  absl::StatusOr<XgbBooster> booster =
      XgbBooster::Create(*matrix, XgbParams(params, spec.seed, mean));
  if (!booster.ok()) return booster.status();
  for (int round = 0; round < params.rounds; ++round) {
    if (absl::Status s = booster->UpdateOneIter(round, *matrix); !s.ok()) return s;
  }
  absl::StatusOr<TreeEnsemble> trees = booster->ToEnsemble(static_cast<int>(width));
  if (!trees.ok()) return trees.status();
  model.trees = *std::move(trees);
  return model;
}

absl::Status FillFallbacks(DeviceModel& model) {
  bool any = false;
  for (const auto& f : model.families) any = any || f.has_value();
  if (!any) return absl::InvalidArgumentError("no family has training rows");
  for (OpFamily f : kAllFamilies) {
    const auto i = static_cast<size_t>(f);
    if (model.families[i].has_value() || !IsClassicFamily(f)) continue;
    for (OpFamily target : kFallbackOrder[i]) {
      if (model.families[static_cast<size_t>(target)].has_value()) {
        model.fallback[i] = target;
        break;
      }
    }
  }
  return absl::OkStatus();
}

DeviceModel EmptyModel(const TrainingSpec& spec) {
  DeviceModel model;
  model.device = spec.device;
  model.gpu = spec.gpu;
  model.dispatch = spec.gpu ? spec.dispatch : "";
  return model;
}

absl::StatusOr<DeviceModel> FitPerOp(const std::vector<const OpRow*>& rows,
                                     const TrainingSpec& spec, const Featurizer& featurizer,
                                     TrainingReport* report) {
  std::array<std::vector<const OpRow*>, kNumFamilies> by_family;
  for (const OpRow* row : rows)
    by_family[static_cast<size_t>(FamilyOf(row->config))].push_back(row);
  DeviceModel model = EmptyModel(spec);
  for (OpFamily f : kAllFamilies) {
    const auto& family_rows = by_family[static_cast<size_t>(f)];
    if (family_rows.empty()) continue;
    absl::StatusOr<FamilyModel> fm = TrainFamily(family_rows, f, spec, featurizer, report);
    if (!fm.ok()) return fm.status();
    model.families[static_cast<size_t>(f)] = *std::move(fm);
  }
  if (absl::Status s = FillFallbacks(model); !s.ok()) return s;
  return model;
}

struct Group {
  std::string name;
  std::vector<const OpRow*> ops;
  double total_us = 0;
};

absl::StatusOr<DeviceModel> FitTotals(const std::vector<const Group*>& groups,
                                      const TrainingSpec& spec, const Featurizer& featurizer) {
  // Baselines of all families jointly: sum over a group's ops / total = 1.
  std::array<int, kNumFamilies> column{};
  int columns = 0;
  for (OpFamily f : kAllFamilies) column[static_cast<size_t>(f)] = -1;
  for (const Group* g : groups) {
    for (const OpRow* op : g->ops) {
      int& c = column[static_cast<size_t>(FamilyOf(op->config))];
      if (c < 0) c = 3 * columns++;
    }
  }
  Matrix a(static_cast<int>(groups.size()), 3 * columns);
  std::vector<double> b(groups.size(), 1.0);
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    for (const OpRow* op : groups[gi]->ops) {
      const int c = column[static_cast<size_t>(FamilyOf(op->config))];
      const BaselineTerms t = BaselineTermsOf(op->config);
      const double inv = 1.0 / groups[gi]->total_us;
      a.at(static_cast<int>(gi), c) += t.mflops * inv;
      a.at(static_cast<int>(gi), c + 1) += t.mbytes * inv;
      a.at(static_cast<int>(gi), c + 2) += inv;
    }
  }
  const std::vector<double> x = Nnls(a, b);
  DeviceModel model = EmptyModel(spec);

  // Per family: its rows' features, starting margins log(baseline) and owning group.
  struct FamilyData {
    std::vector<float> x;
    std::vector<float> base_margin;
    std::vector<size_t> group;
    std::optional<XgbMatrix> matrix;
    std::optional<XgbBooster> booster;
  };
  std::array<FamilyData, kNumFamilies> data;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    for (const OpRow* op : groups[gi]->ops) {
      const OpFamily f = FamilyOf(op->config);
      const int c = column[static_cast<size_t>(f)];
      const Baseline base{x[static_cast<size_t>(c)], x[static_cast<size_t>(c) + 1],
                          x[static_cast<size_t>(c) + 2]};
      FamilyData& d = data[static_cast<size_t>(f)];
      featurizer.Append(*op, f, d.x, nullptr);
      d.base_margin.push_back(static_cast<float>(std::log(base.Us(BaselineTermsOf(op->config)))));
      d.group.push_back(gi);
      model.families[static_cast<size_t>(f)] = FamilyModel{base, TreeEnsemble()};
    }
  }
  for (OpFamily f : kAllFamilies) {
    FamilyData& d = data[static_cast<size_t>(f)];
    if (d.group.empty()) continue;
    absl::StatusOr<XgbMatrix> m = XgbMatrix::Create(d.x, d.group.size(), featurizer.Width(f));
    if (!m.ok()) return m.status();
    if (absl::Status s = m->SetBaseMargin(d.base_margin); !s.ok()) return s;
    // Labels are unused by the custom objective but XGBoost wants them present.
    if (absl::Status s = m->SetLabels(std::vector<float>(d.group.size(), 0.0f)); !s.ok()) return s;
    absl::StatusOr<XgbBooster> booster =
        XgbBooster::Create(*m, XgbParams(spec.totals, spec.seed, 0));
    if (!booster.ok()) return booster.status();
    d.matrix = *std::move(m);
    d.booster = *std::move(booster);
  }
  for (int round = 0; round < spec.totals.rounds; ++round) {
    std::array<std::vector<float>, kNumFamilies> predicted;
    std::vector<double> sum(groups.size(), 0.0);
    for (OpFamily f : kAllFamilies) {
      FamilyData& d = data[static_cast<size_t>(f)];
      if (!d.booster.has_value()) continue;
      absl::StatusOr<std::vector<float>> margins = d.booster->PredictMargins(*d.matrix);
      if (!margins.ok()) return margins.status();
      predicted[static_cast<size_t>(f)] = *std::move(margins);
      for (size_t i = 0; i < d.group.size(); ++i) {
        sum[d.group[i]] += std::exp(static_cast<double>(predicted[static_cast<size_t>(f)][i]));
      }
    }
    for (OpFamily f : kAllFamilies) {
      FamilyData& d = data[static_cast<size_t>(f)];
      if (!d.booster.has_value()) continue;
      std::vector<float> grad(d.group.size()), hess(d.group.size());
      for (size_t i = 0; i < d.group.size(); ++i) {
        const size_t g = d.group[i];
        const double share =
            std::exp(static_cast<double>(predicted[static_cast<size_t>(f)][i])) / sum[g];
        const double residual = std::log(sum[g] / groups[g]->total_us);
        grad[i] = static_cast<float>(2.0 * residual * share);
        hess[i] = static_cast<float>(2.0 * share);
      }
      if (absl::Status s = d.booster->BoostOneIter(*d.matrix, grad, hess); !s.ok()) return s;
    }
  }
  for (OpFamily f : kAllFamilies) {
    FamilyData& d = data[static_cast<size_t>(f)];
    if (!d.booster.has_value()) continue;
    absl::StatusOr<TreeEnsemble> trees =
        d.booster->ToEnsemble(static_cast<int>(featurizer.Width(f)));
    if (!trees.ok()) return trees.status();
    model.families[static_cast<size_t>(f)]->trees = *std::move(trees);
  }
  if (absl::Status s = FillFallbacks(model); !s.ok()) return s;
  return model;
}

absl::StatusOr<DispatchFn> Scheme(const TrainingSpec& spec) {
  if (!spec.gpu) return nullptr;
  if (auto it = spec.schemes.find(spec.dispatch); it != spec.schemes.end()) return it->second;
  std::optional<DispatchFn> builtin = BuiltinDispatchScheme(spec.dispatch);
  if (!builtin.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown dispatch scheme '", spec.dispatch, "' for GPU device ", spec.device));
  }
  return *builtin;
}

}  // namespace

// Dealing the shuffled groups round-robin.
std::map<std::string, int> AssignFolds(std::vector<std::string> groups, int folds, uint64_t seed) {
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  std::mt19937_64 rng(seed);
  for (size_t i = groups.size(); i > 1; --i) std::swap(groups[i - 1], groups[rng() % i]);
  std::map<std::string, int> fold;
  for (size_t i = 0; i < groups.size(); ++i) fold[groups[i]] = static_cast<int>(i) % folds;
  return fold;
}

namespace {

// The model as it will ship: written, parsed and wrapped.
absl::StatusOr<std::unique_ptr<GbdtLatencyModel>> AsShipped(const DeviceModel& model,
                                                            const TrainingSpec& spec) {
  GbdtLatencyModel::DeviceSource source;
  source.name = spec.device;
  source.source = absl::StrCat("trained:", spec.device);
  source.text = FormatModelFile(model);
  source.gpu = spec.gpu;
  return GbdtLatencyModel::Create("training", {std::move(source)}, spec.schemes);
}

FamilyError Summarise(std::string name, std::vector<double> apes) {
  const ErrorSummary summary = SummarizeErrors(std::move(apes));
  return FamilyError{std::move(name), summary.count, summary.mape, summary.median, summary.p90};
}

std::string Comments(const TrainingSpec& spec, const TrainingReport& report, bool totals,
                     size_t rows, size_t groups) {
  std::string out = absl::StrCat("trained by psched-train for ", spec.device, " from ", spec.source,
                                 "\n", rows, " op rows in ", groups, " groups; ",
                                 totals ? "fitted to whole-group totals" : "per-op latencies");
  const BoosterParams& p = totals ? spec.totals : spec.per_op;
  absl::StrAppend(&out, absl::StrFormat("\nrounds %d, max_depth %d, eta %g, subsample %g, "
                                        "colsample %g, min_child_weight %g, lambda %g, seed %d",
                                        p.rounds, p.max_depth, p.eta, p.subsample, p.colsample,
                                        p.min_child_weight, p.lambda, spec.seed));
  if (report.folds >= 2) {
    absl::StrAppend(&out, "\nheld-out error (", report.folds, "-fold, grouped by model):");
    for (const FamilyError& e : report.families) {
      absl::StrAppend(&out,
                      absl::StrFormat("\n  %s: MAPE %.2f%% over %d ops", e.family, e.mape, e.rows));
    }
    const ErrorSummary g = report.GroupSummary();
    absl::StrAppend(
        &out, absl::StrFormat("\n  whole-model sums: MAPE %.2f%% over %d models", g.mape, g.count));
  }
  return out;
}

}  // namespace

double GroupError::ape() const {
  return 100.0 * std::abs(predicted_us - measured_us) / measured_us;
}

ErrorSummary TrainingReport::GroupSummary() const {
  std::vector<double> apes;
  for (const GroupError& g : groups) apes.push_back(g.ape());
  return SummarizeErrors(std::move(apes));
}

std::string TrainingReport::Markdown() const {
  std::string out = absl::StrCat("### ", device, ": held-out error, ", folds,
                                 "-fold cross-validation grouped by model\n\n");
  if (!families.empty()) {
    absl::StrAppend(&out, "| family | ops | MAPE % | median APE % | P90 APE % |\n",
                    "| --- | ---: | ---: | ---: | ---: |\n");
    for (const FamilyError& e : families) {
      absl::StrAppend(&out, absl::StrFormat("| %s | %d | %.2f | %.2f | %.2f |\n", e.family, e.rows,
                                            e.mape, e.median_ape, e.p90_ape));
    }
    absl::StrAppend(&out, "\n");
  }
  if (!groups.empty()) {
    const ErrorSummary g = GroupSummary();
    std::vector<GroupError> worst = groups;
    std::sort(worst.begin(), worst.end(),
              [](const GroupError& a, const GroupError& b) { return a.ape() > b.ape(); });
    std::string names;
    for (size_t i = 0; i < std::min<size_t>(3, worst.size()); ++i) {
      absl::StrAppend(&names, i ? ", " : "", worst[i].group,
                      absl::StrFormat(" %.1f%%", worst[i].ape()));
    }
    absl::StrAppend(&out, totals_mode ? "Whole-model latency (sum of per-op predictions vs the "
                                        "measured total):\n\n"
                                      : "Sum of per-op predictions vs sum of measured ops:\n\n");
    absl::StrAppend(&out, "| models | MAPE % | median APE % | max APE % | worst |\n",
                    "| ---: | ---: | ---: | ---: | --- |\n",
                    absl::StrFormat("| %d | %.2f | %.2f | %.2f | %s |\n\n", g.count, g.mape,
                                    g.median, g.max, names));
  }
  if (kernel_rows > 0) {
    absl::StrAppend(&out, absl::StrFormat("Kernel rule agrees with the recorded kernel on %d of %d "
                                          "conv/FC rows.\n",
                                          kernel_rule_matches, kernel_rows));
    for (const std::string& m : kernel_mismatches) absl::StrAppend(&out, "- ", m, "\n");
  }
  return out;
}

absl::StatusOr<DeviceModel> TrainPerOp(const OpTable& ops, const TrainingSpec& spec,
                                       TrainingReport* report) {
  absl::StatusOr<DispatchFn> scheme = Scheme(spec);
  if (!scheme.ok()) return scheme.status();
  std::vector<const OpRow*> rows;
  std::vector<std::string> names;
  for (const OpRow& row : ops.rows) {
    if (!row.measured.contains(spec.device)) continue;
    rows.push_back(&row);
    names.push_back(row.group);
  }
  if (rows.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ops.source, ": no row measures device '", spec.device, "'"));
  }
  const Featurizer featurizer(spec, *scheme);
  TrainingReport local;
  TrainingReport& r = report != nullptr ? *report : local;
  r.device = spec.device;
  r.folds = spec.folds;
  if (spec.folds >= 2) {
    const std::map<std::string, int> fold = AssignFolds(names, spec.folds, spec.seed);
    std::array<std::vector<double>, kNumFamilies> apes;
    std::vector<double> all;
    std::map<std::string, GroupError> sums;
    for (int k = 0; k < spec.folds; ++k) {
      std::vector<const OpRow*> train, test;
      for (const OpRow* row : rows) (fold.at(row->group) == k ? test : train).push_back(row);
      if (train.empty() || test.empty()) continue;
      absl::StatusOr<DeviceModel> model = FitPerOp(train, spec, featurizer, nullptr);
      if (!model.ok()) return model.status();
      absl::StatusOr<std::unique_ptr<GbdtLatencyModel>> shipped = AsShipped(*model, spec);
      if (!shipped.ok()) return shipped.status();
      for (const OpRow* row : test) {
        const double measured = row->measured.at(spec.device).us;
        const double predicted = (*shipped)->PredictUs(row->config, 0);
        const double ape = 100.0 * std::abs(predicted - measured) / measured;
        apes[static_cast<size_t>(FamilyOf(row->config))].push_back(ape);
        all.push_back(ape);
        GroupError& g = sums[row->group];
        g.group = row->group;
        g.predicted_us += predicted;
        g.measured_us += measured;
      }
    }
    r.families.clear();
    for (OpFamily f : kAllFamilies) {
      if (!apes[static_cast<size_t>(f)].empty()) {
        r.families.push_back(Summarise(std::string(FamilyName(f)), apes[static_cast<size_t>(f)]));
      }
    }
    // The paper reports convolutions as one operator type.
    std::vector<double> convs;
    for (OpFamily f : {OpFamily::kConv, OpFamily::kGroupedConv, OpFamily::kDepthwiseConv}) {
      const std::vector<double>& a = apes[static_cast<size_t>(f)];
      convs.insert(convs.end(), a.begin(), a.end());
    }
    if (!convs.empty()) r.families.push_back(Summarise("all convolutions", convs));
    r.families.push_back(Summarise("all", all));
    r.groups.clear();
    for (auto& [name, g] : sums) r.groups.push_back(g);
  }
  absl::StatusOr<DeviceModel> model = FitPerOp(rows, spec, featurizer, &r);
  if (!model.ok()) return model.status();
  model->comments = Comments(spec, r, false, rows.size(),
                             std::set<std::string>(names.begin(), names.end()).size());
  return model;
}

absl::StatusOr<DeviceModel> TrainFromTotals(const OpTable& ops, const TotalsTable& totals,
                                            const TrainingSpec& spec, TrainingReport* report) {
  absl::StatusOr<DispatchFn> scheme = Scheme(spec);
  if (!scheme.ok()) return scheme.status();
  std::map<std::string, Group> by_name;
  for (const OpRow& row : ops.rows) by_name[row.group].ops.push_back(&row);
  std::vector<const Group*> groups;
  size_t rows = 0;
  for (auto& [name, group] : by_name) {
    auto it = totals.totals.find(name);
    if (it == totals.totals.end()) continue;
    auto total = it->second.find(spec.device);
    if (total == it->second.end()) continue;
    group.name = name;
    group.total_us = total->second;
    groups.push_back(&group);
    rows += group.ops.size();
  }
  if (groups.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(totals.source, ": no group of ", ops.source,
                                                   " has a total for device '", spec.device, "'"));
  }
  const Featurizer featurizer(spec, *scheme);
  TrainingReport local;
  TrainingReport& r = report != nullptr ? *report : local;
  r.device = spec.device;
  r.totals_mode = true;
  r.folds = spec.folds;
  if (spec.folds >= 2) {
    std::vector<std::string> names;
    for (const Group* g : groups) names.push_back(g->name);
    const std::map<std::string, int> fold = AssignFolds(names, spec.folds, spec.seed);
    r.groups.clear();
    for (int k = 0; k < spec.folds; ++k) {
      std::vector<const Group*> train, test;
      for (const Group* g : groups) (fold.at(g->name) == k ? test : train).push_back(g);
      if (train.empty() || test.empty()) continue;
      absl::StatusOr<DeviceModel> model = FitTotals(train, spec, featurizer);
      if (!model.ok()) return model.status();
      absl::StatusOr<std::unique_ptr<GbdtLatencyModel>> shipped = AsShipped(*model, spec);
      if (!shipped.ok()) return shipped.status();
      for (const Group* g : test) {
        GroupError e{g->name, 0, g->total_us};
        for (const OpRow* op : g->ops) e.predicted_us += (*shipped)->PredictUs(op->config, 0);
        r.groups.push_back(e);
      }
    }
    std::sort(r.groups.begin(), r.groups.end(),
              [](const GroupError& a, const GroupError& b) { return a.group < b.group; });
  }
  absl::StatusOr<DeviceModel> model = FitTotals(groups, spec, featurizer);
  if (!model.ok()) return model.status();
  model->comments = Comments(spec, r, true, rows, groups.size());
  return model;
}

}  // namespace psched::predictor::gbdt::training
