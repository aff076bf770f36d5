// daemon::Server: pschedd's lifecycle around the Engine — opening the state dir and cache,
// the listening socket (bound, or passed by systemd socket activation), the gRPC server fed
// by our own accept loop (which records each connection's caller first, see callers.h), the
// systemd notifications (STATUS while loading, READY=1 once serving, WATCHDOG=1 only while
// the inference queue makes progress, STOPPING=1) and the orderly stop: stop accepting, let
// in-flight requests finish, hang up the idle connections, drain the inference queue.
//
// Thread-safety: Start and Stop are called from one thread (main). Ownership: the Server
// owns the engine, listener, gRPC server and watchdog thread.
#pragma once

#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "daemon/access/callers.h"
#include "daemon/engine/backend.h"
#include "daemon/engine/config.h"
#include "daemon/engine/engine.h"
#include "daemon/rpc/call_pollers.h"
#include "daemon/rpc/calls_in_flight.h"
#include "daemon/rpc/connections.h"
#include "daemon/rpc/listener.h"
#include "daemon/rpc/services.h"
#include "sync/notification.h"

namespace psched::daemon {

class Server {
 public:
  // Opens everything and serves; READY=1 has been sent when this returns OK.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const DaemonConfig& config,
                                                       std::unique_ptr<Backend> backend);
  ~Server();

  // STOPPING=1, stop accepting, wait up to shutdown_grace_s for in-flight requests, hang up
  // the idle connections, drain the inference queue. Idempotent.
  //
  // Why hang up: gRPC's Shutdown also waits until every connected client has answered its
  // GOAWAY, and an idle client reads it only when its channel next polls - every 5 s for a
  // C++ client between calls - so a program holding an idle client kept pschedd from exiting
  // for up to 5 s. Once no call is in flight the server ends the connections itself.
  void Stop();

  // Where clients connect ("" for an activated socket whose path is unknown).
  const std::string& socket_path() const { return listener_->path(); }

 private:
  explicit Server(const DaemonConfig& config) : config_(config) {}
  void WatchdogLoop(absl::Duration interval);
  // Accept thread: records the caller of connected `fd`, then hands it to gRPC.
  void Accept(int fd);
  void StopWatchdog();

  const DaemonConfig config_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Callers> callers_;
  Connections connections_;
  // Before grpc_server_: its interceptors count here.
  std::unique_ptr<CallsInFlight> calls_in_flight_;
  std::unique_ptr<ModelServiceImpl> model_service_;
  std::unique_ptr<PlanServiceImpl> plan_service_;
  std::unique_ptr<InferenceServiceImpl> inference_service_;
  std::unique_ptr<AdminServiceImpl> admin_service_;
  // Before grpc_server_: their completion queues must outlive the server.
  std::unique_ptr<CallPollers> call_pollers_;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::unique_ptr<Listener> listener_;
  sync::Notification stop_watchdog_;
  std::thread watchdog_;
  bool stopped_ = false;
};

}  // namespace psched::daemon
