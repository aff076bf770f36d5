// pschedd: the psched daemon. See docs/operations.md.
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>

#include <cstdio>
#include <iostream>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "daemon/backends/host_backend.h"
#include "daemon/engine/config.h"
#include "daemon/rpc/server.h"
#include "daemon/rpc/systemd.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace {

int Fail(const std::string& reason) {
  std::fprintf(stderr, "pschedd: %s\n", reason.c_str());
  return 1;
}

void SetupLogging(const std::string& level) {
  std::vector<spdlog::sink_ptr> sinks;
  if (psched::daemon::systemd::UnderSystemd()) {
    sinks.push_back(psched::daemon::systemd::MakeJournalSink("pschedd"));
  } else {
    sinks.push_back(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  }
  auto logger = std::make_shared<spdlog::logger>("pschedd", sinks.begin(), sinks.end());
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace

int main(int argc, char** argv) {
  // glibc gives threads that allocate at once their own arenas (up to 8 per core) and keeps
  // what is freed in each: under gRPC's handler threads and the planners, RSS reached 3x the
  // live heap and kept rising (docs/security.md, "Durability and soak"). With two arenas it
  // stays flat. Set before any thread starts; MALLOC_ARENA_MAX in the environment wins.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);
  // Debian builds abseil without NDEBUG, which leaves absl::Mutex's deadlock detector on: every
  // lock and unlock then updates a process-wide lock graph under its own global lock (seen as
  // GraphCycles in profiles of the request path). Lock order is checked by clang's
  // -Wthread-safety build and the tests, not at run time.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{"pschedd: partition-aware scheduling daemon for heterogeneous inference"};
  std::string config_file, socket, state_dir, log_level;
  bool print_default_config = false;
  bool no_auto_calibrate = false;
  app.add_option("--config", config_file, "TOML config file (see --print-default-config)");
  app.add_option("--socket", socket, "unix socket to serve on [/run/pschedd/pschedd.sock]");
  app.add_option("--state-dir", state_dir, "directory for the SQLite cache [/var/lib/pschedd]");
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|critical|off [info]")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.add_flag("--no-auto-calibrate", no_auto_calibrate,
               "do not calibrate the devices in the background at first start (auto_calibrate)");
  app.add_flag("--print-default-config", print_default_config,
               "print the default configuration (TOML) and exit");
  app.set_version_flag("--version", PSCHED_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return Fail(e.what());
  }
  if (print_default_config) {
    std::cout << psched::daemon::DefaultConfigToml();
    return 0;
  }

  psched::daemon::DaemonConfig config;
  if (!config_file.empty()) {
    absl::StatusOr<psched::daemon::DaemonConfig> loaded =
        psched::daemon::LoadConfigFile(config_file);
    if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
    config = std::move(*loaded);
  }
  if (!socket.empty()) config.socket = socket;
  if (!state_dir.empty()) config.state_dir = state_dir;
  if (!log_level.empty()) config.log_level = log_level;
  if (no_auto_calibrate) config.auto_calibrate = false;
  SetupLogging(config.log_level);

  // Signals are taken synchronously by this thread; every thread started later inherits
  // the mask, so SIGTERM never interrupts a worker.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // PoCL's CPU "GPU" would otherwise start one worker per core and compete with the CPU
  // devices; one worker, pinned to the GPU's core, keeps it a device of its own.
  setenv("POCL_MAX_PTHREAD_COUNT", "1", /*overwrite=*/0);
  psched::daemon::systemd::NotifyStatus("loading the platform");
  absl::StatusOr<std::unique_ptr<psched::daemon::Backend>> backend =
      psched::daemon::MakeHostBackend(config);
  if (!backend.ok()) return Fail(std::string(backend.status().message()));
  absl::StatusOr<std::unique_ptr<psched::daemon::Server>> server =
      psched::daemon::Server::Start(config, std::move(*backend));
  if (!server.ok()) return Fail(std::string(server.status().message()));

  int received = 0;
  sigwait(&signals, &received);
  spdlog::info("received {}", received == SIGTERM ? "SIGTERM" : "SIGINT");
  (*server)->Stop();
  return 0;
}
