// pschedctl's commands, one function per noun-verb command (docs/api.md lists them and their
// output). Each talks to pschedd through the typed client (command_context.h), prints a table
// or JSON (output.h) and throws CommandError on failure. Internal to pschedctl.
#pragma once

#include <string>
#include <vector>

#include "client/pschedctl/command_context.h"

namespace psched::pschedctl {

// admin_commands.cc: the daemon, calibration and the plan cache.
void CmdStatus(const Globals& g);
void CmdCalibrate(const Globals& g, double budget_s);
void CmdCacheStats(const Globals& g);
void CmdCacheLs(const Globals& g);
void CmdCachePurge(const Globals& g, bool all);
void CmdCacheVerify(const Globals& g);

// platform_commands.cc: the devices and what CPU topology discovery found.
void CmdPlatformShow(const Globals& g);
// Runs CPU topology discovery here, no daemon: on this machine (empty root, or the live
// one) or on a copy of a board's sysfs CPU tree.
void CmdPlatformDiscover(const Globals& g, const std::string& sysfs_root);

// model_commands.cc: registered models; `model inspect FILE` imports locally, no daemon.
struct ModelAddFlags {
  std::string file;
  std::string name;  // empty: the file's stem
  bool synthetic = false;
  bool graph_only = false;
  std::vector<std::string> input_shapes;  // NAME=DIMS, as typed
};
// Sends the model with its external data inlined from the files beside it.
void CmdModelAdd(const Globals& g, const ModelAddFlags& flags);
void CmdModelLs(const Globals& g);
void CmdModelRm(const Globals& g, const std::string& id);
void CmdModelInspect(const Globals& g, const std::string& target,
                     const std::vector<std::string>& input_shapes);

// plan_commands.cc: a model's plan, optionally drawn as a Gantt chart.
void CmdPlanShow(const Globals& g, const std::string& id, const std::string& scheduler,
                 const std::vector<std::string>& option_list, bool refresh,
                 const std::string& svg_path);
// Writes the model's cached plans for the daemon's platform as a plan bundle to `out_path`.
void CmdPlanExport(const Globals& g, const std::string& id, const std::string& scheduler,
                   const std::string& out_path);
// Sends a plan bundle file to the daemon, which stores its plans (admin role).
void CmdPlanImport(const Globals& g, const std::string& path);

// infer_commands.cc: inference, its outputs and its trace.
void CmdInfer(const Globals& g, const std::string& id, const std::string& input_path,
              const std::string& output_path, int repeat, const std::string& trace_path,
              const std::string& scheduler);

}  // namespace psched::pschedctl
