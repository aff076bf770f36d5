// pschedctl: the admin CLI of pschedd (noun-verb commands; see docs/api.md and
// `pschedctl --help`). Talks to the daemon through psched::client::Client; `model inspect
// FILE` and `platform discover` run locally and need no daemon. This file wires flags to the
// commands of commands.h.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/pschedctl/commands.h"

namespace psched::pschedctl {
namespace {

int Main(int argc, char** argv) {
  CLI::App app{"pschedctl: control pschedd (models, plans, inference, cache)"};
  app.require_subcommand(1);
  Globals g;
  const char* env_socket = std::getenv("PSCHED_SOCKET");
  g.socket = env_socket != nullptr ? env_socket : "/run/pschedd/pschedd.sock";
  app.add_option("--socket", g.socket, "pschedd's unix socket ($PSCHED_SOCKET)")
      ->capture_default_str();
  app.add_option("--timeout", g.timeout_s, "seconds each call may take")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("-o,--output", g.output, "table or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));

  std::function<void()> action;
  app.add_subcommand("status", "daemon version, uptime, devices, queue and cache")->callback([&] {
    action = [&] { CmdStatus(g); };
  });

  CLI::App* platform = app.add_subcommand("platform", "the devices pschedd plans for");
  platform->require_subcommand(1);
  platform->add_subcommand("show", "devices, and the CPU clusters discovery found and why")
      ->callback([&] { action = [&] { CmdPlatformShow(g); }; });
  std::string sysfs_root;
  CLI::App* discover = platform->add_subcommand(
      "discover", "CPU clusters of this machine or of a copied sysfs tree (no daemon)");
  discover->add_option("--sysfs-root", sysfs_root,
                       "a board's /sys/devices/system/cpu copy (default: this machine's)");
  discover->callback([&] { action = [&] { CmdPlatformDiscover(g, sysfs_root); }; });

  CLI::App* model = app.add_subcommand("model", "register, list, remove and inspect models");
  model->require_subcommand(1);
  std::string file, id;
  ModelAddFlags model_add;
  CLI::App* add = model->add_subcommand(
      "add", "register an ONNX model (external data inlined from beside it); prints its id");
  add->add_option("FILE", model_add.file, "ONNX file")->required()->check(CLI::ExistingFile);
  add->add_option("--name", model_add.name, "model name (default: the file's stem)");
  add->add_option("--input-shape", model_add.input_shapes,
                  "NAME=DIMS, e.g. x=1x3x224x224: binds the input's symbolic dims (repeatable)");
  add->add_flag("--synthetic-weights", model_add.synthetic,
                "fill absent weights so the model can run");
  add->add_flag("--graph-only", model_add.graph_only,
                "send the graph without its external data, for planning only");
  add->callback([&] { action = [&] { CmdModelAdd(g, model_add); }; });
  model->add_subcommand("ls", "list registered models")->callback([&] {
    action = [&] { CmdModelLs(g); };
  });
  CLI::App* rm = model->add_subcommand("rm", "remove a model and its cached plans");
  rm->add_option("ID", id, "model id or unique prefix")->required();
  rm->callback([&] { action = [&] { CmdModelRm(g, id); }; });
  CLI::App* inspect = model->add_subcommand("inspect", "graph summary of a file or model id");
  inspect->add_option("TARGET", file, "ONNX file (imported locally) or model id")->required();
  std::vector<std::string> inspect_shapes;
  inspect->add_option("--input-shape", inspect_shapes, "NAME=DIMS for a file (repeatable)");
  inspect->callback([&] { action = [&] { CmdModelInspect(g, file, inspect_shapes); }; });

  CLI::App* plan = app.add_subcommand("plan", "partition-aware schedules");
  plan->require_subcommand(1);
  std::string scheduler, svg;
  std::vector<std::string> plan_options;
  bool refresh = false;
  CLI::App* show = plan->add_subcommand("show", "get (or compute) the plan of a model");
  show->add_option("ID", id, "model id or unique prefix")->required();
  show->add_option("--scheduler", scheduler, "scheduler name (default: the daemon's)");
  show->add_option("--option", plan_options, "scheduler option KEY=VALUE (repeatable)");
  show->add_flag("--refresh", refresh, "recompute even if cached");
  show->add_option("--svg", svg, "also write a Gantt chart of the plan");
  show->callback(
      [&] { action = [&] { CmdPlanShow(g, id, scheduler, plan_options, refresh, svg); }; });
  std::string bundle_path;
  CLI::App* plan_export =
      plan->add_subcommand("export", "write the model's cached plans as a plan bundle");
  plan_export->add_option("ID", id, "model id or unique prefix")->required();
  plan_export->add_option("--scheduler", scheduler, "only this scheduler's plans (default: all)");
  plan_export->add_option("--out", bundle_path, "bundle file to write")->required();
  plan_export->callback([&] { action = [&] { CmdPlanExport(g, id, scheduler, bundle_path); }; });
  CLI::App* plan_import =
      plan->add_subcommand("import", "store a plan bundle's plans in the daemon's cache (admin)");
  plan_import->add_option("FILE", bundle_path, "plan bundle file")
      ->required()
      ->check(CLI::ExistingFile);
  plan_import->callback([&] { action = [&] { CmdPlanImport(g, bundle_path); }; });

  std::string input, output, trace;
  int repeat = 1;
  CLI::App* infer = app.add_subcommand("infer", "run one or more inferences");
  infer->add_option("ID", id, "model id or unique prefix")->required();
  infer->add_option("--input", input, "input .npy in the model's declared shape (default: zeros)")
      ->check(CLI::ExistingFile);
  infer->add_option("--output", output, "write the first output as .npy");
  infer->add_option("--repeat", repeat, "number of inferences")->capture_default_str();
  infer->add_option("--trace", trace, "write per-subtask timings (Chrome trace JSON)");
  infer->add_option("--scheduler", scheduler, "plan to execute (default: the daemon's)");
  infer->callback(
      [&] { action = [&] { CmdInfer(g, id, input, output, repeat, trace, scheduler); }; });

  double budget_s = 3;
  CLI::App* calibrate = app.add_subcommand(
      "calibrate", "time the registered models' ops on the daemon's devices and plan with the fit");
  calibrate->add_option("--budget-s", budget_s, "timing budget per device, seconds (0, 15]")
      ->capture_default_str();
  calibrate->callback([&] { action = [&] { CmdCalibrate(g, budget_s); }; });

  CLI::App* cache = app.add_subcommand("cache", "the plan cache");
  cache->require_subcommand(1);
  bool all = false;
  cache->add_subcommand("stats", "counts and size")->callback([&] {
    action = [&] { CmdCacheStats(g); };
  });
  cache->add_subcommand("ls", "cached plans")->callback([&] { action = [&] { CmdCacheLs(g); }; });
  CLI::App* purge = cache->add_subcommand("purge", "delete cached plans");
  purge->add_flag("--all", all, "also delete every registered model");
  purge->callback([&] { action = [&] { CmdCachePurge(g, all); }; });
  cache->add_subcommand("verify", "hash every stored model against its id, validate the plans")
      ->callback([&] { action = [&] { CmdCacheVerify(g); }; });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" that exit 0; every real one exits 1 as documented
    // (CLI11's own codes, 105-109, would leak its internals into scripts).
    return app.exit(e) == 0 ? 0 : 1;
  }
  try {
    action();
  } catch (const CommandError& e) {
    std::fprintf(stderr, "pschedctl: %s\n", e.message.c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace psched::pschedctl

int main(int argc, char** argv) { return psched::pschedctl::Main(argc, argv); }
