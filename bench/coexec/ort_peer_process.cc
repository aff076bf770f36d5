#include "bench/coexec/ort_peer_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace psched::bench {
namespace {

// The last line `command` prints, or an error with its exit status.
absl::StatusOr<std::string> LastLineOf(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError(absl::StrCat("cannot run ", command));
  std::string last;
  char line[4096];
  while (std::fgets(line, sizeof(line), pipe) != nullptr) last = line;
  const int rc = pclose(pipe);
  if (rc != 0) return absl::UnavailableError(absl::StrCat(command, ": exit status ", rc));
  return std::string(absl::StripTrailingAsciiWhitespace(last));
}

}  // namespace

absl::StatusOr<std::unique_ptr<OrtPeerProcess>> OrtPeerProcess::Start(
    const std::string& venv_script, const std::string& venv_dir, const std::string& peer_script) {
  absl::StatusOr<std::string> python = LastLineOf(absl::StrCat(venv_script, " ", venv_dir));
  if (!python.ok()) return python.status();
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    dup2(to_child[0], STDIN_FILENO);
    dup2(from_child[1], STDOUT_FILENO);
    for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) close(fd);
    execl(python->c_str(), python->c_str(), peer_script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  return std::unique_ptr<OrtPeerProcess>(
      new OrtPeerProcess(pid, fdopen(to_child[1], "w"), fdopen(from_child[0], "r")));
}

OrtPeerProcess::~OrtPeerProcess() {
  std::fclose(to_);  // EOF on its stdin ends the peer
  std::fclose(from_);
  int status = 0;
  waitpid(pid_, &status, 0);
}

absl::StatusOr<std::string> OrtPeerProcess::Command(const std::string& line) {
  if (std::fprintf(to_, "%s\n", line.c_str()) < 0 || std::fflush(to_) != 0) {
    return absl::UnavailableError(absl::StrCat("ONNX Runtime peer: cannot send '", line, "'"));
  }
  char reply[4096];
  if (std::fgets(reply, sizeof(reply), from_) == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("ONNX Runtime peer: no reply to '", line, "' (it exited)"));
  }
  absl::string_view text = absl::StripTrailingAsciiWhitespace(reply);
  if (absl::ConsumePrefix(&text, "error ")) {
    return absl::InternalError(absl::StrCat("ONNX Runtime peer: '", line, "': ", text));
  }
  return std::string(text);
}

absl::Status OrtPeerProcess::CommandOk(const std::string& line) {
  absl::StatusOr<std::string> reply = Command(line);
  if (!reply.ok()) return reply.status();
  if (*reply != "ok") return absl::InternalError(absl::StrCat("ONNX Runtime peer: ", *reply));
  return absl::OkStatus();
}

absl::Status OrtPeerProcess::Load(const std::string& name, const std::string& src,
                                  const std::string& dst) {
  return CommandOk(absl::StrCat("load ", name, " ", src, " ", dst));
}

absl::Status OrtPeerProcess::WriteProfile(const std::string& name, const std::string& csv) {
  return CommandOk(absl::StrCat("pdump ", name, " ", csv));
}

absl::StatusOr<double> OrtPeerProcess::RunMs(const std::string& name, int threads, bool profiled) {
  absl::StatusOr<std::string> reply =
      Command(profiled ? absl::StrCat("prun ", name) : absl::StrCat("run ", name, " ", threads));
  if (!reply.ok()) return reply.status();
  double ms = 0;
  if (!absl::SimpleAtod(*reply, &ms)) {
    return absl::InternalError(absl::StrCat("ONNX Runtime peer: '", *reply, "' is no latency"));
  }
  return ms;
}

}  // namespace psched::bench
