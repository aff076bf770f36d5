// End-to-end tests of the real pschedd binary: each test starts it on a private socket and
// state dir and drives it with pschedctl and the client library, playing systemd's part
// (socket activation, NOTIFY_SOCKET) over real sockets where needed.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cache/sqlite.h"
#include "client/client.h"
#include "client/session.h"
#include "executor/npy.h"
#include "executor/testing/tensor_compare.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx/onnx_pb.h"
#include "platform/cpu_topology.h"
#include "platform/sysfs_cpu.h"

namespace psched {
namespace {

using executor::testing::RelativeL2;

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kTinyModel = std::string(PSCHED_TEST_DATA_DIR) + "/tiny_cnn.onnx";
const std::string kTinyInput = std::string(PSCHED_TEST_DATA_DIR) + "/tiny_cnn.input.npy";
const std::string kTinyOutput = std::string(PSCHED_TEST_DATA_DIR) + "/tiny_cnn.output.npy";
const std::string kSysfsFixtures = PSCHED_SYSFS_FIXTURES;
// A config's [[devices]] entry for a one-core CPU device.
std::string CpuDeviceToml(const std::string& name, int core) {
  return absl::StrCat("\n[[devices]]\nname = \"", name, "\"\nkind = \"cpu\"\ncores = [", core,
                      "]\n");
}
// The per-core CPU devices of this 2-core host.
const std::string kCpu0Toml = CpuDeviceToml("cpu.0", 0);
const std::string kCpu1Toml = CpuDeviceToml("cpu.1", 1);

std::string SharedDir() {
  const char* dir = std::getenv("PSCHED_SHARED_DIR");
  return dir != nullptr ? dir : "";
}

std::string SqueezenetPath(const std::string& suffix) {
  return SharedDir() + "/models/reference/squeezenet_v1_1" + suffix;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Largest absolute difference, or infinity when sizes differ.
double MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::fabs(double{a[i]} - b[i]));
  return diff;
}

v1::Tensor TensorFromNpy(const std::string& path) {
  executor::NpyArray array = *executor::ReadNpy(path);
  v1::Tensor tensor;
  for (int64_t d : array.shape) tensor.add_dims(d);
  tensor.set_data(std::string(reinterpret_cast<const char*>(array.data.data()),
                              array.data.size() * sizeof(float)));
  return tensor;
}

std::vector<float> Floats(const v1::Tensor& tensor) {
  std::vector<float> values(tensor.data().size() / sizeof(float));
  std::memcpy(values.data(), tensor.data().data(), values.size() * sizeof(float));
  return values;
}

// Formats a non-negative integer without allocating (safe between fork and exec).
void FormatPid(char* out, pid_t pid) {
  char digits[16];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + pid % 10);
    pid /= 10;
  } while (pid > 0);
  while (n > 0) *out++ = digits[--n];
  *out = '\0';
}

// A process identity the tests (running as root) give a child: pschedd or pschedctl.
struct Identity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary
};

// Takes on `who` in a forked child; only system calls (safe between fork and exec).
void BecomeOrExit(const Identity& who) {
  if (setgroups(who.groups.size(), who.groups.data()) != 0 || setgid(who.gid) != 0 ||
      setuid(who.uid) != 0) {
    _exit(126);
  }
}

// The identities of the access tests. nobody/nogroup exist on every Debian system; the
// numeric ids below belong to no account, which the kernel does not mind.
Identity Nobody(std::vector<gid_t> groups) {
  return {getpwnam("nobody")->pw_uid, getgrnam("nogroup")->gr_gid, std::move(groups)};
}
Identity Root() { return {0, 0, {0}}; }

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PSCHED_TSAN_BUILD 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(PSCHED_TSAN_BUILD)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "psched_daemon_XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    socket_ = dir_ + "/run/pschedd.sock";
    state_ = dir_ + "/state";
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    fs::remove_all(dir_);
  }

  // Starts pschedd with `extra_args`; `listen_fd` >= 0 is passed as socket activation fd 3.
  // `as`: the identity pschedd runs as (default: the test's, root).
  pid_t Spawn(const std::vector<std::string>& extra_args,
              const std::vector<std::string>& extra_env = {}, int listen_fd = -1,
              bool with_listen_pid = false, const Identity* as = nullptr) {
    std::vector<std::string> args = {PSCHEDD_PATH};
    bool has_socket = false, has_state = false, has_level = false;
    for (const std::string& a : extra_args) {
      has_socket |= a == "--socket";
      has_state |= a == "--state-dir";
      has_level |= a == "--log-level";
    }
    if (!has_socket) args.insert(args.end(), {"--socket", socket_});
    if (!has_state) args.insert(args.end(), {"--state-dir", state_});
    if (!has_level) args.insert(args.end(), {"--log-level", "debug"});
    // A background calibration would change plans under most tests' feet; the tests of it
    // set auto_calibrate_.
    if (!auto_calibrate_) args.push_back("--no-auto-calibrate");
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string entry = *e;
      if (entry.rfind("NOTIFY_SOCKET=", 0) == 0 || entry.rfind("LISTEN_", 0) == 0 ||
          entry.rfind("WATCHDOG_", 0) == 0 || entry.rfind("INVOCATION_ID=", 0) == 0 ||
          entry.rfind("JOURNAL_STREAM=", 0) == 0) {
        continue;
      }
      env.push_back(entry);
    }
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> argv, envp;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    char listen_pid[32] = "LISTEN_PID=";
    for (std::string& e : env) envp.push_back(e.data());
    if (with_listen_pid) envp.push_back(listen_pid);
    envp.push_back(nullptr);
    std::string log_path = dir_ + "/pschedd.log";
    int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const pid_t test_pid = getpid();
    pid_t pid = fork();
    if (pid == 0) {
      FormatPid(listen_pid + std::strlen("LISTEN_PID="), getpid());
      if (as != nullptr) BecomeOrExit(*as);
      // A test that crashes (or a sanitizer that aborts it) skips TearDown: the daemon goes
      // with it instead of serving on as an orphan. Set after the identity change, which
      // clears it.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != test_pid) _exit(127);
      dup2(log_fd, 1);
      dup2(log_fd, 2);
      if (listen_fd >= 0) {
        if (listen_fd != 3) {
          dup2(listen_fd, 3);
        } else {
          fcntl(3, F_SETFD, 0);
        }
      }
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    close(log_fd);
    return pid;
  }

  // Starts pschedd on socket_ and waits until it answers Status.
  void Start() {
    pid_ = Spawn({});
    ASSERT_TRUE(WaitServing(socket_)) << Log();
  }

  // Starts pschedd with `devices` as its [[devices]] tables and returns the names of the
  // devices it serves (a GPU that cannot be opened is left out).
  std::vector<std::string> StartWithDevices(const std::string& devices) {
    std::string config_path = dir_ + "/devices.toml";
    std::ofstream(config_path) << devices;
    pid_ = Spawn({"--config", config_path});
    EXPECT_TRUE(WaitServing(socket_)) << Log();
    std::vector<std::string> names;
    auto status = Client().Status();
    if (!status.ok()) return names;
    for (const v1::Device& d : status->devices()) names.push_back(d.name());
    return names;
  }

  // cpu.0 + gpu (PoCL) when OpenCL can be opened, else cpu.0 + cpu.1.
  std::vector<std::string> StartTwoDevices() {
    std::vector<std::string> names = StartWithDevices(kCpu0Toml + R"toml(
[[devices]]
name = "gpu"
kind = "gpu"
opencl_device = "pthread"
cores = [1]
)toml");
    if (names.size() == 2) return names;
    Stop();
    return StartWithDevices(kCpu0Toml + kCpu1Toml);
  }

  bool WaitServing(const std::string& socket) {
    client::ClientOptions options;
    options.socket = socket;
    options.timeout = absl::Seconds(2);
    for (int i = 0; i < 300; ++i) {
      // A fresh channel per try: a failed channel waits out gRPC's reconnect backoff.
      if (client::Client(options).Status().ok()) return true;
      int status = 0;
      if (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    return false;
  }

  // SIGTERM and wait; returns the exit code (-1 if killed by a signal).
  int Stop() {
    if (pid_ <= 0) return -1;  // kill(-1) would signal every process of this user
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // From the log of a stopped pschedd: how many calls its call pollers answered on a poller
  // and how many on a spare thread (the last count logged: a restart appends to the log).
  std::pair<int, int> AnsweredOnPollersAndSpares() {
    const std::string log = ReadFile(dir_ + "/pschedd.log");
    const size_t at = log.rfind("call pollers answered ");
    std::pair<int, int> counts{-1, -1};
    if (at == std::string::npos ||
        std::sscanf(log.c_str() + at,
                    "call pollers answered %d calls on a poller and %d on a spare thread",
                    &counts.first, &counts.second) != 2) {
      ADD_FAILURE() << "no call poller count in the log:\n" << log;
    }
    return counts;
  }

  client::Client Client(absl::Duration timeout = absl::Seconds(120)) {
    client::ClientOptions options;
    options.socket = socket_;
    options.timeout = timeout;
    return client::Client(options);
  }

  // Runs pschedctl; returns (exit code, stdout). stderr goes to `err` when given.
  std::pair<int, std::string> Ctl(const std::string& args, std::string* err = nullptr) {
    std::string err_path = dir_ + "/ctl.err";
    std::string command =
        absl::StrCat(PSCHEDCTL_PATH, " --socket ", socket_, " ", args, " 2>", err_path);
    FILE* pipe = popen(command.c_str(), "r");
    std::string out;
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
    int status = pclose(pipe);
    if (err != nullptr) *err = ReadFile(err_path);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
  }

  struct CtlRun {
    int code = -1;
    std::string out, err;
    pid_t pid = -1;  // pschedctl's pid, as the daemon's log names it
  };
  // Runs pschedctl as `who` against `socket` (fork, take on the identity, exec).
  CtlRun CtlAs(const Identity& who, const std::string& socket,
               const std::vector<std::string>& args) {
    std::vector<std::string> argv_strings = {PSCHEDCTL_PATH, "--socket", socket};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    static std::atomic<int> runs{0};
    const std::string base = absl::StrCat(dir_, "/ctl_as.", runs++);
    int out_fd = open((base + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int err_fd = open((base + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CtlRun run;
    run.pid = fork();
    if (run.pid == 0) {
      dup2(out_fd, 1);
      dup2(err_fd, 2);
      BecomeOrExit(who);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out_fd);
    close(err_fd);
    int status = 0;
    waitpid(run.pid, &status, 0);
    run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    run.out = ReadFile(base + ".out");
    run.err = ReadFile(base + ".err");
    return run;
  }

  std::string Log() { return "pschedd log:\n" + ReadFile(dir_ + "/pschedd.log"); }

  std::string dir_, socket_, state_;
  pid_t pid_ = -1;
  bool auto_calibrate_ = false;  // leave out --no-auto-calibrate
};

TEST_F(DaemonTest, SqueezenetPlanCachedAcrossRestartAndInferenceMatchesReference) {
  if (!fs::exists(SqueezenetPath(".onnx"))) GTEST_SKIP() << "no ../shared reference models";
  Start();
  auto [add_rc, id_line] = Ctl("model add " + SqueezenetPath(".onnx"));
  ASSERT_EQ(add_rc, 0) << id_line << Log();
  std::string id = id_line.substr(0, id_line.find('\n'));
  ASSERT_EQ(id.size(), 64u) << id_line;

  auto [plan_rc, plan_text] = Ctl("-o json plan show " + id);
  ASSERT_EQ(plan_rc, 0) << plan_text;
  json plan = json::parse(plan_text);
  EXPECT_FALSE(plan["cached"].get<bool>());
  EXPECT_GT(plan["makespan_us"].get<double>(), 0);
  EXPECT_EQ(plan["scheduler"], "iterative:heft");
  ASSERT_GE(plan["subtasks"].size(), 38u);
  for (const json& s : plan["subtasks"]) {
    for (const char* key : {"op", "device", "strategy", "work", "start_us", "end_us"}) {
      EXPECT_TRUE(s.contains(key)) << key;
    }
  }

  ASSERT_EQ(Stop(), 0) << Log();
  Start();
  auto [cached_rc, cached_text] = Ctl("-o json plan show " + id.substr(0, 12));
  ASSERT_EQ(cached_rc, 0) << cached_text;
  json cached = json::parse(cached_text);
  EXPECT_TRUE(cached["cached"].get<bool>());
  EXPECT_DOUBLE_EQ(cached["makespan_us"].get<double>(), plan["makespan_us"].get<double>());
  EXPECT_EQ(cached["subtasks"].size(), plan["subtasks"].size());

  std::string out_path = dir_ + "/out.npy";
  auto [infer_rc, infer_text] = Ctl("-o json infer " + id + " --input " +
                                    SqueezenetPath(".input.npy") + " --output " + out_path);
  ASSERT_EQ(infer_rc, 0) << infer_text << Log();
  json infer = json::parse(infer_text);
  EXPECT_GT(infer["latency_us"].get<double>(), 0);
  ASSERT_EQ(infer["outputs"].size(), 1u);
  EXPECT_EQ(infer["outputs"][0]["dims"], json({1, 1000}));
  executor::NpyArray got = *executor::ReadNpy(out_path);
  executor::NpyArray want = *executor::ReadNpy(SqueezenetPath(".output.npy"));
  EXPECT_EQ(got.shape, want.shape);
  EXPECT_LT(MaxDiff(got.data, want.data), 1e-4);
  EXPECT_EQ(Stop(), 0) << Log();
}

// client::Session: the tiny CNN run by input name matches PyTorch, outputs come in the order
// asked, a bad feed is refused before it is sent, and the example program runs as documented.
TEST_F(DaemonTest, SessionRunsByNameRefusesBadFeedsAndTheExampleRuns) {
  Start();
  client::ClientOptions options;
  options.socket = socket_;
  absl::StatusOr<client::Session> session = client::Session::Create(kTinyModel, options);
  ASSERT_TRUE(session.ok()) << session.status() << Log();
  ASSERT_EQ(session->inputs().size(), 1u);
  ASSERT_EQ(session->outputs().size(), 1u);
  const client::TensorSpec& input = session->inputs()[0];
  executor::NpyArray x = *executor::ReadNpy(kTinyInput);
  executor::NpyArray want = *executor::ReadNpy(kTinyOutput);
  client::Tensor tensor{{x.shape.begin(), x.shape.end()}, x.data};
  EXPECT_EQ(tensor.dims, input.dims);

  absl::StatusOr<std::vector<client::Tensor>> out = session->Run({{input.name, tensor}});
  ASSERT_TRUE(out.ok()) << out.status() << Log();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].dims, std::vector<int64_t>(want.shape.begin(), want.shape.end()));
  EXPECT_LT(RelativeL2((*out)[0].data, want.data), 1e-4);
  absl::StatusOr<std::vector<client::Tensor>> named =
      session->Run({{input.name, tensor}}, {session->outputs()[0].name});
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ((*named)[0].data, (*out)[0].data);

  auto refused = [&](const std::map<std::string, client::Tensor>& feed,
                     const std::vector<std::string>& names, const std::string& message) {
    absl::StatusOr<std::vector<client::Tensor>> r = session->Run(feed, names);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << message;
    EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr(message));
  };
  refused({{"nope", tensor}}, {}, "required inputs missing from the feed: " + input.name);
  refused({{input.name, tensor}, {"nope", tensor}}, {}, "invalid input name: nope");
  refused({{input.name, tensor}}, {"nope"}, "invalid output name: nope");
  client::Tensor short_data = tensor;
  short_data.data.pop_back();
  refused({{input.name, short_data}}, {}, "values for dims");
  client::Tensor wrong_dims = tensor;
  wrong_dims.dims.back() += 1;
  refused({{input.name, wrong_dims}}, {}, "the model declares");
  EXPECT_EQ(client::Session::Create(dir_ + "/missing.onnx", options).status().code(),
            absl::StatusCode::kNotFound);

  const std::string command =
      absl::StrCat(SESSION_EXAMPLE_PATH, " ", kTinyModel, " ", socket_, " 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  std::string printed;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) printed.append(buffer, n);
  ASSERT_EQ(pclose(pipe), 0) << printed;
  EXPECT_THAT(printed, ::testing::MatchesRegex(session->outputs()[0].name +
                                               ": dims [0-9 ]+, argmax [0-9]+\n"));
}

// The store edited behind the daemon's back: a cached plan missing an op and a model whose
// bytes no longer hash to its id. The plan is dropped and recomputed without the caller
// noticing; the model is refused with DATA_LOSS until its original is added again.
TEST_F(DaemonTest, DamagedStoreIsDetectedRepairedAndNeverServed) {
  if (!fs::exists(SqueezenetPath(".onnx"))) GTEST_SKIP() << "no ../shared reference models";
  Start();
  auto [add_rc, id_line] = Ctl("model add " + SqueezenetPath(".onnx"));
  ASSERT_EQ(add_rc, 0) << id_line << Log();
  const std::string id = id_line.substr(0, id_line.find('\n'));
  auto [plan_rc, plan_text] = Ctl("-o json plan show " + id);
  ASSERT_EQ(plan_rc, 0) << plan_text;
  ASSERT_EQ(Stop(), 0) << Log();

  auto edit = [this](const std::string& sql) {
    absl::StatusOr<cache::Connection> db = cache::Connection::Open(state_ + "/psched.db");
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE(db->Exec(sql).ok()) << sql;
  };
  edit("UPDATE plans SET schedule_json = json_remove(schedule_json, '$.subtasks[3]')");
  Start();
  auto [replan_rc, replan_text] = Ctl("-o json plan show " + id);
  ASSERT_EQ(replan_rc, 0) << replan_text << Log();
  EXPECT_FALSE(json::parse(replan_text)["cached"].get<bool>());
  EXPECT_NE(Log().find("dropped and recomputed"), std::string::npos) << Log();
  const std::string out_path = dir_ + "/out.npy";
  const std::string infer =
      "infer " + id + " --input " + SqueezenetPath(".input.npy") + " --output " + out_path;
  auto expect_reference_output = [&] {
    auto [infer_rc, infer_text] = Ctl(infer);
    ASSERT_EQ(infer_rc, 0) << infer_text << Log();
    EXPECT_LT(MaxDiff(executor::ReadNpy(out_path)->data,
                      executor::ReadNpy(SqueezenetPath(".output.npy"))->data),
              1e-4);
  };
  expect_reference_output();
  ASSERT_EQ(Stop(), 0) << Log();

  // One byte of the stored model changed.
  edit(
      "UPDATE model_chunks SET bytes = CAST(substr(bytes, 1, length(bytes) - 1) || x'00' AS BLOB)");
  Start();
  std::string err;
  auto [bad_rc, bad_text] = Ctl(infer, &err);
  EXPECT_NE(bad_rc, 0);
  EXPECT_NE(err.find("quarantined"), std::string::npos) << err;
  EXPECT_NE(err.find(id), std::string::npos) << err;
  EXPECT_NE(Log().find("quarantined"), std::string::npos) << Log();
  auto [readd_rc, readd_text] = Ctl("model add " + SqueezenetPath(".onnx"));
  ASSERT_EQ(readd_rc, 0) << readd_text << Log();
  expect_reference_output();
  EXPECT_EQ(Stop(), 0) << Log();
}

TEST_F(DaemonTest, CoexecutionOnTwoDevicesMatchesPyTorchAndTraces) {
  if (!fs::exists(SqueezenetPath(".onnx"))) GTEST_SKIP() << "no ../shared reference models";
  const std::vector<std::string> devices = StartTwoDevices();
  ASSERT_EQ(devices.size(), 2u) << Log();
  auto [add_rc, id_line] = Ctl("model add " + SqueezenetPath(".onnx"));
  ASSERT_EQ(add_rc, 0) << id_line << Log();
  const std::string id = id_line.substr(0, id_line.find('\n'));

  // The plan: partition-aware HEFT over both devices.
  auto [plan_rc, plan_text] = Ctl("-o json plan show " + id + " --scheduler pa-heft");
  ASSERT_EQ(plan_rc, 0) << plan_text << Log();
  json plan = json::parse(plan_text);
  std::set<std::string> used;
  for (const json& s : plan["subtasks"]) used.insert(s["device"].get<std::string>());
  EXPECT_EQ(used.size(), 2u) << plan_text;

  const std::string out_path = dir_ + "/out.npy", trace_path = dir_ + "/trace.json";
  for (int run = 0; run < 2; ++run) {  // the second run reuses the compiled plan
    auto [infer_rc, infer_text] =
        Ctl("-o json infer " + id + " --scheduler pa-heft --input " + SqueezenetPath(".input.npy") +
            " --output " + out_path + " --trace " + trace_path);
    ASSERT_EQ(infer_rc, 0) << infer_text << Log();
    json infer = json::parse(infer_text);
    EXPECT_EQ(infer["executor"], "coexec");
    EXPECT_EQ(infer["scheduler"], "pa-heft");
    EXPECT_DOUBLE_EQ(infer["predicted_makespan_us"].get<double>(),
                     plan["makespan_us"].get<double>());
    executor::NpyArray got = *executor::ReadNpy(out_path);
    executor::NpyArray want = *executor::ReadNpy(SqueezenetPath(".output.npy"));
    EXPECT_EQ(got.shape, want.shape);
    EXPECT_LT(RelativeL2(got.data, want.data), 1e-4) << "run " << run;
  }
  EXPECT_NE(Log().find("compiled the pa-heft plan"), std::string::npos);
  EXPECT_EQ(Log().find("compiled the pa-heft plan"), Log().rfind("compiled the pa-heft plan"))
      << "the plan was compiled twice";

  // One measured event per subtask, each with its prediction; one predicted event each.
  json trace = json::parse(ReadFile(trace_path));
  ASSERT_TRUE(trace.contains("traceEvents"));
  size_t measured = 0, predicted = 0;
  std::set<std::string> ops;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["cat"] == "measured") {
      ++measured;
      EXPECT_GE(e["dur"].get<double>(), 0);
      EXPECT_TRUE(e["args"].contains("predicted_end_us")) << e.dump();
      ops.insert(e["name"].get<std::string>());
    } else if (e["cat"] == "predicted") {
      ++predicted;
    }
  }
  EXPECT_EQ(measured, plan["subtasks"].size());
  EXPECT_EQ(predicted, plan["subtasks"].size());
  EXPECT_GT(trace["otherData"]["measured_makespan_us"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(trace["otherData"]["predicted_makespan_us"].get<double>(),
                   plan["makespan_us"].get<double>());
  EXPECT_EQ(Stop(), 0) << Log();
}

// A plan handed out by GetPlan is compiled and run once on zeros through the inference queue,
// so its first Infer finds it compiled; the warm-up is not counted as an inference.
TEST_F(DaemonTest, APlanHandedOutIsCompiledAheadOfItsFirstInfer) {
  Start();
  auto [add_rc, id_line] = Ctl("model add " + kTinyModel);
  ASSERT_EQ(add_rc, 0) << id_line << Log();
  const std::string id = id_line.substr(0, id_line.find('\n'));
  auto [plan_rc, plan_text] = Ctl("plan show " + id + " --scheduler heft");
  ASSERT_EQ(plan_rc, 0) << plan_text;
  for (int i = 0; i < 300 && !Contains(Log(), "warmed the heft plan of"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(Contains(Log(), "warmed the heft plan of 'tiny_cnn'")) << Log();
  EXPECT_EQ(Client().Status()->inferences(), 0);
  auto [infer_rc, infer_text] = Ctl("infer " + id + " --scheduler heft --input " + kTinyInput);
  ASSERT_EQ(infer_rc, 0) << infer_text << Log();
  EXPECT_EQ(Client().Status()->inferences(), 1);
  const std::string log = Log();
  size_t compiles = 0;
  for (size_t at = log.find("compiled the heft plan"); at != std::string::npos;
       at = log.find("compiled the heft plan", at + 1)) {
    ++compiles;
  }
  EXPECT_EQ(compiles, 1u) << "the Infer ran the plan compiled ahead" << log;

  // After a restart the most recently used models' plans are warmed before anyone asks.
  ASSERT_EQ(Stop(), 0) << Log();
  const size_t restart = Log().size();
  Start();
  auto warmed = [&] {
    return Contains(Log().substr(restart), "warmed the heft plan of 'tiny_cnn'");
  };
  for (int i = 0; i < 300 && !warmed(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(warmed()) << Log();
  EXPECT_EQ(Client().Status()->inferences(), 0);
  EXPECT_EQ(Stop(), 0) << Log();
}

// A daemon with no calibration calibrates itself once, in the background, when the first
// model arrives; its plans from then on use the calibrated model, also after a restart.
TEST_F(DaemonTest, FirstStartCalibrationRunsInTheBackgroundOnce) {
  Start();  // as the tests run it: --no-auto-calibrate
  EXPECT_EQ(Client().Status()->calibration(), "off (auto_calibrate = false)");
  ASSERT_EQ(Stop(), 0) << Log();

  auto_calibrate_ = true;
  StartWithDevices("auto_calibrate_budget_ms = 300\n" + kCpu0Toml + kCpu1Toml);
  auto before = Client().Devices();
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(Client().Status()->calibration(), "waiting for a model to time");
  auto [add_rc, id_line] = Ctl("model add " + kTinyModel);
  ASSERT_EQ(add_rc, 0) << id_line << Log();
  const std::string id = id_line.substr(0, id_line.find('\n'));

  std::string state;
  for (int i = 0; i < 600 && !state.starts_with("done: ") && !state.starts_with("failed"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    state = Client().Status()->calibration();
  }
  ASSERT_TRUE(state.starts_with("done: ")) << state << Log();
  const std::string version = state.substr(6);
  EXPECT_NE(version.find("+calibrated"), std::string::npos) << version;
  EXPECT_EQ(Client().Devices()->predictor_version(), version);
  EXPECT_TRUE(Contains(Log(), "first-start calibration done: planning with " + version)) << Log();
  auto [plan_rc, plan_text] = Ctl("-o json plan show " + id);
  ASSERT_EQ(plan_rc, 0) << plan_text;
  EXPECT_EQ(json::parse(plan_text)["predictor_version"], version);
  auto [status_rc, status_text] = Ctl("status");
  EXPECT_TRUE(Contains(status_text, "calibration: done: " + version)) << status_text;

  // Stored: a restart plans with it and does not calibrate again.
  ASSERT_EQ(Stop(), 0) << Log();
  pid_ = Spawn({"--config", dir_ + "/devices.toml"});
  ASSERT_TRUE(WaitServing(socket_)) << Log();
  EXPECT_EQ(Client().Devices()->predictor_version(), version);
  EXPECT_EQ(Client().Status()->calibration(), "off (calibrated before)");
  EXPECT_EQ(Stop(), 0) << Log();
}

TEST_F(DaemonTest, CalibrateThenPlansUseTheCalibratedPredictor) {
  StartTwoDevices();
  auto before = Client().Devices();
  ASSERT_TRUE(before.ok()) << before.status();
  std::string err;
  auto [none_rc, none_text] = Ctl("calibrate --budget-s 0.2", &err);
  EXPECT_NE(none_rc, 0);
  EXPECT_NE(err.find("no model is registered"), std::string::npos) << err;
  auto [bad_rc, bad_text] = Ctl("calibrate --budget-s 100", &err);
  EXPECT_NE(bad_rc, 0);
  EXPECT_NE(err.find("budget_s"), std::string::npos) << err;

  auto [add_rc, id_line] = Ctl("model add " + kTinyModel);
  ASSERT_EQ(add_rc, 0) << id_line << Log();
  const std::string id = id_line.substr(0, id_line.find('\n'));
  auto [plan_rc, plan_text] = Ctl("-o json plan show " + id);
  ASSERT_EQ(plan_rc, 0) << plan_text;
  EXPECT_EQ(json::parse(plan_text)["predictor_version"], before->predictor_version());

  auto [cal_rc, cal_text] = Ctl("calibrate --budget-s 0.3", &err);
  ASSERT_EQ(cal_rc, 0) << cal_text << err << Log();
  EXPECT_NE(cal_text.find("held-out errors"), std::string::npos) << cal_text;
  EXPECT_NE(cal_text.find("MAPE"), std::string::npos) << cal_text;
  EXPECT_NE(err.find("done:"), std::string::npos) << err;
  auto after = Client().Devices();
  ASSERT_TRUE(after.ok());
  EXPECT_NE(after->predictor_version(), before->predictor_version());
  EXPECT_NE(after->predictor_version().find("+calibrated"), std::string::npos)
      << after->predictor_version();
  EXPECT_NE(cal_text.find(after->predictor_version()), std::string::npos) << cal_text;

  // The plan is recomputed with the calibrated model, and it survives a restart.
  auto [replan_rc, replan_text] = Ctl("-o json plan show " + id);
  ASSERT_EQ(replan_rc, 0) << replan_text;
  json replan = json::parse(replan_text);
  EXPECT_FALSE(replan["cached"].get<bool>());
  EXPECT_EQ(replan["predictor_version"], after->predictor_version());
  ASSERT_EQ(Stop(), 0) << Log();
  pid_ = Spawn({"--config", dir_ + "/devices.toml"});
  ASSERT_TRUE(WaitServing(socket_)) << Log();
  auto restarted = Client().Devices();
  ASSERT_TRUE(restarted.ok());
  EXPECT_EQ(restarted->predictor_version(), after->predictor_version());
  auto [cached_rc, cached_text] = Ctl("-o json plan show " + id);
  ASSERT_EQ(cached_rc, 0) << cached_text;
  EXPECT_TRUE(json::parse(cached_text)["cached"].get<bool>());
  EXPECT_EQ(Stop(), 0) << Log();
}

TEST_F(DaemonTest, EightClientsFiftyInferencesEach) {
  Start();
  auto registered = Client().RegisterModel(ReadFile(kTinyModel), "tiny", false);
  ASSERT_TRUE(registered.ok()) << registered.status();
  const std::string id = registered->model().id();
  const std::vector<float> want = executor::ReadNpy(kTinyOutput)->data;
  v1::InferRequest request;
  request.set_model_id(id);
  *request.add_inputs() = TensorFromNpy(kTinyInput);

  std::atomic<int> correct{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&] {
      client::Client client = Client();
      for (int i = 0; i < 50; ++i) {
        auto response = client.Infer(request);
        if (response.ok() && response->outputs_size() == 1 &&
            MaxDiff(Floats(response->outputs(0)), want) < 1e-4) {
          ++correct;
        } else if (!response.ok()) {
          ADD_FAILURE() << response.status();
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(correct.load(), 400);
  auto status = Client().Status();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->inferences(), 400);
  EXPECT_EQ(status->queue_depth(), 0);
  EXPECT_EQ(Stop(), 0) << Log();
  // Every call was answered once: on the call poller when the queue was idle and the plan
  // brief, else on a spare thread.
  const auto [on_pollers, on_spares] = AnsweredOnPollersAndSpares();
  EXPECT_EQ(on_pollers + on_spares, 400);
  std::printf("answered on pollers %d, on spare threads %d\n", on_pollers, on_spares);
}

TEST_F(DaemonTest, BriefInferencesRunOnThePollerAndLongerOnesMove) {
  // The same 30 sequential Infers of the tiny CNN, once with every plan brief and once with
  // none (feedback off, so the served plan stays the one measured).
  const std::string config_path = dir_ + "/brief.toml";
  for (const int brief_infer_us : {10000000, 0}) {
    std::ofstream(config_path) << "feedback_window = 0\nbrief_infer_us = " << brief_infer_us
                               << "\n";
    pid_ = Spawn({"--config", config_path});
    ASSERT_TRUE(WaitServing(socket_)) << Log();
    {
      client::Client client = Client();
      auto registered = client.RegisterModel(ReadFile(kTinyModel), "tiny", false);
      ASSERT_TRUE(registered.ok()) << registered.status();
      const std::vector<float> want = executor::ReadNpy(kTinyOutput)->data;
      v1::InferRequest request;
      request.set_model_id(registered->model().id());
      *request.add_inputs() = TensorFromNpy(kTinyInput);
      for (int i = 0; i < 30; ++i) {
        auto response = client.Infer(request);
        ASSERT_TRUE(response.ok()) << response.status();
        EXPECT_LT(MaxDiff(Floats(response->outputs(0)), want), 1e-4);
      }
    }
    EXPECT_EQ(Stop(), 0) << Log();
    const auto [on_pollers, on_spares] = AnsweredOnPollersAndSpares();
    if (brief_infer_us > 0) {
      // The first finds no plan in memory, nor a measured run: it plans on a spare thread.
      EXPECT_EQ(on_spares, 1);
      EXPECT_EQ(on_pollers, 29);
    } else {
      EXPECT_EQ(on_spares, 30);
      EXPECT_EQ(on_pollers, 0);
    }
  }
}

TEST_F(DaemonTest, SigtermDuringInferenceCompletesItAndExitsZero) {
  if (!fs::exists(SqueezenetPath(".onnx"))) GTEST_SKIP() << "no ../shared reference models";
  Start();
  auto registered = Client().RegisterModel(ReadFile(SqueezenetPath(".onnx")), "sq", false);
  ASSERT_TRUE(registered.ok()) << registered.status();
  v1::InferRequest request;
  request.set_model_id(registered->model().id());
  *request.add_inputs() = TensorFromNpy(SqueezenetPath(".input.npy"));
  const std::vector<float> want = executor::ReadNpy(SqueezenetPath(".output.npy"))->data;
  // Eight clients, two inferences each: SIGTERM lands while some run and others wait.
  constexpr int kClients = 8;
  std::vector<absl::Status> outcomes(kClients * 2);
  std::atomic<int> correct{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      client::Client client = Client();
      for (int i = 0; i < 2; ++i) {
        auto response = client.Infer(request);
        outcomes[static_cast<size_t>(c * 2 + i)] = response.status();
        if (response.ok() && MaxDiff(Floats(response->outputs(0)), want) < 1e-4) ++correct;
      }
    });
  }
  client::Client watcher = Client();
  int64_t depth_at_signal = 0;
  for (int i = 0; i < 500 && depth_at_signal < 2; ++i) {
    auto status = watcher.Status();
    if (status.ok()) depth_at_signal = status->queue_depth();
    absl::SleepFor(absl::Milliseconds(2));
  }
  ASSERT_GE(depth_at_signal, 2);
  EXPECT_EQ(Stop(), 0) << Log();
  for (auto& t : clients) t.join();
  // Everything accepted before SIGTERM completed correctly; later calls were refused,
  // never cut off half-way: by the daemon (UNAVAILABLE), or by gRPC when the call reached the
  // server just as it began shutting down, before any handler ran (CANCELLED; the 30 s grace
  // lets every started handler finish).
  EXPECT_GE(correct.load(), depth_at_signal);
  int ok = 0;
  for (const absl::Status& outcome : outcomes) {
    if (outcome.ok()) {
      ++ok;
    } else {
      EXPECT_THAT(outcome.code(),
                  ::testing::AnyOf(absl::StatusCode::kUnavailable, absl::StatusCode::kCancelled))
          << outcome;
    }
  }
  EXPECT_EQ(ok, correct.load());
  EXPECT_FALSE(fs::exists(socket_));
}

TEST_F(DaemonTest, StopHangsUpIdleConnectionsInsteadOfWaitingForThem) {
  // A grace far beyond the test's timeout: a pschedd that waited for the idle connections
  // below would hang the test rather than pass it late.
  const std::string config_path = dir_ + "/grace.toml";
  std::ofstream(config_path) << "shutdown_grace_s = 3600\n";
  pid_ = Spawn({"--config", config_path});
  ASSERT_TRUE(WaitServing(socket_)) << Log();
  // A connection that never reads: it never answers the GOAWAY gRPC's Shutdown waits for (as a
  // C++ client between calls, which looks at its connection only every 5 s).
  const int idle = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(idle, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(connect(idle, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  // And a client whose call was answered before the stop, idle since.
  client::Client held = Client();
  ASSERT_TRUE(held.Status().ok());
  EXPECT_EQ(Stop(), 0) << Log();
  const std::string log = Log();
  const size_t at = log.find("hung up ");
  int hung_up = 0;
  ASSERT_NE(at, std::string::npos) << log;
  ASSERT_EQ(std::sscanf(log.c_str() + at, "hung up %d idle connection", &hung_up), 1) << log;
  EXPECT_GE(hung_up, 2) << log;
  close(idle);
}

TEST_F(DaemonTest, SocketActivationAndNotifications) {
  // systemd's side: a listening socket passed as fd 3 and a datagram notify socket.
  std::string listen_path = dir_ + "/activated.sock";
  int listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, listen_path.c_str());
  ASSERT_EQ(bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listen_fd, 16), 0);

  std::string notify_path = dir_ + "/notify.sock";
  int notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un notify_addr{};
  notify_addr.sun_family = AF_UNIX;
  std::strcpy(notify_addr.sun_path, notify_path.c_str());
  ASSERT_EQ(bind(notify_fd, reinterpret_cast<sockaddr*>(&notify_addr), sizeof(notify_addr)), 0);

  // --socket names a path nobody uses: the daemon must serve on the activated socket.
  pid_ = Spawn({"--socket", dir_ + "/unused/x.sock"},
               {"LISTEN_FDS=1", "NOTIFY_SOCKET=" + notify_path, "WATCHDOG_USEC=300000"}, listen_fd,
               /*with_listen_pid=*/true);
  close(listen_fd);

  std::vector<std::string> messages;
  auto read_until = [&](const std::string& wanted, int timeout_ms) {
    absl::Time end = absl::Now() + absl::Milliseconds(timeout_ms);
    while (absl::Now() < end) {
      pollfd p{notify_fd, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      char buffer[4096];
      ssize_t n = recv(notify_fd, buffer, sizeof(buffer), 0);
      if (n <= 0) continue;
      std::string message(buffer, static_cast<size_t>(n));
      messages.push_back(message);
      if (message.find(wanted) != std::string::npos) return true;
    }
    return false;
  };
  ASSERT_TRUE(read_until("READY=1", 15000)) << Log();
  // STATUS= came before READY=1 while loading.
  ASSERT_GE(messages.size(), 2u);
  EXPECT_EQ(messages.front().rfind("STATUS=", 0), 0u) << messages.front();
  EXPECT_FALSE(fs::exists(dir_ + "/unused/x.sock"));

  client::ClientOptions options;
  options.socket = listen_path;
  client::Client client(options);
  auto status = client.Status();
  ASSERT_TRUE(status.ok()) << status.status() << Log();
  EXPECT_EQ(status->version(), PSCHED_VERSION);

  // The watchdog is fed (every 100 ms for WATCHDOG_USEC=300000) while the queue is idle.
  EXPECT_TRUE(read_until("WATCHDOG=1", 2000)) << Log();

  kill(pid_, SIGTERM);
  EXPECT_TRUE(read_until("STOPPING=1", 10000)) << Log();
  // Keep reading like systemd does: a full datagram queue would block the daemon's sends.
  int wait_status = 0;
  while (waitpid(pid_, &wait_status, WNOHANG) != pid_) read_until("\n\n", 50);
  pid_ = -1;
  EXPECT_TRUE(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) << Log();
  // systemd owns an activated socket: the daemon leaves it in place.
  EXPECT_TRUE(fs::exists(listen_path));
  close(notify_fd);
}

TEST_F(DaemonTest, NoNotificationsWithoutNotifySocket) {
  // Nothing to assert on the wire: the daemon must simply serve and stop cleanly.
  Start();
  EXPECT_EQ(Stop(), 0) << Log();
}

TEST_F(DaemonTest, BadInputsGetTheRightCodesWhileServing) {
  std::string config_path = dir_ + "/pschedd.toml";
  std::ofstream(config_path) << "max_model_bytes = 4000\n";
  pid_ = Spawn({"--config", config_path});
  ASSERT_TRUE(WaitServing(socket_)) << Log();
  client::Client client = Client();

  auto garbage = client.RegisterModel(std::string(1000, '\x07'), "junk", false);
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kInvalidArgument) << garbage.status();
  EXPECT_FALSE(garbage.status().message().empty());

  auto oversize = client.RegisterModel(std::string(5000, 'x'), "big", false);
  EXPECT_EQ(oversize.status().code(), absl::StatusCode::kResourceExhausted) << oversize.status();
  EXPECT_NE(oversize.status().message().find("4000"), std::string::npos) << oversize.status();

  auto unknown = client.GetPlan(std::string(64, 'a'), "heft");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound) << unknown.status();
  v1::InferRequest unknown_infer;
  unknown_infer.set_model_id("0123456789abcdef");
  EXPECT_EQ(client.Infer(unknown_infer).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client.RemoveModel("deadbeefdeadbeef").status().code(), absl::StatusCode::kNotFound);

  auto tiny = client.RegisterModel(ReadFile(kTinyModel), "tiny", false);
  ASSERT_TRUE(tiny.ok()) << tiny.status();
  v1::InferRequest wrong_size;
  wrong_size.set_model_id(tiny->model().id());
  v1::Tensor* input = wrong_size.add_inputs();
  input->add_dims(1);
  input->add_dims(3);
  input->add_dims(16);
  input->add_dims(16);
  input->set_data(std::string(100 * sizeof(float), '\0'));
  auto bad = client.Infer(wrong_size);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
  EXPECT_NE(bad.status().message().find("768"), std::string::npos) << bad.status();
  input->set_data(std::string(7, '\0'));
  EXPECT_EQ(client.Infer(wrong_size).status().code(), absl::StatusCode::kInvalidArgument);

  auto unknown_scheduler = client.GetPlan(tiny->model().id(), "no-such-method");
  EXPECT_EQ(unknown_scheduler.status().code(), absl::StatusCode::kInvalidArgument);

  // Still serving after all of that.
  v1::InferRequest good;
  good.set_model_id(tiny->model().id());
  *good.add_inputs() = TensorFromNpy(kTinyInput);
  auto ok = client.Infer(good);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_LT(MaxDiff(Floats(ok->outputs(0)), executor::ReadNpy(kTinyOutput)->data), 1e-4);
  EXPECT_EQ(Stop(), 0) << Log();
}

TEST_F(DaemonTest, DeadlineExceededWhileInferring) {
  if (!fs::exists(SqueezenetPath(".onnx"))) GTEST_SKIP() << "no ../shared reference models";
  Start();
  auto registered = Client().RegisterModel(ReadFile(SqueezenetPath(".onnx")), "sq", false);
  ASSERT_TRUE(registered.ok());
  v1::InferRequest request;
  request.set_model_id(registered->model().id());
  auto late = Client(absl::Milliseconds(5)).Infer(request);
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded) << late.status();
  EXPECT_EQ(Stop(), 0) << Log();
}

TEST_F(DaemonTest, RefusesSecondDaemonAndReplacesStaleSocket) {
  Start();
  pid_t first = pid_;
  pid_t second = Spawn({});
  int status = 0;
  waitpid(second, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1);
  EXPECT_NE(ReadFile(dir_ + "/pschedd.log").find("already answering"), std::string::npos) << Log();
  // Kill the first hard: its socket file stays behind, stale.
  kill(first, SIGKILL);
  waitpid(first, nullptr, 0);
  pid_ = -1;
  ASSERT_TRUE(fs::exists(socket_));
  Start();
  EXPECT_EQ(fs::status(socket_).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::group_write);
  EXPECT_EQ(Stop(), 0);
}

TEST_F(DaemonTest, UnusableStateOrFlagsExitNonZeroWithOneLine) {
  std::ofstream(dir_ + "/file") << "x";
  pid_ = Spawn({"--state-dir", dir_ + "/file/sub"});
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
  std::string log = ReadFile(dir_ + "/pschedd.log");
  EXPECT_NE(log.find("pschedd: cannot create state dir"), std::string::npos) << log;

  fs::create_directories(state_);
  std::ofstream(state_ + "/psched.db") << std::string(4096, 'z');
  pid_ = Spawn({});
  waitpid(pid_, &status, 0);
  pid_ = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
  log = ReadFile(dir_ + "/pschedd.log");
  EXPECT_NE(log.find("corrupt"), std::string::npos) << log;

  pid_ = Spawn({"--log-level", "loud"});
  waitpid(pid_, &status, 0);
  pid_ = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
}

// The real binary refuses to start, exit 1 with one line naming the file and the fix, on a
// database that lost a table, carries a schema from the future or does not take writes, and
// on an [access] entry naming nobody on this system: never at the first request.
TEST_F(DaemonTest, StartupFailsFastOnABrokenDatabaseOrAccessConfig) {
  Start();
  ASSERT_EQ(Stop(), 0);
  const std::string db_path = state_ + "/psched.db";
  auto exec = [&](const std::string& sql) {
    absl::StatusOr<cache::Connection> db = cache::Connection::Open(db_path);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE(db->Exec(sql).ok()) << sql;
  };
  // Starts pschedd (as `as`, when given) and returns its log if it exited 1.
  auto refused = [&](const std::vector<std::string>& args, const Identity* as = nullptr) {
    fs::remove(dir_ + "/pschedd.log");
    pid_ = Spawn(args, {}, -1, false, as);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << ReadFile(dir_ + "/pschedd.log");
    return ReadFile(dir_ + "/pschedd.log");
  };

  fs::copy_file(db_path, dir_ + "/good.db");
  exec("DROP TABLE plans");
  EXPECT_TRUE(Contains(refused({}), "table 'plans' is missing")) << Log();
  fs::copy_file(dir_ + "/good.db", db_path, fs::copy_options::overwrite_existing);
  exec("PRAGMA user_version = 99");
  EXPECT_TRUE(Contains(refused({}), "cache schema version 99 is newer than this pschedd")) << Log();
  fs::copy_file(dir_ + "/good.db", db_path, fs::copy_options::overwrite_existing);

  const std::string config = dir_ + "/access.toml";
  std::ofstream(config) << "[access]\nadmin_groups = [\"no-such-group-psched\"]\n";
  EXPECT_TRUE(Contains(refused({"--config", config}),
                       "pschedd: [access]: no group named 'no-such-group-psched'"))
      << Log();

  if (geteuid() == 0) {
    // nobody owns the state dir; the database file stays root's, readable but not writable.
    const Identity nobody = Nobody({getgrnam("nogroup")->gr_gid});
    ASSERT_EQ(chown(state_.c_str(), nobody.uid, nobody.gid), 0);
    fs::permissions(db_path, fs::perms::owner_read | fs::perms::owner_write |
                                 fs::perms::group_read | fs::perms::others_read);
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::others_exec);
    const std::string log = refused({"--socket", state_ + "/pschedd.sock"}, &nobody);
    EXPECT_TRUE(Contains(log, "does not take writes") && Contains(log, db_path)) << log;
  }
}

TEST_F(DaemonTest, PschedctlWithoutDaemonSaysSoInOneLine) {
  std::string err;
  auto [rc, out] = Ctl("status", &err);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(err.rfind("pschedctl: no pschedd answers on " + socket_, 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  // model inspect FILE works without a daemon.
  auto [inspect_rc, inspect_text] = Ctl("model inspect " + kTinyModel);
  ASSERT_EQ(inspect_rc, 0) << inspect_text;
  json inspect = json::parse(inspect_text);
  EXPECT_GE(inspect["ops"].get<int>(), 4);
  EXPECT_TRUE(inspect["op_counts"].contains("conv2d"));
  EXPECT_GT(inspect["flops"].get<int64_t>(), 0);
  EXPECT_GT(inspect["params"].get<int64_t>(), 0);
}

// Even under umask 0 what pschedd creates is no looser than it must be: the state dir
// (every uploaded model) and the database are the daemon's alone, the socket's directory and
// the socket reach the socket's group only.
// kill -9 at seeded random moments while clients upload, plan and infer. After every kill
// the database passes integrity_check, and after the restart every model whose upload was
// acknowledged is present and, where a reference output exists, still computes it.
TEST_F(DaemonTest, KillNineDuringUploadPlanningAndInferenceLosesNothingAcknowledged) {
  if (!fs::exists(SqueezenetPath(".onnx"))) GTEST_SKIP() << "no ../shared reference models";
  struct Upload {
    std::string path;
    bool synthetic;
    std::string reference_input, reference_output;  // empty: no reference
  };
  const std::string reference = SharedDir() + "/models/reference/";
  const std::string graph_only = SharedDir() + "/models/graph-only/";
  const std::vector<Upload> uploads = {
      {kTinyModel, false, kTinyInput, kTinyOutput},
      {reference + "squeezenet_v1_1.onnx", false, reference + "squeezenet_v1_1.input.npy",
       reference + "squeezenet_v1_1.output.npy"},
      {reference + "peleenet.onnx", false, reference + "peleenet.input.npy",
       reference + "peleenet.output.npy"},
      {graph_only + "hrnet_w18_small_v1.onnx", true, "", ""},
      {graph_only + "hrnet_w18_small_v2.onnx", true, "", ""},
  };
  std::mt19937 rng(20261124);
  std::map<std::string, const Upload*> acknowledged;  // id -> what was uploaded
  size_t next_upload = 0;
  for (int round = 0; round < 5; ++round) {
    Start();
    // Drawn before the clients start, and the replanning client has its own engine: a
    // std::mt19937 is not thread-safe.
    const int kill_after_ms = std::uniform_int_distribution<int>(150, 900)(rng);
    std::mt19937 pick(static_cast<uint32_t>(rng()));
    std::mutex mu;
    std::atomic<bool> done{false};
    std::vector<std::thread> clients;
    clients.emplace_back([&] {  // uploads, one model after the other
      while (!done && next_upload < uploads.size()) {
        const Upload& upload = uploads[next_upload];
        auto response =
            Client(absl::Seconds(10)).RegisterModel(ReadFile(upload.path), "", upload.synthetic);
        if (!response.ok()) break;
        std::lock_guard lock(mu);
        acknowledged[response->model().id()] = &upload;
        ++next_upload;
      }
    });
    clients.emplace_back([&] {  // replans whatever is registered
      while (!done) {
        std::vector<std::string> ids;
        {
          std::lock_guard lock(mu);
          for (const auto& [id, upload] : acknowledged) ids.push_back(id);
        }
        if (ids.empty()) {
          absl::SleepFor(absl::Milliseconds(5));
          continue;
        }
        if (!Client(absl::Seconds(10))
                 .GetPlan(ids[pick() % ids.size()], "iterative", {}, true)
                 .ok())
          break;
      }
    });
    clients.emplace_back([&] {  // infers the tiny model once it is registered
      v1::InferRequest request;
      *request.add_inputs() = TensorFromNpy(kTinyInput);
      while (!done) {
        {
          std::lock_guard lock(mu);
          for (const auto& [id, upload] : acknowledged) {
            if (upload->path == kTinyModel) request.set_model_id(id);
          }
        }
        if (request.model_id().empty()) {
          absl::SleepFor(absl::Milliseconds(5));
          continue;
        }
        if (!Client(absl::Seconds(10)).Infer(request).ok()) break;
      }
    });
    absl::SleepFor(absl::Milliseconds(kill_after_ms));
    ASSERT_EQ(kill(pid_, SIGKILL), 0);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    done = true;
    for (std::thread& t : clients) t.join();

    absl::StatusOr<cache::Connection> db = cache::Connection::Open(state_ + "/psched.db");
    ASSERT_TRUE(db.ok()) << db.status();
    EXPECT_EQ(db->QueryText("PRAGMA integrity_check").value_or("failed"), "ok")
        << "round " << round;
  }

  std::printf("%zu of %zu uploads acknowledged across 5 kills\n", acknowledged.size(),
              uploads.size());
  Start();
  ASSERT_FALSE(acknowledged.empty());
  for (const auto& [id, upload] : acknowledged) {
    auto model = Client().GetModel(id);
    ASSERT_TRUE(model.ok()) << upload->path << ": " << model.status();
    if (upload->reference_output.empty()) continue;
    v1::InferRequest request;
    request.set_model_id(id);
    *request.add_inputs() = TensorFromNpy(upload->reference_input);
    auto response = Client().Infer(request);
    ASSERT_TRUE(response.ok()) << upload->path << ": " << response.status() << Log();
    EXPECT_LT(
        MaxDiff(Floats(response->outputs(0)), executor::ReadNpy(upload->reference_output)->data),
        1e-4)
        << upload->path;
  }
  EXPECT_EQ(Stop(), 0) << Log();
}

// Rows of the right SQL types but the wrong JSON types, for every JSON column. Every RPC
// then answers with a status and a message (or succeeds), never gRPC's UNKNOWN, and the
// daemon keeps serving.
TEST_F(DaemonTest, EveryRpcAnswersClearlyOnAPoisonedStore) {
  Start();
  auto [add_rc, id_line] = Ctl("model add " + kTinyModel);
  ASSERT_EQ(add_rc, 0) << id_line << Log();
  const std::string id = id_line.substr(0, id_line.find('\n'));
  ASSERT_EQ(Ctl("plan show " + id).first, 0) << Log();
  ASSERT_EQ(Stop(), 0) << Log();
  {
    absl::StatusOr<cache::Connection> db = cache::Connection::Open(state_ + "/psched.db");
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE(db->Exec(R"sql(
      UPDATE models SET summary_json =
        '{"ops": "many", "flops": [], "has_weights": "yes", "op_counts": 3,
          "inputs": [{"name": 5, "dims": "x"}], "outputs": {"y": 1}}';
      UPDATE plans SET schedule_json = '{"subtasks": [{"device": 7, "work": "all"}]}',
                       scheduler = 'heft';
    )sql")
                    .ok());
  }
  Start();
  std::vector<std::pair<std::string, absl::Status>> answers;
  auto record = [&answers](const std::string& rpc, const absl::Status& status) {
    answers.emplace_back(rpc, status);
  };
  client::Client c = Client(absl::Seconds(60));
  record("Status", c.Status().status());
  record("Devices", c.Devices().status());
  record("CacheStats", c.CacheStats().status());
  record("ListCachedPlans", c.ListCachedPlans().status());
  record("ListModels", c.ListModels().status());
  record("VerifyCache", c.VerifyCache().status());
  record("GetModel", c.GetModel(id).status());
  record("GetPlan", c.GetPlan(id, "").status());
  v1::InferRequest request;
  request.set_model_id(id);
  *request.add_inputs() = TensorFromNpy(kTinyInput);
  auto inferred = c.Infer(request);
  record("Infer", inferred.status());
  record("RegisterModel", c.RegisterModel(ReadFile(kTinyModel), "", false).status());
  record("Calibrate", c.Calibrate(0.2).status());
  record("PurgeCache", c.PurgeCache(false).status());
  record("RemoveModel", c.RemoveModel(id).status());
  for (const auto& [rpc, status] : answers) {
    EXPECT_NE(status.code(), absl::StatusCode::kUnknown) << rpc << ": " << status;
    if (!status.ok()) {
      EXPECT_FALSE(status.message().empty()) << rpc;
    }
    std::printf("%-16s %s\n", rpc.c_str(), status.ToString().c_str());
  }
  // A damaged summary loses its bad fields, not the model; the damaged plan is recomputed,
  // so inference runs and matches.
  for (const auto& [rpc, status] : answers) {
    if (rpc != "Calibrate") {
      EXPECT_TRUE(status.ok()) << rpc << ": " << status;
    }
  }
  EXPECT_NE(Log().find("stored summary is damaged"), std::string::npos) << Log();
  ASSERT_TRUE(inferred.ok()) << inferred.status() << Log();
  EXPECT_LT(MaxDiff(Floats(inferred->outputs(0)), executor::ReadNpy(kTinyOutput)->data), 1e-4);
  EXPECT_TRUE(Client().Status().ok()) << Log();
  EXPECT_EQ(Stop(), 0) << Log();
}

TEST_F(DaemonTest, CreatedFilesAreNeverLooserThanConfiguredWhateverTheUmask) {
  const mode_t previous = umask(0);
  Start();
  umask(previous);
  auto mode = [](const std::string& path) {
    struct stat st {};
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  };
  EXPECT_EQ(mode(state_), 0700u);
  EXPECT_EQ(mode(state_ + "/psched.db"), 0600u);
  EXPECT_EQ(mode(dir_ + "/run"), 0750u);
  EXPECT_EQ(mode(socket_), 0660u);
  EXPECT_EQ(Stop(), 0) << Log();
}

TEST_F(DaemonTest, PschedctlBadArgumentsExitOneAndHelpExitsZero) {
  for (const char* args :
       {"--no-such-flag status", "model", "plan show", "infer abc --input", "nosuchcommand"}) {
    std::string err;
    auto [rc, out] = Ctl(args, &err);
    EXPECT_EQ(rc, 1) << args << ": " << out << err;
    EXPECT_FALSE(err.empty()) << args;
  }
  auto [help_rc, help] = Ctl("--help");
  EXPECT_EQ(help_rc, 0);
  EXPECT_NE(help.find("model"), std::string::npos) << help;
}

// The CPU devices of a `-o json platform show` answer, as name -> cores.
std::map<std::string, std::vector<int>> CpuDevices(const json& platform) {
  std::map<std::string, std::vector<int>> devices;
  for (const json& d : platform["devices"]) {
    if (d["kind"] == "cpu") devices[d["name"]] = d["cores"].get<std::vector<int>>();
  }
  return devices;
}

// This process's cores (pschedd inherits them), or every online core.
std::vector<int> UsableCores() {
  std::optional<std::vector<int>> affinity = platform::ProcessAffinityCpus();
  return affinity.value_or(std::vector<int>{});
}

TEST_F(DaemonTest, DefaultCpuDevicesAreTheDiscoveredClusters) {
  Start();
  auto [rc, text] = Ctl("-o json platform show");
  ASSERT_EQ(rc, 0) << text << Log();
  json platform = json::parse(text);
  EXPECT_EQ(platform["discovery"]["cpu_devices_from"], "discovered") << text;
  EXPECT_EQ(platform["discovery"]["sysfs_root"], "/sys/devices/system/cpu");
  EXPECT_EQ(platform["discovery"]["error"], "");

  // The same discovery, run here: one device per cluster, named and pinned like it.
  platform::TopologyOptions options;
  options.live_names = true;
  options.allowed_cpus = platform::ProcessAffinityCpus();
  absl::StatusOr<platform::CpuTopology> topology = platform::DiscoverCpuTopology(options);
  ASSERT_TRUE(topology.ok()) << topology.status();
  std::map<std::string, std::vector<int>> want;
  for (const platform::CpuCluster& cluster : topology->clusters) want[cluster.name] = cluster.cores;
  EXPECT_EQ(CpuDevices(platform), want) << text;
  ASSERT_EQ(platform["discovery"]["clusters"].size(), topology->clusters.size());
  std::vector<int> covered;
  for (const auto& [name, cores] : want) covered.insert(covered.end(), cores.begin(), cores.end());
  std::sort(covered.begin(), covered.end());
  if (!UsableCores().empty()) {
    EXPECT_EQ(covered, UsableCores()) << "every usable core, once";
  }

  auto [table_rc, table] = Ctl("platform show");
  ASSERT_EQ(table_rc, 0) << table;
  EXPECT_NE(table.find("CPU devices: discovered (one per cluster)"), std::string::npos) << table;
  EXPECT_NE(table.find("DEVICE  KIND"), std::string::npos) << table;
  EXPECT_NE(table.find("CLUSTER"), std::string::npos) << table;
  EXPECT_NE(table.find("grouping: "), std::string::npos) << table;
  EXPECT_EQ(Stop(), 0) << Log();
}

TEST_F(DaemonTest, BigLittleTreeGivesOneDevicePerClusterThatPlansAndInfers) {
  const std::vector<int> usable = UsableCores();
  if (std::find(usable.begin(), usable.end(), 1) == usable.end()) {
    GTEST_SKIP() << "the fixture's cores 0 and 1 are not both usable here";
  }
  std::ofstream(dir_ + "/board.toml")
      << "cpu_topology_root = \"" << kSysfsFixtures << "/two-core-big-little\"\n";
  pid_ = Spawn({"--config", dir_ + "/board.toml"});
  ASSERT_TRUE(WaitServing(socket_)) << Log();
  auto [rc, text] = Ctl("-o json platform show");
  ASSERT_EQ(rc, 0) << text;
  json platform = json::parse(text);
  EXPECT_EQ(platform["discovery"]["cpu_devices_from"], "discovered");
  EXPECT_EQ(CpuDevices(platform),
            (std::map<std::string, std::vector<int>>{{"cpu.big", {1}}, {"cpu.little", {0}}}))
      << text;
  EXPECT_EQ(platform["devices"][0]["name"], "cpu.big") << "fastest first";
  EXPECT_EQ(platform["discovery"]["clusters"][0]["capacity"], 1024);
  EXPECT_EQ(platform["discovery"]["clusters"][1]["max_freq_khz"], 1200000);
  EXPECT_NE(Log().find("co-execution on cpu.big (cores 1), cpu.little (cores 0)"),
            std::string::npos)
      << Log();

  // The planner sees both clusters and the runtime runs the plan on them.
  auto [add_rc, id_line] = Ctl("model add " + kTinyModel);
  ASSERT_EQ(add_rc, 0) << id_line << Log();
  const std::string id = id_line.substr(0, 64);
  auto [plan_rc, plan_text] = Ctl("-o json plan show " + id + " --scheduler heft");
  ASSERT_EQ(plan_rc, 0) << plan_text;
  const json plan = json::parse(plan_text);  // the loop below must not range over a temporary
  for (const json& s : plan["subtasks"]) {
    const std::string device = s["device"];
    EXPECT_TRUE(device == "cpu.big" || device == "cpu.little") << device;
  }
  const std::string out_path = dir_ + "/out.npy";
  auto [infer_rc, infer_text] =
      Ctl("infer " + id + " --scheduler heft --input " + kTinyInput + " --output " + out_path);
  ASSERT_EQ(infer_rc, 0) << infer_text << Log();
  executor::NpyArray got = *executor::ReadNpy(out_path);
  executor::NpyArray want = *executor::ReadNpy(kTinyOutput);
  EXPECT_EQ(got.shape, want.shape);
  EXPECT_LT(MaxDiff(got.data, want.data), 1e-4);

  // The plan that ran is shown with what it measured beside what it predicted.
  auto [measured_rc, measured_text] = Ctl("-o json plan show " + id + " --scheduler heft");
  ASSERT_EQ(measured_rc, 0) << measured_text;
  const json measured = json::parse(measured_text);
  EXPECT_EQ(measured["measured_runs"], 1);
  EXPECT_GT(measured["measured_makespan_us"].get<double>(), 0);
  for (const json& s : measured["subtasks"]) EXPECT_GT(s["measured_us"].get<double>(), 0) << s;
  auto [shown_rc, shown] = Ctl("plan show " + id + " --scheduler heft");
  EXPECT_NE(shown.find("MEASURED_US"), std::string::npos) << shown;
  EXPECT_NE(shown.find("(median of the last runs; 1 runs)"), std::string::npos) << shown;

  auto [table_rc, table] = Ctl("platform show");
  EXPECT_NE(table.find("cpu.little  0"), std::string::npos) << table;
  EXPECT_EQ(Stop(), 0) << Log();
}

TEST_F(DaemonTest, BrokenSysfsTreeFallsBackToOneDeviceAndSaysWhy) {
  std::ofstream(dir_ + "/broken.toml")
      << "cpu_topology_root = \"" << kSysfsFixtures << "/damaged-no-online\"\n";
  pid_ = Spawn({"--config", dir_ + "/broken.toml"});
  ASSERT_TRUE(WaitServing(socket_)) << Log();
  auto [rc, text] = Ctl("-o json platform show");
  ASSERT_EQ(rc, 0) << text;
  json platform = json::parse(text);
  EXPECT_EQ(platform["discovery"]["cpu_devices_from"], "fallback");
  const std::string error = platform["discovery"]["error"];
  EXPECT_NE(error.find("damaged-no-online/online"), std::string::npos) << error;
  EXPECT_EQ(platform["discovery"]["clusters"].size(), 0u);
  std::map<std::string, std::vector<int>> devices = CpuDevices(platform);
  ASSERT_EQ(devices.size(), 1u) << text;
  if (!UsableCores().empty()) {
    EXPECT_EQ(devices["cpu"], UsableCores());
  }
  EXPECT_NE(Log().find("CPU topology discovery failed"), std::string::npos) << Log();
  auto [table_rc, table] = Ctl("platform show");
  EXPECT_NE(table.find("CPU devices: fallback"), std::string::npos) << table;
  EXPECT_NE(table.find("discovery failed: "), std::string::npos) << table;
  EXPECT_EQ(Stop(), 0) << Log();
}

TEST_F(DaemonTest, ConfiguredCpuDevicesReplaceTheClustersAndClashesAreRefused) {
  // A cluster split into one device per core; discovery still reports the cluster.
  std::ofstream(dir_ + "/split.toml")
      << "cpu_topology_root = \"" << kSysfsFixtures << "/x86-vm-2vcpu\"\n"
      << kCpu0Toml << kCpu1Toml;
  pid_ = Spawn({"--config", dir_ + "/split.toml"});
  ASSERT_TRUE(WaitServing(socket_)) << Log();
  auto [rc, text] = Ctl("-o json platform show");
  ASSERT_EQ(rc, 0) << text;
  json platform = json::parse(text);
  EXPECT_EQ(platform["discovery"]["cpu_devices_from"], "config");
  EXPECT_EQ(CpuDevices(platform),
            (std::map<std::string, std::vector<int>>{{"cpu.0", {0}}, {"cpu.1", {1}}}));
  const std::vector<int> usable = UsableCores();
  if (std::find(usable.begin(), usable.end(), 1) != usable.end()) {
    ASSERT_EQ(platform["discovery"]["clusters"].size(), 1u) << text;
    EXPECT_EQ(platform["discovery"]["clusters"][0]["name"], "cpu");
  }
  const std::string split_fingerprint = platform["fingerprint"];
  ASSERT_EQ(Stop(), 0) << Log();

  // Only a GPU listed: the CPU devices are still the clusters, and a GPU may not take the
  // name of one ("cpu": the tree's one cluster).
  std::ofstream(dir_ + "/clash.toml")
      << "cpu_topology_root = \"" << kSysfsFixtures << "/x86-vm-2vcpu\"\n"
      << "[[devices]]\nname = \"cpu\"\nkind = \"gpu\"\n";
  pid_ = Spawn({"--config", dir_ + "/clash.toml"});
  int status = 0;
  ASSERT_EQ(waitpid(pid_, &status, 0), pid_);
  pid_ = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << Log();
  EXPECT_NE(Log().find("the GPU device's name 'cpu' is a CPU device's name"), std::string::npos)
      << Log();

  // The unsplit cluster is another platform: plans cached for one do not serve the other.
  Start();
  auto devices = Client().Devices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_NE(devices->fingerprint(), split_fingerprint);
  EXPECT_EQ(Stop(), 0) << Log();
}

TEST_F(DaemonTest, PlatformDiscoverReadsABoardsTreeWithoutADaemon) {
  auto [rc, text] =
      Ctl("-o json platform discover --sysfs-root " + kSysfsFixtures + "/snapdragon-8gen2");
  ASSERT_EQ(rc, 0) << text;
  json topology = json::parse(text);
  std::vector<std::string> names;
  for (const json& c : topology["clusters"]) names.push_back(c["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"cpu.prime", "cpu.big", "cpu.mid", "cpu.little"}));
  EXPECT_EQ(topology["clusters"][3]["cores"], json({0, 1, 2}));
  EXPECT_EQ(topology["clusters"][0]["uarch"], "Cortex-X3");
  EXPECT_EQ(topology["cores"].size(), 8u);

  auto [table_rc, table] =
      Ctl("platform discover --sysfs-root " + kSysfsFixtures + "/x86-vm-2vcpu");
  ASSERT_EQ(table_rc, 0) << table;
  EXPECT_NE(table.find("cpu      0-1    2        -         -        -"), std::string::npos)
      << table;

  std::string err;
  auto [bad_rc, bad] =
      Ctl("platform discover --sysfs-root " + kSysfsFixtures + "/damaged-online-list", &err);
  EXPECT_EQ(bad_rc, 1);
  EXPECT_NE(err.find("pschedctl: cannot tell which CPUs are online: "), std::string::npos) << err;
  EXPECT_NE(err.find("'0-3,banana' is not a CPU list"), std::string::npos) << err;
}

TEST_F(DaemonTest, PschedctlCommandsTableAndJson) {
  Start();
  auto [add_rc, id_line] = Ctl("model add " + kTinyModel + " --name tiny");
  ASSERT_EQ(add_rc, 0) << id_line;
  std::string id = id_line.substr(0, 64);
  auto [ls_rc, ls] = Ctl("model ls");
  EXPECT_EQ(ls_rc, 0);
  EXPECT_NE(ls.find("tiny"), std::string::npos) << ls;
  EXPECT_NE(ls.find(id.substr(0, 12)), std::string::npos) << ls;
  auto [inspect_rc, inspect] = Ctl("model inspect " + id.substr(0, 8));
  EXPECT_EQ(inspect_rc, 0) << inspect;
  EXPECT_TRUE(json::parse(inspect).contains("op_counts"));
  std::string svg = dir_ + "/plan.svg";
  auto [plan_rc, plan] = Ctl("plan show " + id + " --svg " + svg);
  EXPECT_EQ(plan_rc, 0) << plan;
  EXPECT_NE(plan.find("makespan"), std::string::npos) << plan;
  // The Gantt chart (timeline/gantt_svg.h): one bar per subtask with the op name in its tooltip,
  // device rows.
  const std::string chart = ReadFile(svg);
  EXPECT_NE(chart.find("<svg"), std::string::npos);
  EXPECT_NE(chart.find("makespan"), std::string::npos);
  auto devices = Client().Devices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_NE(chart.find(">" + devices->devices(0).name() + "</text>"), std::string::npos) << chart;
  EXPECT_NE(chart.find("<title>"), std::string::npos) << chart;
  auto [infer_rc, infer] = Ctl("-o json infer " + id + " --repeat 3 --trace " + dir_ + "/t.json");
  EXPECT_EQ(infer_rc, 0) << infer;
  EXPECT_EQ(json::parse(infer)["repeat"], 3);
  EXPECT_TRUE(json::parse(ReadFile(dir_ + "/t.json")).contains("traceEvents"));
  auto [status_rc, status] = Ctl("-o json status");
  EXPECT_EQ(status_rc, 0);
  json s = json::parse(status);
  EXPECT_EQ(s["models"], 1);
  EXPECT_EQ(s["inferences"], 3);
  auto [stats_rc, stats] = Ctl("-o json cache stats");
  EXPECT_EQ(json::parse(stats)["plans"], 1);
  auto [cls_rc, cls] = Ctl("cache ls");
  EXPECT_NE(cls.find("iterative"), std::string::npos) << cls;
  auto [purge_rc, purge] = Ctl("-o json cache purge");
  EXPECT_EQ(json::parse(purge)["plans_removed"], 1);
  auto [rm_rc, rm] = Ctl("model rm " + id.substr(0, 10));
  EXPECT_EQ(rm_rc, 0) << rm;
  auto [rm2_rc, rm2] = Ctl("model rm " + id.substr(0, 10));
  EXPECT_EQ(rm2_rc, 1);
  EXPECT_EQ(Stop(), 0);
}

// The daemon runs as root, so root is admin and the socket's group (root's, gid 0) are
// users. nobody, given group 0 as a supplementary group, may register, plan, infer and
// read, and is refused every admin call with a message naming the role; a process outside
// the group that still reaches the socket (its mode loosened by hand) has no role at all.
// Every state-changing call and every refusal is logged with uid, gid and the client's pid.
TEST_F(DaemonTest, RolesFromPeerCredentialsGuardEveryAdminCall) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run clients as other users";
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  const std::string out_dir = dir_ + "/out";
  fs::create_directory(out_dir);
  fs::permissions(out_dir, fs::perms::all);
  Start();

  const Identity user = Nobody({getgrnam("nogroup")->gr_gid, 0});
  CtlRun add = CtlAs(user, socket_, {"model", "add", kTinyModel});
  ASSERT_EQ(add.code, 0) << add.err << Log();
  const std::string id = add.out.substr(0, 64);
  for (const std::vector<std::string>& allowed :
       {std::vector<std::string>{"status"},
        {"model", "ls"},
        {"plan", "show", id, "--scheduler", "heft"},
        {"infer", id, "--input", kTinyInput, "--output", out_dir + "/y.npy"},
        {"plan", "export", id, "--out", out_dir + "/bundle.json"},
        {"cache", "stats"},
        {"cache", "ls"}}) {
    CtlRun run = CtlAs(user, socket_, allowed);
    EXPECT_EQ(run.code, 0) << allowed[0] << ": " << run.err << Log();
  }
  EXPECT_LT(
      MaxDiff(executor::ReadNpy(out_dir + "/y.npy")->data, executor::ReadNpy(kTinyOutput)->data),
      1e-4);

  const std::map<std::string, std::vector<std::string>> admin_calls = {
      {"RemoveModel", {"model", "rm", id}},
      {"PurgeCache", {"cache", "purge", "--all"}},
      {"Calibrate", {"calibrate", "--budget-s", "0.2"}},
      {"VerifyCache", {"cache", "verify"}},
      {"ImportPlans", {"plan", "import", out_dir + "/bundle.json"}},
  };
  for (const auto& [rpc, args] : admin_calls) {
    CtlRun run = CtlAs(user, socket_, args);
    EXPECT_EQ(run.code, 1) << rpc;
    const std::string expected =
        absl::StrCat("pschedctl: permission denied: ", rpc,
                     " needs the admin role; uid 65534 (nobody) gid 65534 (nogroup) pid ", run.pid,
                     " has role user");
    EXPECT_TRUE(Contains(run.err, expected)) << run.err;
    EXPECT_TRUE(Contains(Log(), absl::StrCat("call: ", rpc)) &&
                Contains(Log(), absl::StrCat("pid ", run.pid, " role user: PERMISSION_DENIED")))
        << rpc << Log();
  }
  EXPECT_TRUE(Contains(Log(), absl::StrCat("call: RegisterModel ", id,
                                           " by uid 65534 (nobody) gid 65534 (nogroup) pid ",
                                           add.pid, " role user: OK")))
      << Log();
  // Nothing the refused calls asked for happened.
  auto models = Client().ListModels();
  ASSERT_TRUE(models.ok());
  EXPECT_EQ(models->models_size(), 1);
  EXPECT_EQ(Client().CacheStats()->plans(), 2) << "heft and the default scheduler's";

  // Root is admin: the same calls pass, and are logged with root's pid.
  CtlRun verify = CtlAs(Root(), socket_, {"cache", "verify"});
  EXPECT_EQ(verify.code, 0) << verify.err;
  EXPECT_TRUE(Contains(verify.out, "checked 1 models and 2 plans")) << verify.out;
  CtlRun import = CtlAs(Root(), socket_, {"plan", "import", out_dir + "/bundle.json"});
  EXPECT_EQ(import.code, 0) << import.err;
  EXPECT_TRUE(Contains(import.out, absl::StrCat("model ", id, ": imported 2 plans"))) << import.out;
  CtlRun rm = CtlAs(Root(), socket_, {"model", "rm", id});
  EXPECT_EQ(rm.code, 0) << rm.err;
  EXPECT_TRUE(
      Contains(Log(), absl::StrCat("call: RemoveModel ", id, " by uid 0 (root) gid 0 (root) pid ",
                                   rm.pid, " role admin: OK")))
      << Log();
  EXPECT_TRUE(Contains(Log(), absl::StrCat("call: VerifyCache by uid 0 (root) gid 0 (root) pid ",
                                           verify.pid, " role admin: OK")))
      << Log();
  CtlRun purge = CtlAs(Root(), socket_, {"cache", "purge", "--all"});
  EXPECT_EQ(purge.code, 0) << purge.err;
  EXPECT_TRUE(Contains(Log(), absl::StrCat(" by uid 0 (root) gid 0 (root) pid ", purge.pid,
                                           " role admin: OK")) &&
              Contains(Log(), "call: PurgeCache"))
      << Log();

  // Outside the socket's group: the socket's mode keeps the process out...
  const Identity stranger{4242, 4242, {}};
  CtlRun kept_out = CtlAs(stranger, socket_, {"status"});
  EXPECT_EQ(kept_out.code, 1);
  EXPECT_FALSE(Contains(Log(), "uid 4242"));
  // ...and if the mode is loosened by mistake, the daemon still refuses it everything.
  fs::permissions(dir_ + "/run", fs::perms::all);
  fs::permissions(socket_, fs::perms::all);
  CtlRun refused = CtlAs(stranger, socket_, {"status"});
  EXPECT_EQ(refused.code, 1);
  EXPECT_TRUE(Contains(refused.err, absl::StrCat("pschedctl: permission denied: Status needs the "
                                                 "user role; uid 4242 (4242) gid 4242 (4242) pid ",
                                                 refused.pid, " has role none")))
      << refused.err;
  EXPECT_EQ(CtlAs(stranger, socket_, {"model", "add", kTinyModel}).code, 1);
  EXPECT_EQ(Client().ListModels()->models_size(), 0);
  EXPECT_EQ(Stop(), 0) << Log();
}

// pschedd running as nobody: its own user and root are admins by default; the config adds
// an admin user by id and an admin group; others in the socket's group (nogroup) are users.
TEST_F(DaemonTest, DaemonsOwnUserRootAndConfiguredUsersAndGroupsAreAdmins) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run as other users";
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::others_exec | fs::perms::group_exec);
  const std::string home = dir_ + "/nobody";
  fs::create_directory(home);
  const gid_t nogroup = getgrnam("nogroup")->gr_gid;
  ASSERT_EQ(chown(home.c_str(), getpwnam("nobody")->pw_uid, nogroup), 0);
  const std::string socket = home + "/run/pschedd.sock";
  const std::string config = dir_ + "/access.toml";
  std::ofstream(config) << kCpu0Toml << R"toml(
[access]
admin_users = ["4243"]
admin_groups = ["4244"]
)toml";
  fs::permissions(config, fs::perms::owner_read | fs::perms::others_read);
  const Identity daemon = Nobody({nogroup});
  pid_ = Spawn({"--socket", socket, "--state-dir", home + "/state", "--config", config}, {}, -1,
               false, &daemon);
  ASSERT_TRUE(WaitServing(socket)) << Log();
  EXPECT_TRUE(Contains(Log(),
                       "access: admins: root, 4243, nobody and groups 4244; users: "
                       "members of nogroup"))
      << Log();

  const std::vector<std::pair<std::string, Identity>> admins = {
      {"the daemon's own user", daemon},
      {"root", Root()},
      {"admin_users", {4243, 4243, {nogroup}}},
      {"admin_groups", {4245, 4245, {nogroup, 4244}}},
  };
  const Identity user{4246, 4246, {nogroup}};
  for (const auto& [why, admin] : admins) {
    CtlRun add = CtlAs(user, socket, {"model", "add", kTinyModel});
    ASSERT_EQ(add.code, 0) << add.err << Log();
    const std::string id = add.out.substr(0, 64);
    CtlRun denied = CtlAs(user, socket, {"model", "rm", id});
    EXPECT_EQ(denied.code, 1) << why;
    EXPECT_TRUE(Contains(denied.err, "RemoveModel needs the admin role; uid 4246")) << denied.err;
    CtlRun rm = CtlAs(admin, socket, {"model", "rm", id});
    EXPECT_EQ(rm.code, 0) << why << ": " << rm.err << Log();
    EXPECT_TRUE(Contains(Log(), absl::StrCat("call: RemoveModel ", id, " by uid ", admin.uid)))
        << why;
    CtlRun verify = CtlAs(admin, socket, {"cache", "verify"});
    EXPECT_EQ(verify.code, 0) << why << ": " << verify.err;
  }
  EXPECT_EQ(Stop(), 0) << Log();
}

// Connections of different roles at once: each call is judged by the credentials of its own
// connection, never by a neighbour's (the caller is looked up by the connection's fd).
TEST_F(DaemonTest, ConcurrentCallersOfDifferentRolesAreNeverMixedUp) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run clients as other users";
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_exec);
  Start();
  ASSERT_EQ(Ctl("model add " + kTinyModel).first, 0);
  const Identity user = Nobody({0});
  constexpr int kRounds = 12;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      const bool admin = t % 2 == 0;
      for (int round = 0; round < kRounds; ++round) {
        CtlRun run = CtlAs(admin ? Root() : user, socket_, {"cache", "verify"});
        const bool denied = Contains(run.err, "permission denied");
        if (admin ? run.code != 0 || denied : run.code != 1 || !denied) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0) << Log();
  EXPECT_EQ(Stop(), 0) << Log();
}

// `pschedctl cache verify` while serving: a model whose bytes change on disk is found and
// quarantined (never served again from memory either), a damaged plan is reported and
// recomputed when next asked for; the exit code says whether anything was found.
TEST_F(DaemonTest, CacheVerifyFindsDamageWhileServing) {
  Start();
  auto [add_rc, id_line] = Ctl("model add " + kTinyModel);
  ASSERT_EQ(add_rc, 0) << id_line;
  const std::string id = id_line.substr(0, 64);
  const std::string infer = "infer " + id + " --input " + kTinyInput;
  ASSERT_EQ(Ctl("plan show " + id + " --scheduler heft").first, 0);
  ASSERT_EQ(Ctl(infer + " --scheduler heft").first, 0);
  auto [clean_rc, clean] = Ctl("-o json cache verify");
  EXPECT_EQ(clean_rc, 0) << clean;
  EXPECT_EQ(json::parse(clean)["plans_checked"], 1) << clean;

  auto edit = [this](const std::string& sql) {
    absl::StatusOr<cache::Connection> db = cache::Connection::Open(state_ + "/psched.db");
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE(db->Exec(sql).ok()) << sql;
  };
  edit("UPDATE plans SET schedule_json = json_remove(schedule_json, '$.subtasks[0]')");
  std::string err;
  auto [plan_rc, plan_report] = Ctl("cache verify", &err);
  EXPECT_EQ(plan_rc, 1);
  EXPECT_TRUE(Contains(plan_report, id.substr(0, 12)) && Contains(plan_report, "heft"))
      << plan_report;
  EXPECT_TRUE(Contains(err, "1 problem(s)")) << err;
  auto [replan_rc, replan] = Ctl("-o json plan show " + id + " --scheduler heft");
  ASSERT_EQ(replan_rc, 0);
  EXPECT_FALSE(json::parse(replan)["cached"].get<bool>());
  EXPECT_EQ(Ctl("cache verify").first, 0);

  edit(
      "UPDATE model_chunks SET bytes = CAST(substr(bytes, 1, length(bytes) - 1) || x'00' AS BLOB)");
  auto [model_rc, model_report] = Ctl("cache verify", &err);
  EXPECT_EQ(model_rc, 1);
  EXPECT_TRUE(Contains(model_report, "(model bytes)") && Contains(model_report, "quarantined"))
      << model_report;
  auto [infer_rc, infer_out] = Ctl(infer, &err);
  EXPECT_EQ(infer_rc, 1);
  EXPECT_TRUE(Contains(err, "quarantined")) << err;
  EXPECT_EQ(Ctl("model add " + kTinyModel).first, 0);
  EXPECT_EQ(Ctl(infer).first, 0) << Log();
  EXPECT_EQ(Ctl("cache verify").first, 0);
  EXPECT_EQ(Stop(), 0) << Log();
}

// A real torch export with dynamic axes (batch, height, width): refused until its symbolic
// spatial dims are bound, then registered once per bound shape, each with its own plans, and
// run like the static export of the same network.
TEST_F(DaemonTest, DynamicAxesModelRegistersOncePerBoundShape) {
  const std::string dynamic = std::string(PSCHED_TEST_DATA_DIR) + "/tiny_cnn_dynamic.onnx";
  Start();
  std::string err;
  auto [unbound_rc, unbound] = Ctl("model add " + dynamic, &err);
  EXPECT_EQ(unbound_rc, 1) << unbound;
  EXPECT_THAT(err, ::testing::HasSubstr("graph input 'input' dimension 2 'height'"));
  EXPECT_THAT(err, ::testing::HasSubstr("bind it with --input-shape input=1x3x<height>x<width>"));

  auto [add_rc, added] = Ctl("-o json model add " + dynamic + " --input-shape input=1x3x16x16");
  ASSERT_EQ(add_rc, 0) << added << Log();
  json model = json::parse(added);
  EXPECT_EQ(model["inputs"][0]["dims"], json({1, 3, 16, 16}));
  EXPECT_EQ(model["outputs"][0]["dims"], json({1, 10}));
  EXPECT_EQ(model["input_shapes"], json({{"input", {1, 3, 16, 16}}}));
  const std::string id = model["id"];

  std::string out_path = dir_ + "/out.npy";
  auto [infer_rc, infer_text] =
      Ctl("infer " + id + " --input " + kTinyInput + " --output " + out_path);
  ASSERT_EQ(infer_rc, 0) << infer_text << Log();
  EXPECT_LT(MaxDiff(executor::ReadNpy(out_path)->data, executor::ReadNpy(kTinyOutput)->data), 1e-4);

  auto [big_rc, big] = Ctl("-o json model add " + dynamic + " --input-shape input=1x3x32x32");
  ASSERT_EQ(big_rc, 0) << big;
  const std::string big_id = json::parse(big)["id"];
  EXPECT_NE(big_id, id);
  EXPECT_EQ(json::parse(big)["inputs"][0]["dims"], json({1, 3, 32, 32}));
  auto [again_rc, again] = Ctl("-o json model add " + dynamic + " --input-shape input=1x3x16x16");
  EXPECT_EQ(json::parse(again)["id"], id);
  EXPECT_TRUE(json::parse(again)["already_registered"].get<bool>());

  // Each bound shape plans for itself: the second plan is not the first one's.
  auto [plan_rc, plan] = Ctl("-o json plan show " + id + " --scheduler heft");
  ASSERT_EQ(plan_rc, 0) << plan;
  auto [big_plan_rc, big_plan] = Ctl("-o json plan show " + big_id + " --scheduler heft");
  ASSERT_EQ(big_plan_rc, 0) << big_plan;
  EXPECT_FALSE(json::parse(big_plan)["cached"].get<bool>());
  EXPECT_EQ(json::parse(big_plan)["model_id"], big_id);
  EXPECT_NE(json::parse(big_plan)["makespan_us"], json::parse(plan)["makespan_us"]);

  struct Refusal {
    std::string flags, message;
  };
  const std::vector<Refusal> refusals = {
      {"--input-shape input=1x3x16", "input shape given for 'input' [1,3,16] has rank 3"},
      {"--input-shape input=1x4x16x16", "graph input 'input' [batch,3,height,width] fixes it at 3"},
      {"--input-shape images=1x3x16x16",
       "input shape given for 'images', but the model has no graph input of that name (its "
       "inputs: input)"},
      {"--input-shape input=1x3x0x16", "input shape 'input=1x3x0x16': dim 2 is 0"},
      {"--input-shape input=1x3xhx16", "dim 2 ('h') is not a decimal number"},
      {"--input-shape input=1x3x16x16 --input-shape input=1x3x8x8",
       "--input-shape gives input 'input' twice"},
  };
  for (const Refusal& r : refusals) {
    auto [rc, out] = Ctl("model add " + dynamic + " " + r.flags, &err);
    EXPECT_EQ(rc, 1) << r.flags << ": " << out;
    EXPECT_THAT(err, ::testing::HasSubstr(r.message)) << r.flags;
  }
  auto [ls_rc, ls] = Ctl("-o json model ls");
  EXPECT_EQ(json::parse(ls)["models"].size(), 2u) << ls;
  EXPECT_EQ(Stop(), 0) << Log();
}

// tiny_cnn with every initializer moved to `data_name` in `folder` (as onnx.save does with
// save_as_external_data), its location set to `location` (default: `data_name`). Returns the
// model's path.
std::string WriteExternalModel(const std::string& folder, const std::string& data_name,
                               const std::string& location = "") {
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(ReadFile(kTinyModel)));
  std::string data;
  for (onnx::TensorProto& t : *model.mutable_graph()->mutable_initializer()) {
    EXPECT_FALSE(t.raw_data().empty()) << t.name();
    auto entry = [&](const std::string& key, const std::string& value) {
      auto* e = t.add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    entry("location", location.empty() ? data_name : location);
    entry("offset", std::to_string(data.size()));
    entry("length", std::to_string(t.raw_data().size()));
    data += t.raw_data();
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
  }
  fs::create_directories(folder);
  std::ofstream(folder + "/" + data_name, std::ios::binary) << data;
  const std::string path = folder + "/tiny_external.onnx";
  std::ofstream(path, std::ios::binary) << model.SerializeAsString();
  return path;
}

// A model whose weights live in a file beside it: pschedctl inlines them and the model runs;
// the daemon refuses the same bytes sent as they are, saying how to send them; locations
// outside the model's folder are refused naming them; --graph-only sends the graph alone.
TEST_F(DaemonTest, ExternalDataIsInlinedByPschedctlAndOnlyFromTheModelsFolder) {
  Start();
  const std::string folder = dir_ + "/export";
  const std::string path = WriteExternalModel(folder, "tiny_external.onnx.data");
  auto [add_rc, added] = Ctl("-o json model add " + path);
  ASSERT_EQ(add_rc, 0) << added << Log();
  json model = json::parse(added);
  EXPECT_TRUE(model["has_weights"].get<bool>());
  // Inlined, it is the self-contained export byte for byte: the same model, the same id.
  auto [tiny_rc, tiny_id] = Ctl("model add " + kTinyModel);
  EXPECT_EQ(tiny_id, model["id"].get<std::string>() + "\n");
  std::string out_path = dir_ + "/out.npy";
  auto [infer_rc, infer_text] = Ctl("infer " + model["id"].get<std::string>() + " --input " +
                                    kTinyInput + " --output " + out_path);
  ASSERT_EQ(infer_rc, 0) << infer_text << Log();
  EXPECT_LT(MaxDiff(executor::ReadNpy(out_path)->data, executor::ReadNpy(kTinyOutput)->data), 1e-4);

  auto sent_as_is = Client().RegisterModel(ReadFile(path), "as is", false);
  EXPECT_EQ(sent_as_is.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(sent_as_is.status().message()),
              ::testing::HasSubstr("inline the external data (pschedctl model add / "
                                   "psched.Client.add_model do it)"));

  auto [graph_rc, graph_only] = Ctl("-o json model add " + path + " --graph-only");
  ASSERT_EQ(graph_rc, 0) << graph_only << Log();
  EXPECT_FALSE(json::parse(graph_only)["has_weights"].get<bool>());

  std::ofstream(dir_ + "/secret.bin") << std::string(4096, 's');
  fs::create_symlink(dir_ + "/secret.bin", dir_ + "/linked.bin");
  struct Refusal {
    std::string location, why;
  };
  const std::vector<Refusal> refusals = {
      {"../secret.bin", "climbs out with '..'"},
      {dir_ + "/secret.bin", "is an absolute path"},
      {"link.bin", "leads out of the folder through a symlink"},
  };
  for (const Refusal& r : refusals) {
    const std::string outside = dir_ + "/outside_" + std::to_string(&r - refusals.data());
    const std::string bad = WriteExternalModel(outside, "weights.bin", r.location);
    fs::create_symlink(dir_ + "/secret.bin", outside + "/link.bin");
    std::string err;
    auto [rc, out] = Ctl("model add " + bad, &err);
    EXPECT_EQ(rc, 1) << r.location << ": " << out;
    EXPECT_THAT(err, ::testing::HasSubstr("external data location '" + r.location + "'"));
    EXPECT_THAT(err, ::testing::HasSubstr(r.why));
    EXPECT_THAT(err, ::testing::HasSubstr("only from files inside the model's folder"));
  }

  fs::remove(folder + "/tiny_external.onnx.data");
  std::string err;
  auto [missing_rc, missing] = Ctl("model add " + path, &err);
  EXPECT_EQ(missing_rc, 1) << missing;
  EXPECT_THAT(err, ::testing::HasSubstr("external data file 'tiny_external.onnx.data'"));
  EXPECT_THAT(err, ::testing::HasSubstr("--graph-only"));
  EXPECT_EQ(Stop(), 0) << Log();
}


namespace bounds {

// The memory bomb and its cousins: an input of [1, channels, side, side], a Concat of
// `copies` copies of it along channels, then Relu, Add, Sigmoid, Add and a global average
// pool. Every tensor is within the importer's limits; a run needs several times
// `copies` x the input's bytes.
std::string MemoryBombOnnx(int64_t channels, int64_t side, int copies) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("bomb");
  auto value = [](onnx::ValueInfoProto* info, const std::string& name,
                  const std::vector<int64_t>& dims) {
    info->set_name(name);
    onnx::TypeProto_Tensor* type = info->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) type->mutable_shape()->add_dim()->set_dim_value(d);
  };
  value(graph->add_input(), "x", {1, channels, side, side});
  value(graph->add_output(), "y", {1, channels * copies, 1, 1});
  auto node = [&](const std::string& op, const std::vector<std::string>& inputs,
                  const std::string& output) {
    onnx::NodeProto* n = graph->add_node();
    n->set_op_type(op);
    n->set_name(output);
    for (const std::string& input : inputs) n->add_input(input);
    n->add_output(output);
    return n;
  };
  onnx::NodeProto* concat = node("Concat", std::vector<std::string>(copies, "x"), "c");
  onnx::AttributeProto* axis = concat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  node("Relu", {"c"}, "r");
  node("Add", {"r", "c"}, "a");
  node("Sigmoid", {"a"}, "s");
  node("Add", {"s", "a"}, "b");
  node("GlobalAveragePool", {"b"}, "y");
  return model.SerializeAsString();
}

// Resident and peak resident set of process `pid`, bytes.
std::pair<int64_t, int64_t> RssAndPeak(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  int64_t rss_kib = -1, hwm_kib = -1;
  while (std::getline(status, line)) {
    std::sscanf(line.c_str(), "VmRSS: %" SCNd64, &rss_kib);
    std::sscanf(line.c_str(), "VmHWM: %" SCNd64, &hwm_kib);
  }
  return {rss_kib * 1024, hwm_kib * 1024};
}

}  // namespace bounds

// The 278-byte memory bomb registers, but its plan is refused by max_plan_memory_bytes before
// anything is allocated for it - by plan show and by infer, with messages naming the peak,
// the largest tensors and the key - and so are its larger cousins; pschedd's resident set
// stays within 50 MB of idle throughout, and a small model still serves.
TEST_F(DaemonTest, MemoryBombIsRefusedBeforeAnyLargeAllocation) {
  const std::string config_path = dir_ + "/bounds.toml";
  std::ofstream(config_path) << "max_plan_memory_bytes = 1073741824\n" << kCpu0Toml;
  pid_ = Spawn({"--config", config_path});
  ASSERT_TRUE(WaitServing(socket_)) << Log();
  EXPECT_THAT(ReadFile(dir_ + "/pschedd.log"),
              ::testing::HasSubstr("max_plan_memory_bytes 1073741824 (1.0 GiB)"));

  const std::string bomb = bounds::MemoryBombOnnx(16, 1024, 16);
  EXPECT_LT(bomb.size(), 400u);
  std::ofstream(dir_ + "/bomb.onnx", std::ios::binary) << bomb;
  // Cousins: the same 1 GiB tensors from a 4-channel 2048x2048 and a 1-channel 4096x4096
  // input (every tensor at the importer's 2^28-element limit).
  std::ofstream(dir_ + "/cousin.onnx", std::ios::binary) << bounds::MemoryBombOnnx(4, 2048, 16);
  std::ofstream(dir_ + "/wide.onnx", std::ios::binary) << bounds::MemoryBombOnnx(1, 4096, 16);
  std::vector<std::string> ids;
  for (const char* name : {"bomb", "cousin", "wide"}) {
    auto [rc, added] = Ctl(absl::StrCat("-o json model add ", dir_, "/", name, ".onnx"));
    ASSERT_EQ(rc, 0) << added << Log();
    ids.push_back(json::parse(added)["id"]);
  }
  auto [tiny_rc, tiny] = Ctl("-o json model add " + kTinyModel);
  ASSERT_EQ(tiny_rc, 0) << tiny;
  const std::string tiny_id = json::parse(tiny)["id"];
  auto [idle_rss, idle_peak] = bounds::RssAndPeak(pid_);
  ASSERT_GT(idle_rss, 0);

  std::string err;
  for (const std::string& id : ids) {
    for (const char* command : {"plan show ", "infer "}) {
      auto [rc, out] = Ctl(absl::StrCat(command, id, " --scheduler heft"), &err);
      EXPECT_EQ(rc, 1) << command << out;
      EXPECT_THAT(err, ::testing::HasSubstr("at its peak"));
      EXPECT_THAT(err, ::testing::HasSubstr("largest tensors '"));
      EXPECT_THAT(err,
                  ::testing::HasSubstr("over max_plan_memory_bytes = 1073741824 (1.0 GiB)"));
      EXPECT_THAT(err, ::testing::HasSubstr("nothing was allocated for it"));
    }
  }
  // The bomb's peak: its four 1 GiB activations, three of which are live at once.
  auto [bomb_rc, bomb_out] = Ctl("infer " + ids[0] + " --scheduler heft", &err);
  EXPECT_THAT(err, ::testing::HasSubstr("largest tensors 'a' 1.0 GiB, 'b' 1.0 GiB, 'c' 1.0 GiB"));
  std::printf("bomb refused: %s", err.c_str());

  auto [rss, peak] = bounds::RssAndPeak(pid_);
  std::printf("pschedd RSS idle %.1f MB, after the refusals %.1f MB; peak %.1f -> %.1f MB\n",
              idle_rss / 1e6, rss / 1e6, idle_peak / 1e6, peak / 1e6);
  EXPECT_LT(rss - idle_rss, 50'000'000);
  EXPECT_LT(peak - idle_rss, 50'000'000);

  auto [plan_rc, plan] = Ctl("-o json plan show " + tiny_id + " --scheduler heft");
  ASSERT_EQ(plan_rc, 0) << plan;
  const json memory = json::parse(plan)["memory"];
  EXPECT_GT(memory["peak_bytes"].get<int64_t>(), memory["activation_bytes"].get<int64_t>());
  EXPECT_EQ(memory["largest_tensors"].size(), 3u) << memory;
  auto [text_rc, text] = Ctl("plan show " + tiny_id + " --scheduler heft");
  EXPECT_THAT(text, ::testing::HasSubstr("peak memory "));
  auto [infer_rc, inferred] = Ctl("infer " + tiny_id + " --scheduler heft --input " + kTinyInput);
  EXPECT_EQ(infer_rc, 0) << inferred << Log();
  EXPECT_EQ(Stop(), 0) << Log();
}

// A user who fills their max_models_per_user quota is refused the next model with a message
// naming the quota and their usage; another user's models stay and they register their own;
// an admin (root) is exempt.
TEST_F(DaemonTest, OneUserFillingTheirQuotaLeavesOthersModelsAlone) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run clients as other users";
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  const std::string config_path = dir_ + "/quota.toml";
  std::ofstream(config_path) << "max_models_per_user = 2\n" << kCpu0Toml;
  pid_ = Spawn({"--config", config_path});
  ASSERT_TRUE(WaitServing(socket_)) << Log();
  std::vector<std::string> paths;
  for (int i = 0; i < 5; ++i) {
    paths.push_back(absl::StrCat(dir_, "/small", i, ".onnx"));
    std::ofstream(paths.back(), std::ios::binary) << bounds::MemoryBombOnnx(1, 8 + i, 2);
    fs::permissions(paths.back(),
                    fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  }
  const std::vector<gid_t> groups = {getgrnam("nogroup")->gr_gid, 0};
  const Identity alice = Nobody(groups);
  const Identity bob{4242, getgrnam("nogroup")->gr_gid, groups};
  CtlRun bobs = CtlAs(bob, socket_, {"model", "add", paths[4]});
  ASSERT_EQ(bobs.code, 0) << bobs.err << Log();
  for (int i = 0; i < 2; ++i) {
    CtlRun add = CtlAs(alice, socket_, {"model", "add", paths[i]});
    ASSERT_EQ(add.code, 0) << add.err << Log();
  }
  CtlRun over = CtlAs(alice, socket_, {"model", "add", paths[2]});
  EXPECT_EQ(over.code, 1);
  EXPECT_THAT(over.err, ::testing::HasSubstr(
                            "model not registered: over max_models_per_user = "
                            "2: uid 65534 (nobody) has registered 2 models of"));
  EXPECT_THAT(over.err, ::testing::HasSubstr("nothing else was removed"));
  auto models = Client().ListModels();
  ASSERT_TRUE(models.ok());
  EXPECT_EQ(models->models_size(), 3) << "bob's model and alice's two stay";
  // Bob has room of his own; root is exempt.
  EXPECT_EQ(CtlAs(bob, socket_, {"model", "add", paths[2]}).code, 0);
  EXPECT_EQ(CtlAs(Root(), socket_, {"model", "add", paths[3]}).code, 0);
  EXPECT_EQ(Client().ListModels()->models_size(), 5);
  EXPECT_EQ(Stop(), 0) << Log();
}

// Sixteen models whose compiled plans hold about 13 MiB each, each run in turn under
// max_loaded_bytes = 64 MiB: the least recently used are unloaded so what stays loaded never
// passes the bound (pschedctl status shows it), RSS stays near idle plus the bound, and an
// unloaded model serves again when asked.
TEST_F(DaemonTest, SixteenBigModelsAreBoundedByMaxLoadedBytes) {
  const std::string config_path = dir_ + "/loaded.toml";
  std::ofstream(config_path) << "max_loaded_bytes = 67108864\n" << kCpu0Toml;
  pid_ = Spawn({"--config", config_path});
  ASSERT_TRUE(WaitServing(socket_)) << Log();
  std::vector<std::string> ids;
  for (int i = 0; i < 16; ++i) {
    const std::string path = absl::StrCat(dir_, "/big", i, ".onnx");
    std::ofstream(path, std::ios::binary) << bounds::MemoryBombOnnx(4, 256 + i, 4);
    auto [rc, added] = Ctl("-o json model add " + path);
    ASSERT_EQ(rc, 0) << added << Log();
    ids.push_back(json::parse(added)["id"]);
  }
  const int64_t idle_rss = bounds::RssAndPeak(pid_).first;
  int64_t most_loaded = 0;
  for (const std::string& id : ids) {
    auto [rc, out] = Ctl("infer " + id + " --scheduler heft");
    ASSERT_EQ(rc, 0) << out << Log();
    auto [status_rc, status] = Ctl("-o json status");
    ASSERT_EQ(status_rc, 0);
    const json resources = json::parse(status)["resources"];
    EXPECT_EQ(resources["max_loaded_bytes"], 67108864);
    EXPECT_LE(resources["loaded_bytes"].get<int64_t>(), 67108864) << resources;
    most_loaded = std::max(most_loaded, resources["loaded_bytes"].get<int64_t>());
  }
  EXPECT_GT(most_loaded, 32 << 20) << "several models stay loaded";
  const int64_t rss = bounds::RssAndPeak(pid_).first;
  std::printf("16 models: RSS idle %.1f MB, after %.1f MB; loaded at most %.1f MiB\n",
              idle_rss / 1e6, rss / 1e6, most_loaded / 1048576.0);
  // ThreadSanitizer's shadow memory multiplies what each loaded byte costs in RSS.
  if (!kThreadSanitizer) EXPECT_LT(rss - idle_rss, (64 << 20) + 40'000'000);
  EXPECT_THAT(Log(), ::testing::HasSubstr("over max_loaded_bytes = 67108864"));
  auto [again_rc, again] = Ctl("infer " + ids[0] + " --scheduler heft");
  EXPECT_EQ(again_rc, 0) << again;
  EXPECT_EQ(Stop(), 0) << Log();
}

// A planning flood - expensive exact plans (one whole-graph stage) asked by several users at
// once - runs one plan at a time (max_concurrent_plans = 1) at idle priority, each user's
// request capped by max_planning_s (its 8 s search budget lowered to the cap), while a served
// model's inference latency stays within 1.5x of idle.
TEST_F(DaemonTest, PlanningFloodIsBoundedAndInferenceKeepsRunning) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run clients as other users";
  if (!fs::exists(SqueezenetPath(".onnx"))) GTEST_SKIP() << "no ../shared reference models";
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  const std::string config_path = dir_ + "/flood.toml";
  // Two devices: the exact search over partitions is expensive (8 s for an admin here).
  std::ofstream(config_path) << "max_concurrent_plans = 1\nmax_planning_s = 2\n"
                             << kCpu0Toml << kCpu1Toml;
  pid_ = Spawn({"--config", config_path});
  ASSERT_TRUE(WaitServing(socket_)) << Log();
  auto [tiny_rc, tiny] = Ctl("-o json model add " + kTinyModel);
  ASSERT_EQ(tiny_rc, 0) << tiny;
  const std::string tiny_id = json::parse(tiny)["id"];
  auto [big_rc, big] = Ctl("-o json model add " + SqueezenetPath(".onnx"));
  ASSERT_EQ(big_rc, 0) << big;
  const std::string big_id = json::parse(big)["id"];

  v1::InferRequest request;
  request.set_model_id(tiny_id);
  request.set_scheduler("heft");
  *request.add_inputs() = TensorFromNpy(kTinyInput);
  client::Client client = Client();
  // Back-to-back inferences for `seconds`: their latencies, sorted.
  auto latencies_us = [&](double seconds) {
    std::vector<double> latencies;
    for (const absl::Time end = absl::Now() + absl::Seconds(seconds); absl::Now() < end;) {
      auto response = client.Infer(request);
      EXPECT_TRUE(response.ok()) << response.status();
      if (response.ok()) latencies.push_back(response->latency_us());
    }
    std::sort(latencies.begin(), latencies.end());
    return latencies;
  };
  auto median = [](const std::vector<double>& sorted) {
    return sorted.empty() ? 0.0 : sorted[sorted.size() / 2];
  };
  latencies_us(0.5);  // compiled and warm
  const double idle_us = median(latencies_us(2));

  const std::vector<gid_t> groups = {getgrnam("nogroup")->gr_gid, 0};
  const std::vector<Identity> users = {Nobody(groups),
                                       {4242, getgrnam("nogroup")->gr_gid, groups},
                                       {4243, getgrnam("nogroup")->gr_gid, groups}};
  std::vector<CtlRun> runs(4);
  std::vector<std::thread> flood;
  for (size_t i = 0; i < runs.size(); ++i) {
    flood.emplace_back([&, i] {
      runs[i] = CtlAs(users[i % users.size()], socket_,
                      {"plan", "show", big_id, "--scheduler", "exact", "--option",
                       absl::StrCat("seed=", i), "--option", "staging=false", "--option",
                       "timeout_ms=8000"});
    });
  }
  absl::SleepFor(absl::Seconds(1));
  auto [status_rc, status] = Ctl("-o json status");
  const json resources = json::parse(status)["resources"];
  EXPECT_EQ(resources["planning"], 1) << resources;
  EXPECT_GE(resources["planning_queued"].get<int>(), 1) << resources;
  const std::vector<double> flooded = latencies_us(3);
  // Still planning when the window closed: the inferences above ran beside the flood.
  auto [after_rc, after] = Ctl("-o json status");
  EXPECT_GE(json::parse(after)["resources"]["planning"].get<int>() +
                json::parse(after)["resources"]["planning_queued"].get<int>(),
            1)
      << after;
  const double flooded_us = median(flooded);
  for (std::thread& t : flood) t.join();
  int capped = 0;
  for (const CtlRun& run : runs) {
    if (run.code == 0) continue;
    EXPECT_THAT(run.err, ::testing::HasSubstr("took longer than max_planning_s = 2 s")) << run.err;
    ++capped;
  }
  std::printf("inference median %.0f us idle, %.0f us during the planning flood (x%.2f); %d of %zu "
              "plan requests capped\n",
              idle_us, flooded_us, flooded_us / idle_us, capped, runs.size());
  // Inference is admitted and served while plans are computed, not queued behind them. How
  // fast it stays is a printed figure, not a threshold: ctest runs other tests on the same
  // two cores.
  EXPECT_GE(flooded.size(), 100u);
  EXPECT_EQ(Stop(), 0) << Log();
}

}  // namespace
}  // namespace psched
