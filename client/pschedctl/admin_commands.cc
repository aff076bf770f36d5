#include <cstdio>
#include <iostream>

#include "client/pschedctl/commands.h"
#include "client/pschedctl/output.h"

namespace psched::pschedctl {

void CmdStatus(const Globals& g) {
  auto client = Connect(g);
  v1::StatusResponse status = Check(client.Status());
  if (g.json()) {
    json devices = json::array();
    for (const auto& d : status.devices()) devices.push_back(DeviceJson(d));
    PrintJson({{"version", status.version()},
               {"uptime_s", status.uptime_s()},
               {"platform", status.platform()},
               {"executor", status.executor()},
               {"default_scheduler", status.default_scheduler()},
               {"devices", devices},
               {"models", status.models()},
               {"queue_depth", status.queue_depth()},
               {"queue_capacity", status.queue_capacity()},
               {"inferences", status.inferences()},
               {"calibration", status.calibration()},
               {"cache", CacheJson(status.cache())},
               {"resources", ResourcesJson(status.resources())}});
    return;
  }
  std::cout << "pschedd " << status.version() << ", up " << Fixed(status.uptime_s()) << " s\n"
            << "platform:  " << status.platform() << " (executor " << status.executor()
            << ", default scheduler " << status.default_scheduler() << ")\n"
            << "devices:  ";
  for (const auto& d : status.devices()) {
    std::cout << " " << d.name() << "(" << d.kind() << ")";
  }
  std::cout << "\nmodels:    " << status.models() << "\nqueue:     " << status.queue_depth()
            << " / " << status.queue_capacity() << " (" << status.inferences()
            << " inferences served)\ncache:     " << status.cache().plans() << " plans, "
            << status.cache().hits() << " hits, " << status.cache().misses() << " misses, "
            << status.cache().db_bytes() << " bytes in " << status.cache().path() << "\n"
            << "calibration: " << status.calibration() << "\n";
  if (!status.has_resources()) return;
  const v1::ResourceUsage& r = status.resources();
  std::cout << "bounds:\n"
            << "  disk:        " << HumanBytes(r.cache_bytes()) << " of "
            << HumanBytes(r.cache_max_bytes()) << " (cache_max_bytes)\n"
            << "  your models: " << r.caller_models() << " of " << r.max_models_per_user()
            << ", " << HumanBytes(r.caller_model_bytes()) << " of "
            << HumanBytes(r.max_model_bytes_per_user()) << " (max_models_per_user, "
            << "max_model_bytes_per_user" << (r.quota_exempt() ? "; you are exempt: admin" : "")
            << ")\n"
            << "  loaded:      " << r.loaded_models() << " of " << r.max_loaded_models()
            << " models, " << HumanBytes(r.loaded_bytes()) << " of "
            << HumanBytes(r.max_loaded_bytes()) << " (max_loaded_bytes)\n"
            << "  one plan:    at most " << HumanBytes(r.max_plan_memory_bytes())
            << " at its peak (max_plan_memory_bytes)\n"
            << "  planning:    " << r.planning() << " of " << r.max_concurrent_plans()
            << " slots busy, " << r.planning_queued() << " queued (max_concurrent_plans), "
            << r.max_planning_s() << " s per request (max_planning_s)\n";
}

void CmdCalibrate(const Globals& g, double budget_s) {
  auto client = Connect(g);
  auto progress = [](const v1::CalibrationProgress& p) {
    if (p.finished()) {
      std::fprintf(stderr, "[%s] done: %d samples, %d skipped in %.1f s\n", p.device().c_str(),
                   p.cases_done(), p.cases_skipped(), p.elapsed_s());
    } else if (p.cases_done() == 0) {
      std::fprintf(stderr, "[%s] timing for %.1f s\n", p.device().c_str(), p.budget_s());
    }
  };
  v1::CalibrationResult result = Check(client.Calibrate(budget_s, progress));
  if (g.json()) {
    json report = json::parse(result.report_json(), nullptr, false);
    PrintJson({{"predictor_version", result.predictor_version()},
               {"samples", result.samples()},
               {"skipped_devices", std::vector<std::string>(result.skipped_devices().begin(),
                                                            result.skipped_devices().end())},
               {"report", report.is_discarded() ? json() : report}});
    return;
  }
  for (const std::string& skipped : result.skipped_devices()) {
    std::cout << "skipped " << skipped << "\n";
  }
  std::cout << result.samples() << " samples; held-out errors:\n"
            << result.error_table() << "plans now use predictor " << result.predictor_version()
            << "\n";
}

void CmdCacheStats(const Globals& g) {
  auto client = Connect(g);
  v1::CacheStatsResponse stats = Check(client.CacheStats());
  if (g.json()) {
    PrintJson(CacheJson(stats));
    return;
  }
  PrintTable(
      {"MODELS", "PLANS", "HITS", "MISSES", "BYTES", "PATH"},
      {{std::to_string(stats.models()), std::to_string(stats.plans()), std::to_string(stats.hits()),
        std::to_string(stats.misses()), std::to_string(stats.db_bytes()), stats.path()}});
}

void CmdCacheLs(const Globals& g) {
  auto client = Connect(g);
  v1::ListCachedPlansResponse plans = Check(client.ListCachedPlans());
  if (g.json()) {
    json out = json::array();
    for (const auto& p : plans.plans()) {
      out.push_back({{"model_id", p.model_id()},
                     {"scheduler", p.scheduler()},
                     {"scheduler_config", p.scheduler_config()},
                     {"platform_fingerprint", p.platform_fingerprint()},
                     {"predictor_version", p.predictor_version()},
                     {"makespan_us", p.makespan_us()},
                     {"planning_ms", p.planning_ms()},
                     {"hits", p.hits()},
                     {"created_unix_s", p.created_unix_s()}});
    }
    PrintJson({{"plans", out}});
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : plans.plans()) {
    rows.push_back({Short(p.model_id()), p.scheduler_config(), Fixed(p.makespan_us()),
                    Fixed(p.planning_ms(), 2), std::to_string(p.hits())});
  }
  PrintTable({"MODEL", "SCHEDULER", "MAKESPAN_US", "PLANNING_MS", "HITS"}, rows);
}

void CmdCachePurge(const Globals& g, bool all) {
  auto client = Connect(g);
  v1::PurgeCacheResponse purged = Check(client.PurgeCache(all));
  if (g.json()) {
    PrintJson(
        {{"plans_removed", purged.plans_removed()}, {"models_removed", purged.models_removed()}});
  } else {
    std::cout << "removed " << purged.plans_removed() << " plans and " << purged.models_removed()
              << " models\n";
  }
}

void CmdCacheVerify(const Globals& g) {
  auto client = Connect(g);
  v1::VerifyCacheResponse report = Check(client.VerifyCache());
  if (g.json()) {
    json problems = json::array();
    for (const auto& p : report.problems()) {
      problems.push_back({{"model_id", p.model_id()},
                          {"scheduler_config", p.scheduler_config()},
                          {"reason", p.reason()}});
    }
    PrintJson({{"models_checked", report.models_checked()},
               {"plans_checked", report.plans_checked()},
               {"plans_skipped", report.plans_skipped()},
               {"problems", problems}});
  } else {
    std::cout << "checked " << report.models_checked() << " models and " << report.plans_checked()
              << " plans (" << report.plans_skipped()
              << " plans of other platforms or predictors skipped)\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& p : report.problems()) {
      rows.push_back({Short(p.model_id()),
                      p.scheduler_config().empty() ? "(model bytes)" : p.scheduler_config(),
                      p.reason()});
    }
    if (!rows.empty()) PrintTable({"MODEL", "WHAT", "PROBLEM"}, rows);
  }
  if (report.problems_size() > 0) {
    throw CommandError{absl::StrCat(
        report.problems_size(),
        " problem(s): damaged models are quarantined until their original file is added "
        "again; invalid plans are recomputed when next asked for")};
  }
}

}  // namespace psched::pschedctl
