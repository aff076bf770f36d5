#include "daemon/rpc/connections.h"

#include <sys/socket.h>
#include <sys/stat.h>

namespace psched::daemon {
namespace {

// The device and inode of the socket at `fd`; {0, 0} when fd is closed or not a socket.
std::pair<dev_t, ino_t> SocketAt(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return {0, 0};
  return {st.st_dev, st.st_ino};
}

}  // namespace

void Connections::Add(int fd) {
  const std::pair<dev_t, ino_t> socket = SocketAt(fd);
  sync::MutexLock lock(&mu_);
  socket_by_fd_[fd] = socket;
}

int Connections::HangUpAll() {
  sync::MutexLock lock(&mu_);
  int hung_up = 0;
  for (const auto& [fd, socket] : socket_by_fd_) {
    if (socket.second == 0 || SocketAt(fd) != socket) continue;  // closed since, or reused
    if (shutdown(fd, SHUT_RDWR) == 0) ++hung_up;
  }
  socket_by_fd_.clear();
  return hung_up;
}

}  // namespace psched::daemon
