#include "daemon/rpc/server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/server_posix.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "daemon/engine/budgets.h"
#include "daemon/rpc/systemd.h"
#include "spdlog/spdlog.h"

namespace psched::daemon {

namespace {

// `configured` with the bounds left at 0 set to their defaults for this machine.
absl::StatusOr<DaemonConfig> WithBudgets(const DaemonConfig& configured) {
  const bool defaults_needed = configured.cache_max_bytes == 0 ||
                               configured.max_model_bytes_per_user == 0 ||
                               configured.max_plan_memory_bytes == 0 ||
                               configured.max_loaded_bytes == 0 ||
                               configured.max_concurrent_plans == 0;
  if (!defaults_needed) return configured;
  absl::StatusOr<MachineResources> machine = ReadMachineResources(configured.state_dir);
  if (!machine.ok()) return machine.status();
  DaemonConfig config = ResolveBudgets(configured, *machine);
  spdlog::info(
      "budgets: cache_max_bytes {} ({}), max_model_bytes_per_user {} ({}), "
      "max_models_per_user {}, max_plan_memory_bytes {} ({}), max_loaded_bytes {} ({}), "
      "max_concurrent_plans {}, max_planning_s {}; memory {}{}, state filesystem {}, {} cores",
      config.cache_max_bytes, FormatBytes(config.cache_max_bytes),
      config.max_model_bytes_per_user, FormatBytes(config.max_model_bytes_per_user),
      config.max_models_per_user, config.max_plan_memory_bytes,
      FormatBytes(config.max_plan_memory_bytes), config.max_loaded_bytes,
      FormatBytes(config.max_loaded_bytes), config.max_concurrent_plans, config.max_planning_s,
      FormatBytes(machine->memory_bytes()),
      machine->cgroup_limit_bytes.has_value() &&
              *machine->cgroup_limit_bytes < machine->mem_total_bytes
          ? " (the cgroup's limit)"
          : "",
      FormatBytes(machine->fs_bytes), machine->cores);
  return config;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const DaemonConfig& configured,
                                                      std::unique_ptr<Backend> backend) {
  absl::StatusOr<DaemonConfig> budgeted = WithBudgets(configured);
  if (!budgeted.ok()) return budgeted.status();
  const DaemonConfig& config = *budgeted;
  std::unique_ptr<Server> server(new Server(config));

  systemd::NotifyStatus("opening the cache");
  std::error_code ec;
  // A state dir we create holds every uploaded model: owner only (0700), whatever the umask.
  namespace fs = std::filesystem;
  if (!fs::exists(config.state_dir, ec)) {
    fs::create_directories(config.state_dir, ec);
    if (!ec) fs::permissions(config.state_dir, fs::perms::owner_all, ec);
  }
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create state dir ", config.state_dir, ": ", ec.message()));
  }
  cache::StoreOptions store_options;
  store_options.max_db_bytes = config.cache_max_bytes;
  absl::StatusOr<std::unique_ptr<cache::Store>> store =
      cache::Store::Open(config.state_dir, store_options);
  if (!store.ok()) return store.status();
  server->engine_ = std::make_unique<Engine>(config, std::move(*store), std::move(backend));

  systemd::NotifyStatus("opening the socket");
  std::vector<int> activated = systemd::ListenFds();
  absl::StatusOr<std::unique_ptr<Listener>> listener =
      activated.empty() ? Listener::Bind(config.socket) : Listener::Adopt(activated.front());
  for (size_t i = 1; i < activated.size(); ++i) close(activated[i]);
  if (!listener.ok()) return listener.status();
  server->listener_ = std::move(*listener);

  // Users are the socket's group unless configured: whoever the socket's mode lets in.
  std::optional<gid_t> socket_group;
  struct stat socket_stat {};
  if (!server->listener_->path().empty() &&
      stat(server->listener_->path().c_str(), &socket_stat) == 0) {
    socket_group = socket_stat.st_gid;
  }
  absl::StatusOr<AccessPolicy> policy =
      AccessPolicy::Create(config.access, geteuid(), socket_group);
  if (!policy.ok()) return policy.status();
  spdlog::info("access: {}", policy->Summary());
  server->callers_ = std::make_unique<Callers>(std::move(*policy));

  Engine* engine = server->engine_.get();
  const Callers* callers = server->callers_.get();
  server->model_service_ =
      std::make_unique<ModelServiceImpl>(engine, callers, config.max_model_bytes);
  server->plan_service_ = std::make_unique<PlanServiceImpl>(engine, callers);
  server->inference_service_ = std::make_unique<InferenceServiceImpl>(engine, callers);
  server->admin_service_ = std::make_unique<AdminServiceImpl>(engine, callers);

  grpc::ServerBuilder builder;
  // Infer and GetPlan are the call pollers' (they count their calls themselves).
  server->calls_in_flight_ = std::make_unique<CallsInFlight>(std::vector<std::string>{
      "/psched.v1.InferenceService/Infer", "/psched.v1.PlanService/GetPlan"});
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> counting;
  counting.push_back(server->calls_in_flight_->InterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(counting));
  builder.RegisterService(server->model_service_.get());
  builder.RegisterService(server->plan_service_.get());
  builder.RegisterService(server->inference_service_.get());
  builder.RegisterService(server->admin_service_.get());
  // Upload chunks and input tensors; the model size limit is enforced per stream.
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.SetMaxSendMessageSize(64 << 20);
  // Spare threads: one for each inference the queue holds (running or waiting), and a few
  // more, so that GetPlans that plan do not keep an Infer from reaching the queue.
  constexpr int kSparesForPlanning = 8;
  server->call_pollers_ = std::make_unique<CallPollers>(builder, config.call_pollers,
                                                        absl::Microseconds(config.poll_spin_us),
                                                        config.queue_capacity + kSparesForPlanning);
  server->grpc_server_ = builder.BuildAndStart();
  if (server->grpc_server_ == nullptr) {
    return absl::InternalError("the gRPC server failed to start");
  }
  server->call_pollers_->Start(server->plan_service_.get(), server->inference_service_.get());
  server->listener_->Start([s = server.get()](int, int fd) { s->Accept(fd); });

  if (std::optional<absl::Duration> interval = systemd::WatchdogInterval()) {
    server->watchdog_ =
        std::thread([s = server.get(), period = *interval / 3] { s->WatchdogLoop(period); });
  }
  spdlog::info("pschedd {} serving on {}{} (platform {}, executor {})", PSCHED_VERSION,
               server->listener_->path(),
               server->listener_->activated() ? " (socket activation)" : "",
               engine->platform().name, engine->Status().executor);
  systemd::NotifyStatus(absl::StrCat("serving on ", server->listener_->path()));
  systemd::NotifyReady();
  return server;
}

void Server::Accept(int fd) {
  absl::StatusOr<PeerCredentials> peer = ReadPeerCredentials(fd);
  if (!peer.ok()) {
    spdlog::warn("connection refused: its credentials are unknown ({})",
                 std::string(peer.status().message()));
    close(fd);
    return;
  }
  const Caller caller = callers_->Register(fd, *peer);
  spdlog::debug("connection fd {} from {}: role {}", fd, caller.description, RoleName(caller.role));
  connections_.Add(fd);
  // Its calls carry the peer string "fd:<fd>", by which the handlers find `caller`.
  grpc::AddInsecureChannelFromFd(grpc_server_.get(), fd);
}

void Server::WatchdogLoop(absl::Duration period) {
  const absl::Duration stuck = absl::Seconds(config_.stuck_inference_s);
  bool warned = false;
  while (!stop_watchdog_.WaitForNotificationWithTimeout(period)) {
    InferenceQueue::ProgressInfo progress = engine_->QueueProgress();
    if (progress.running_for.has_value() && *progress.running_for > stuck) {
      // Withholding the ping lets systemd restart a daemon whose executor hangs.
      if (!warned) {
        spdlog::error("an inference has run for {:.0f} s; not feeding the watchdog",
                      absl::ToDoubleSeconds(*progress.running_for));
        warned = true;
      }
      continue;
    }
    warned = false;
    systemd::NotifyWatchdog();
  }
}

void Server::Stop() {
  if (stopped_) return;
  stopped_ = true;
  systemd::NotifyStopping();
  systemd::NotifyStatus("stopping: finishing in-flight requests");
  spdlog::info("stopping: no new connections, finishing in-flight requests");
  listener_->Stop();
  const auto deadline =
      std::chrono::system_clock::now() + std::chrono::seconds(config_.shutdown_grace_s);
  // Shutdown refuses new calls at once and returns once the calls in flight are over and every
  // client has answered its GOAWAY (or at the deadline); meanwhile, once no call is in flight,
  // the idle connections are hung up rather than waited for (see Stop in server.h).
  std::thread shutdown([&] { grpc_server_->Shutdown(deadline); });
  while (calls_in_flight_->count() + call_pollers_->calls_in_flight() > 0 &&
         std::chrono::system_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const int hung_up = connections_.HangUpAll();
  shutdown.join();
  if (hung_up > 0) spdlog::info("stopping: hung up {} idle connection(s)", hung_up);
  call_pollers_->Stop();
  engine_->Shutdown();
  StopWatchdog();
  spdlog::info("stopped");
}

void Server::StopWatchdog() {
  if (!stop_watchdog_.HasBeenNotified()) stop_watchdog_.Notify();
  if (watchdog_.joinable()) watchdog_.join();
}

Server::~Server() {
  if (grpc_server_ != nullptr) Stop();
  StopWatchdog();
}

}  // namespace psched::daemon
