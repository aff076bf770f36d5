#include "daemon/rpc/listener.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace psched::daemon {
namespace {

namespace fs = std::filesystem;

class ListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "psched_listener_XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(ListenerTest, BindsWithDirectoryAndGroupMode) {
  std::string path = dir_ + "/sub/dir/pschedd.sock";
  auto listener = Listener::Bind(path);
  ASSERT_TRUE(listener.ok()) << listener.status();
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_FALSE((*listener)->activated());
  (*listener)->Stop();
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(ListenerTest, HandsAcceptedConnectionsToTheCallback) {
  std::string path = dir_ + "/s.sock";
  auto listener = Listener::Bind(path);
  ASSERT_TRUE(listener.ok());
  std::atomic<int> accepted{0};
  (*listener)->Start([&](int, int fd) {
    ++accepted;
    close(fd);
  });
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  for (int i = 0; i < 3; ++i) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    close(fd);
  }
  for (int i = 0; i < 200 && accepted.load() < 3; ++i) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(accepted.load(), 3);
  (*listener)->Stop();
}

TEST_F(ListenerTest, RefusesWhenSomeoneAnswersAndReplacesStaleSockets) {
  std::string path = dir_ + "/s.sock";
  auto first = Listener::Bind(path);
  ASSERT_TRUE(first.ok());
  auto second = Listener::Bind(path);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(second.status().message().find(path), std::string::npos) << second.status();

  // A socket file whose listener is gone is stale.
  int stale = socket(AF_UNIX, SOCK_STREAM, 0);
  std::string stale_path = dir_ + "/stale.sock";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, stale_path.c_str());
  ASSERT_EQ(bind(stale, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(stale);
  auto replaced = Listener::Bind(stale_path);
  EXPECT_TRUE(replaced.ok()) << replaced.status();
}

TEST_F(ListenerTest, RefusesNonSocketsAndBadPaths) {
  std::string file = dir_ + "/regular";
  std::ofstream(file) << "data";
  auto not_socket = Listener::Bind(file);
  EXPECT_EQ(not_socket.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(not_socket.status().message().find("not a socket"), std::string::npos);
  EXPECT_TRUE(fs::exists(file));

  auto too_long = Listener::Bind(dir_ + "/" + std::string(200, 'x'));
  EXPECT_EQ(too_long.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Listener::Bind("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ListenerTest, AdoptChecksTheFd) {
  int datagram = socket(AF_UNIX, SOCK_DGRAM, 0);
  auto wrong_type = Listener::Adopt(datagram);
  EXPECT_EQ(wrong_type.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(wrong_type.status().message().find("ListenStream"), std::string::npos);
  close(datagram);

  int unbound = socket(AF_UNIX, SOCK_STREAM, 0);
  EXPECT_EQ(Listener::Adopt(unbound).status().code(), absl::StatusCode::kFailedPrecondition);
  close(unbound);

  std::string path = dir_ + "/activated.sock";
  int listening = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(bind(listening, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listening, 4), 0);
  auto adopted = Listener::Adopt(listening);
  ASSERT_TRUE(adopted.ok()) << adopted.status();
  EXPECT_TRUE((*adopted)->activated());
  EXPECT_EQ((*adopted)->path(), path);
  (*adopted)->Stop();
  // systemd owns an activated socket's file.
  EXPECT_TRUE(fs::exists(path));
}

}  // namespace
}  // namespace psched::daemon
