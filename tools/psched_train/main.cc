// psched-train: trains GBDT latency model files (predictor/gbdt) from measurements and
// reports their held-out error.
//
//   psched-train import-mobile-ml-benchmark --data DIR --ops-out ops.csv --totals-out totals.csv
//   psched-train fit --ops ops.csv [--totals totals.csv] --device pixel4/gpu --gpu
//                    --dispatch tflite-gpu --out gpu.gbdt [--report report.md]
//   psched-train eval --ops ops.csv --device pixel4/gpu --model gpu.gbdt
//   psched-train phone-models --data DIR --out-dir predictor/models
//
// `fit` trains per op when the op table measures the device and from whole-model totals
// otherwise (trainer.h). `phone-models` regenerates every shipped data-backed platform
// (predictor/profiles.h MeasuredPlatforms) and its TRAINING.md error tables; the output
// is byte-for-byte the same on every run.
#include <filesystem>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "fmt/core.h"
#include "predictor/gbdt/gbdt_latency_model.h"
#include "predictor/gbdt/training/mobile_benchmark.h"
#include "predictor/gbdt/training/trainer.h"
#include "predictor/profiles.h"

namespace psched::predictor::gbdt::training {
namespace {

namespace fs = std::filesystem;

struct FitFlags {
  std::string ops;
  std::string totals;
  std::string device;
  bool gpu = false;
  std::string dispatch;
  std::string out;
  std::string report;
  int folds = 5;
  uint64_t seed = 1;
  int rounds = 0;
  int max_depth = 0;
  double eta = 0;
};

void AddBoosterFlags(CLI::App* app, FitFlags& f) {
  app->add_option("--folds", f.folds, "cross-validation folds, grouped by model (< 2: none)")
      ->capture_default_str();
  app->add_option("--seed", f.seed, "seed of the fold assignment and of XGBoost")
      ->capture_default_str();
  app->add_option("--rounds", f.rounds, "boosting rounds (0: the mode's default)");
  app->add_option("--max-depth", f.max_depth, "tree depth (0: the mode's default)");
  app->add_option("--eta", f.eta, "learning rate (0: the mode's default)");
}

TrainingSpec SpecFrom(const FitFlags& f) {
  TrainingSpec spec;
  spec.device = f.device;
  spec.gpu = f.gpu;
  spec.dispatch = f.dispatch;
  spec.folds = f.folds;
  spec.seed = f.seed;
  for (BoosterParams* p : {&spec.per_op, &spec.totals}) {
    if (f.rounds > 0) p->rounds = f.rounds;
    if (f.max_depth > 0) p->max_depth = f.max_depth;
    if (f.eta > 0) p->eta = f.eta;
  }
  return spec;
}

// Trains per op or from totals, whichever the tables allow for the device.
absl::StatusOr<DeviceModel> Train(const OpTable& ops, const TotalsTable* totals,
                                  const TrainingSpec& spec, TrainingReport& report) {
  for (const OpRow& row : ops.rows) {
    if (row.measured.contains(spec.device)) return TrainPerOp(ops, spec, &report);
  }
  if (totals == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(ops.source, " has no '", spec.device,
                                                   ":us' column and no --totals was given"));
  }
  return TrainFromTotals(ops, *totals, spec, &report);
}

absl::Status RunImport(const std::string& data, const std::string& ops_out,
                       const std::string& totals_out) {
  absl::StatusOr<MobileBenchmarkData> imported = ImportMobileBenchmark(data);
  if (!imported.ok()) return imported.status();
  if (absl::Status s = WriteFile(ops_out, FormatOpCsv(imported->ops)); !s.ok()) return s;
  if (absl::Status s = WriteFile(totals_out, FormatTotalsCsv(imported->totals)); !s.ok()) return s;
  fmt::print("{} op rows ({} devices) -> {}\n{} models ({} devices) -> {}\n",
             imported->ops.rows.size(), imported->ops.devices.size(), ops_out,
             imported->totals.totals.size(), imported->totals.devices.size(), totals_out);
  return absl::OkStatus();
}

absl::Status RunFit(const FitFlags& f) {
  absl::StatusOr<OpTable> ops = ReadOpCsv(f.ops);
  if (!ops.ok()) return ops.status();
  std::optional<TotalsTable> totals;
  if (!f.totals.empty()) {
    absl::StatusOr<TotalsTable> t = ReadTotalsCsv(f.totals);
    if (!t.ok()) return t.status();
    totals = *std::move(t);
  }
  TrainingSpec spec = SpecFrom(f);
  spec.source = f.totals.empty() ? f.ops : absl::StrCat(f.ops, " + ", f.totals);
  TrainingReport report;
  absl::StatusOr<DeviceModel> model = Train(*ops, totals ? &*totals : nullptr, spec, report);
  if (!model.ok()) return model.status();
  const std::string text = FormatModelFile(*model);
  if (absl::Status s = WriteFile(f.out, text); !s.ok()) return s;
  const std::string markdown = report.Markdown();
  std::cout << markdown << "wrote " << f.out << " (sha256 " << ModelFileHash(text) << ")\n";
  if (!f.report.empty()) return WriteFile(f.report, markdown);
  return absl::OkStatus();
}

absl::Status RunEval(const std::string& ops_path, const std::string& device,
                     const std::string& model_path) {
  absl::StatusOr<OpTable> ops = ReadOpCsv(ops_path);
  if (!ops.ok()) return ops.status();
  absl::StatusOr<std::string> text = ReadFile(model_path);
  if (!text.ok()) return text.status();
  absl::StatusOr<DeviceModel> parsed = ParseModelFile(*text, model_path);
  if (!parsed.ok()) return parsed.status();
  GbdtLatencyModel::DeviceSource source{device, model_path, *text, device, parsed->gpu, 0.0};
  absl::StatusOr<std::unique_ptr<GbdtLatencyModel>> model =
      GbdtLatencyModel::Create("eval", {std::move(source)});
  if (!model.ok()) return model.status();
  std::map<std::string, std::vector<double>> apes;
  for (const OpRow& row : ops->rows) {
    auto it = row.measured.find(device);
    if (it == row.measured.end()) continue;
    const double predicted = (*model)->PredictUs(row.config, 0);
    const double ape = 100.0 * std::abs(predicted - it->second.us) / it->second.us;
    apes[std::string(FamilyName(FamilyOf(row.config)))].push_back(ape);
    apes["all"].push_back(ape);
  }
  if (apes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(ops_path, ": no row measures '", device, "'"));
  }
  fmt::print("| family | ops | MAPE % |\n| --- | ---: | ---: |\n");
  for (const auto& [family, values] : apes) {
    double sum = 0;
    for (double v : values) sum += v;
    fmt::print("| {} | {} | {:.2f} |\n", family, values.size(), sum / values.size());
  }
  return absl::OkStatus();
}

absl::Status RunPhoneModels(const std::string& data, const std::string& out_dir,
                            const FitFlags& f) {
  absl::StatusOr<MobileBenchmarkData> imported = ImportMobileBenchmark(data);
  if (!imported.ok()) return imported.status();
  for (const MeasuredPlatform& platform : MeasuredPlatforms()) {
    const fs::path dir = fs::path(out_dir) / platform.name;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
      return absl::UnavailableError(
          absl::StrCat("cannot create ", dir.string(), ": ", ec.message()));
    std::string summary =
        absl::StrCat("# ", platform.name, ": held-out error of the shipped models\n\n",
                     "Regenerate with `make phone-models` (psched-train phone-models). "
                     "Data: mobile-ml-benchmark (MIT, see ../LICENSE.mobile-ml-benchmark).\n\n");
    for (const MeasuredDevice& device : platform.devices) {
      FitFlags flags = f;
      flags.device = device.measured_id;
      flags.gpu = device.gpu;
      flags.dispatch = device.dispatch;
      TrainingSpec spec = SpecFrom(flags);
      spec.source = "mobile-ml-benchmark@40ba833 (tflite_cnn_ops_gpu.csv, tflite_cnn_e2e.csv)";
      TrainingReport report;
      absl::StatusOr<DeviceModel> model = Train(imported->ops, &imported->totals, spec, report);
      if (!model.ok()) return model.status();
      const fs::path file = dir / absl::StrCat(device.name, ".gbdt");
      const std::string text = FormatModelFile(*model);
      if (absl::Status s = WriteFile(file.string(), text); !s.ok()) return s;
      absl::StrAppend(&summary, "## device `", device.name, "` (", device.measured_id, ")\n\n",
                      report.Markdown(), "\n");
      fmt::print(stderr, "{}: {} bytes, sha256 {}\n", file.string(), text.size(),
                 ModelFileHash(text));
    }
    if (absl::Status s = WriteFile((dir / "TRAINING.md").string(), summary); !s.ok()) return s;
    std::cout << summary;
  }
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  CLI::App app{"psched-train: train GBDT latency models from measurements"};
  app.require_subcommand(1);

  std::string data, ops_out, totals_out;
  CLI::App* import = app.add_subcommand("import-mobile-ml-benchmark",
                                        "convert the phone data into psched measurement CSVs");
  import->add_option("--data", data, "folder with tflite_cnn_ops_gpu.csv and tflite_cnn_e2e.csv")
      ->required();
  import->add_option("--ops-out", ops_out, "op table CSV to write")->required();
  import->add_option("--totals-out", totals_out, "totals CSV to write")->required();

  FitFlags fit_flags;
  CLI::App* fit =
      app.add_subcommand("fit", "train one device's model file and report its held-out error");
  fit->add_option("--ops", fit_flags.ops, "op table CSV")->required();
  fit->add_option("--totals", fit_flags.totals, "totals CSV (devices without per-op latencies)");
  fit->add_option("--device", fit_flags.device, "measured device id, e.g. pixel4/gpu")->required();
  fit->add_flag("--gpu", fit_flags.gpu, "the device is a GPU (adds dispatch features)");
  fit->add_option("--dispatch", fit_flags.dispatch,
                  "GPU dispatch scheme (tflite-gpu, tflite-gpu-winograd)");
  fit->add_option("--out", fit_flags.out, "model file to write")->required();
  fit->add_option("--report", fit_flags.report, "also write the error tables (Markdown) here");
  AddBoosterFlags(fit, fit_flags);

  std::string eval_ops, eval_device, eval_model;
  CLI::App* eval = app.add_subcommand("eval", "MAPE per family of a model file on an op table");
  eval->add_option("--ops", eval_ops, "op table CSV")->required();
  eval->add_option("--device", eval_device, "device id whose measurements to compare")->required();
  eval->add_option("--model", eval_model, "model file")->required();

  std::string phone_data, phone_out;
  FitFlags phone_flags;
  CLI::App* phone =
      app.add_subcommand("phone-models", "regenerate every shipped data-backed platform");
  phone->add_option("--data", phone_data, "the mobile-ml-benchmark folder")->required();
  phone->add_option("--out-dir", phone_out, "where <platform>/<device>.gbdt go")->required();
  AddBoosterFlags(phone, phone_flags);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  absl::Status status;
  if (*import) {
    status = RunImport(data, ops_out, totals_out);
  } else if (*fit) {
    if (fit_flags.gpu && fit_flags.dispatch.empty()) {
      status = absl::InvalidArgumentError("--gpu needs --dispatch");
    } else {
      status = RunFit(fit_flags);
    }
  } else if (*eval) {
    status = RunEval(eval_ops, eval_device, eval_model);
  } else {
    status = RunPhoneModels(phone_data, phone_out, phone_flags);
  }
  if (!status.ok()) {
    fmt::print(stderr, "psched-train: {}\n", std::string(status.message()));
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace psched::predictor::gbdt::training

int main(int argc, char** argv) { return psched::predictor::gbdt::training::Main(argc, argv); }
