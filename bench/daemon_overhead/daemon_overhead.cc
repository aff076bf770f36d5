// daemon_overhead: what pschedd adds on top of the executor.
//
// Starts the real pschedd on a private socket, registers a small model and measures over
// gRPC (1) Infer round trips: client-measured latency minus the executor's own time, i.e.
// transport + admission queue + tensor conversion, (2) GetPlan answered from the cache and
// (3) Devices, a unary call answered from memory by gRPC's sync server: the floor of a call
// without the call pollers that serve Infer and GetPlan (daemon/rpc/call_pollers.h).
// Prints medians and p95 in microseconds. No wall-clock thresholds: it reports, it does not
// judge.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/client.h"
#include "source_dir.h"

namespace {

double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  size_t index = static_cast<size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

double Mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pschedd request overhead: Infer round trip minus executor time, cached GetPlan"};
  std::string model_path = std::string(PSCHED_SOURCE_DIR) + "/tests/daemon/data/tiny_cnn.onnx";
  std::string pschedd = PSCHEDD_PATH;
  int iterations = 200;
  std::vector<int> client_counts = {1, 2, 4, 8};
  int spin_us = 250;
  int call_pollers = 1;
  int brief_infer_us = 1000;
  app.add_option("--model", model_path, "ONNX model to run")->check(CLI::ExistingFile);
  app.add_option("--pschedd", pschedd, "pschedd binary");
  app.add_option("--iterations", iterations, "measured calls per metric")
      ->check(CLI::PositiveNumber);
  app.add_option("--clients", client_counts,
                 "concurrent client counts for the throughput table (each sends --iterations)")
      ->check(CLI::PositiveNumber);
  app.add_option("--spin-us", spin_us,
                 "how long the daemon's Infer pollers and the client poll before sleeping "
                 "(poll_spin_us, ClientOptions::spin) [250]")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--call-pollers", call_pollers, "the daemon's call_pollers [1]")
      ->check(CLI::Range(1, 64));
  app.add_option("--brief-infer-us", brief_infer_us,
                 "the daemon's brief_infer_us: 0 hands every Infer to a spare thread [1000]")
      ->check(CLI::Range(0, 10000000));
  CLI11_PARSE(app, argc, argv);

  std::string pattern = (std::filesystem::temp_directory_path() / "psched_bench_XXXXXX").string();
  const std::string dir = mkdtemp(pattern.data());
  const std::string socket = dir + "/pschedd.sock";
  const std::string config = dir + "/pschedd.toml";
  std::ofstream(config) << "poll_spin_us = " << spin_us << "\ncall_pollers = " << call_pollers
                        << "\nbrief_infer_us = " << brief_infer_us << "\n";
  const pid_t bench_pid = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // no orphan daemon if the bench dies
    if (getppid() != bench_pid) _exit(127);
    execl(pschedd.c_str(), pschedd.c_str(), "--config", config.c_str(), "--socket", socket.c_str(),
          "--state-dir", (dir + "/state").c_str(), "--log-level", "warn", "--no-auto-calibrate",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  auto stop = [&] {
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
    std::filesystem::remove_all(dir);
  };

  psched::client::ClientOptions options;
  options.socket = socket;
  options.timeout = absl::Seconds(60);
  options.spin = absl::Microseconds(spin_us);
  bool up = false;
  for (int i = 0; i < 200 && !up; ++i) {
    up = psched::client::Client(options).Status().ok();
    if (!up) usleep(50000);
  }
  if (!up) {
    std::fprintf(stderr, "daemon_overhead: pschedd did not start\n");
    stop();
    return 1;
  }
  psched::client::Client client(options);
  std::ifstream in(model_path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  auto registered = client.RegisterModel(bytes.str(), "bench", true);
  if (!registered.ok()) {
    std::fprintf(stderr, "daemon_overhead: %s\n",
                 std::string(registered.status().message()).c_str());
    stop();
    return 1;
  }
  const std::string id = registered->model().id();
  psched::v1::InferRequest request;
  request.set_model_id(id);

  auto first_plan = client.GetPlan(id, "");
  if (!first_plan.ok()) {
    std::fprintf(stderr, "daemon_overhead: %s\n",
                 std::string(first_plan.status().message()).c_str());
    stop();
    return 1;
  }
  for (int i = 0; i < 10; ++i) (void)client.Infer(request);  // warm up caches and kernels

  std::vector<double> round_trip, executor, overhead, daemon_side;
  for (int i = 0; i < iterations; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto response = client.Infer(request);
    double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (!response.ok()) continue;
    round_trip.push_back(us);
    executor.push_back(response->execute_us());
    overhead.push_back(us - response->execute_us());
    daemon_side.push_back(response->latency_us() - response->execute_us());
  }
  std::vector<double> plan_latency;
  for (int i = 0; i < iterations; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto plan = client.GetPlan(id, "");
    double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (plan.ok() && plan->cached()) plan_latency.push_back(us);
  }
  // A unary call the daemon answers from memory on gRPC's sync server (Devices).
  std::vector<double> status_latency;
  for (int i = 0; i < iterations; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto status = client.Devices();
    double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (status.ok()) status_latency.push_back(us);
  }
  // Throughput: N clients, each on its own channel, each sending `iterations` inferences.
  struct Throughput {
    int clients;
    double per_s;
    int failed;
  };
  std::vector<Throughput> throughput;
  for (int clients : client_counts) {
    std::vector<int> failures(static_cast<size_t>(clients), 0);
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&, c] {
        psched::client::Client own(options);
        for (int i = 0; i < iterations; ++i) {
          if (!own.Infer(request).ok()) ++failures[static_cast<size_t>(c)];
        }
      });
    }
    for (std::thread& t : threads) t.join();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    int failed = 0;
    for (int f : failures) failed += f;
    throughput.push_back({clients, (clients * iterations - failed) / seconds, failed});
  }
  stop();
  if (round_trip.empty() || plan_latency.empty()) {
    std::fprintf(stderr, "daemon_overhead: calls failed\n");
    return 1;
  }
  std::printf(
      "model %s (%lld ops), %zu inferences, %zu cached plans, spin %d us, %d call pollers, "
      "brief_infer_us %d\n",
      std::filesystem::path(model_path).filename().c_str(),
      static_cast<long long>(registered->model().ops()), round_trip.size(), plan_latency.size(),
      spin_us, call_pollers, brief_infer_us);
  std::printf("%-34s %10s %10s %10s\n", "metric (us)", "median", "mean", "p95");
  auto row = [](const char* name, const std::vector<double>& v) {
    std::printf("%-34s %10.1f %10.1f %10.1f\n", name, Percentile(v, 0.5), Mean(v),
                Percentile(v, 0.95));
  };
  row("infer round trip (client)", round_trip);
  row("executor time", executor);
  row("infer overhead (round trip - exec)", overhead);
  row("  of which inside the daemon", daemon_side);
  row("cached GetPlan round trip", plan_latency);
  if (!status_latency.empty()) row("Devices round trip (sync server)", status_latency);
  std::printf("overhead / round trip (median): %.3f\n",
              Percentile(overhead, 0.5) / Percentile(round_trip, 0.5));
  std::printf("%-10s %14s %10s\n", "clients", "inferences/s", "failed");
  for (const Throughput& t : throughput) {
    std::printf("%-10d %14.0f %10d\n", t.clients, t.per_s, t.failed);
  }
  return 0;
}
