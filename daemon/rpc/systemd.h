// systemd integration: readiness/watchdog notifications, socket activation and the journal.
//
// Every function is a no-op outside systemd: Notify* send nothing when NOTIFY_SOCKET is
// unset, ListenFds() is empty without LISTEN_FDS/LISTEN_PID naming this process. Thin
// wrappers over libsystemd (sd_notify, sd_listen_fds, sd_journal_send); thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "spdlog/sinks/sink.h"

namespace psched::daemon::systemd {

void NotifyReady();
void NotifyStatus(const std::string& status);
void NotifyWatchdog();
void NotifyStopping();

// The watchdog interval systemd expects pings within (WATCHDOG_USEC), when enabled for this
// process.
std::optional<absl::Duration> WatchdogInterval();

// File descriptors passed by socket activation (SD_LISTEN_FDS_START...). The environment
// variables are unset afterwards so children do not inherit them.
std::vector<int> ListenFds();

// True when stdout/stderr go to the journal or the process is a systemd unit.
bool UnderSystemd();

// A spdlog sink writing structured entries (MESSAGE, PRIORITY, SYSLOG_IDENTIFIER,
// CODE_FILE/CODE_LINE) with sd_journal_send.
std::shared_ptr<spdlog::sinks::sink> MakeJournalSink(const std::string& identifier);

}  // namespace psched::daemon::systemd
