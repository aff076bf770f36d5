#include "daemon/rpc/listener.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace psched::daemon {
namespace {

std::string Errno() { return std::strerror(errno); }

absl::StatusOr<sockaddr_un> Address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "socket path '", path, "' is empty or longer than ", sizeof(addr.sun_path) - 1, " bytes"));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// True when some process accepts connections on the socket file at `path`.
bool SomeoneAnswers(const sockaddr_un& addr) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool answered = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return answered;
}

}  // namespace

Listener::Listener(int fd, std::string path, bool owns_path)
    : fd_(fd), path_(std::move(path)), owns_path_(owns_path) {
  if (pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
}

Listener::~Listener() {
  Stop();
  for (int fd : wake_) {
    if (fd >= 0) close(fd);
  }
}

absl::StatusOr<std::unique_ptr<Listener>> Listener::Bind(const std::string& path) {
  absl::StatusOr<sockaddr_un> addr = Address(path);
  if (!addr.ok()) return addr.status();
  namespace fs = std::filesystem;
  fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !fs::exists(dir, ec)) {
    // A directory we create is ours alone plus the socket's group (0750), whatever the umask.
    fs::create_directories(dir, ec);
    if (!ec) {
      fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec,
                      ec);
    }
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create socket directory ", dir.string(), ": ", ec.message()));
    }
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " exists and is not a socket; refusing to replace it"));
    }
    if (SomeoneAnswers(*addr)) {
      return absl::AlreadyExistsError(
          absl::StrCat("another server (pschedd?) is already answering on ", path));
    }
    spdlog::info("removing stale socket {}", path);
    if (unlink(path.c_str()) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot remove stale socket ", path, ": ", Errno()));
    }
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket(): ", Errno()));
  // bind() creates the socket file with 0777 & ~umask: under umask 0117 it is born owner and
  // group read/write, never looser, not even until the chmod below (which only makes the
  // mode explicit). The umask is process-wide; binding happens at start-up, before any
  // thread of ours creates files.
  const mode_t previous_umask = umask(0117);
  const int bound = bind(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr));
  const std::string bind_error = bound != 0 ? Errno() : "";
  umask(previous_umask);
  if (bound != 0) {
    close(fd);
    return absl::FailedPreconditionError(absl::StrCat("cannot bind ", path, ": ", bind_error));
  }
  // Owner and group read/write: clients join the socket's group to talk to the daemon.
  if (chmod(path.c_str(), 0660) != 0 || listen(fd, SOMAXCONN) != 0) {
    std::string reason = Errno();
    close(fd);
    unlink(path.c_str());
    return absl::FailedPreconditionError(absl::StrCat("cannot listen on ", path, ": ", reason));
  }
  return std::unique_ptr<Listener>(new Listener(fd, path, /*owns_path=*/true));
}

absl::StatusOr<std::unique_ptr<Listener>> Listener::Adopt(int fd) {
  int type = 0;
  int listening = 0;
  socklen_t type_len = sizeof(type);
  socklen_t listening_len = sizeof(listening);
  sockaddr_un addr{};
  socklen_t addr_len = sizeof(addr);
  bool usable = getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) == 0 && type == SOCK_STREAM &&
                getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &listening_len) == 0 &&
                listening != 0 &&
                getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addr_len) == 0 &&
                addr.sun_family == AF_UNIX;
  if (!usable) {
    return absl::FailedPreconditionError(
        absl::StrCat("socket-activation fd ", fd,
                     " is not a listening unix stream socket (check ListenStream= in "
                     "pschedd.socket)"));
  }
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  std::string path = addr_len > sizeof(sa_family_t) ? std::string(addr.sun_path) : "";
  return std::unique_ptr<Listener>(new Listener(fd, path, /*owns_path=*/false));
}

void Listener::Start(ConnectionFn on_connection) {
  thread_ = std::thread([this, fn = std::move(on_connection)] { AcceptLoop(fn); });
}

void Listener::AcceptLoop(ConnectionFn on_connection) {
  while (true) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    int n = poll(fds, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      spdlog::error("poll on {} failed: {}", path_, Errno());
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    int conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (conn < 0) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
        spdlog::warn("accept on {} failed: {}", path_, Errno());
        // Out of fds or memory: back off instead of spinning.
        usleep(100000);
      }
      continue;
    }
    on_connection(fd_, conn);
  }
}

void Listener::Stop() {
  if (thread_.joinable()) {
    char byte = 1;
    if (write(wake_[1], &byte, 1) < 0) spdlog::warn("cannot wake the accept thread: {}", Errno());
    thread_.join();
  }
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
    if (owns_path_) unlink(path_.c_str());
  }
}

}  // namespace psched::daemon
