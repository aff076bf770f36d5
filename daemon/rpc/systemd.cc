#include "daemon/rpc/systemd.h"

#include <syslog.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include "spdlog/sinks/base_sink.h"

namespace psched::daemon::systemd {
namespace {

int Priority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return LOG_DEBUG;
    case spdlog::level::info:
      return LOG_INFO;
    case spdlog::level::warn:
      return LOG_WARNING;
    case spdlog::level::err:
      return LOG_ERR;
    case spdlog::level::critical:
      return LOG_CRIT;
    default:
      return LOG_INFO;
  }
}

class JournalSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit JournalSink(std::string identifier) : identifier_(std::move(identifier)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string text(msg.payload.data(), msg.payload.size());
    if (msg.source.filename != nullptr) {
      sd_journal_send("MESSAGE=%s", text.c_str(), "PRIORITY=%d", Priority(msg.level),
                      "SYSLOG_IDENTIFIER=%s", identifier_.c_str(), "CODE_FILE=%s",
                      msg.source.filename, "CODE_LINE=%d", msg.source.line, nullptr);
    } else {
      sd_journal_send("MESSAGE=%s", text.c_str(), "PRIORITY=%d", Priority(msg.level),
                      "SYSLOG_IDENTIFIER=%s", identifier_.c_str(), nullptr);
    }
  }
  void flush_() override {}

 private:
  const std::string identifier_;
};

}  // namespace

void NotifyReady() { sd_notify(0, "READY=1"); }

void NotifyStatus(const std::string& status) {
  sd_notifyf(0, "STATUS=%s", status.c_str());
}

void NotifyWatchdog() { sd_notify(0, "WATCHDOG=1"); }

void NotifyStopping() { sd_notify(0, "STOPPING=1"); }

std::optional<absl::Duration> WatchdogInterval() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return std::nullopt;
  return absl::Microseconds(static_cast<int64_t>(usec));
}

std::vector<int> ListenFds() {
  int n = sd_listen_fds(1);
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) fds.push_back(SD_LISTEN_FDS_START + i);
  return fds;
}

bool UnderSystemd() {
  return std::getenv("JOURNAL_STREAM") != nullptr || std::getenv("INVOCATION_ID") != nullptr;
}

std::shared_ptr<spdlog::sinks::sink> MakeJournalSink(const std::string& identifier) {
  return std::make_shared<JournalSink>(identifier);
}

}  // namespace psched::daemon::systemd
