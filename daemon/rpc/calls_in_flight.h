// CallsInFlight: how many calls of pschedd's gRPC services are running, counted from the call's
// arrival to its end, so that Server::Stop knows when only idle connections are left (server.h).
//
// A gRPC server interceptor counts each call: gRPC creates it when the call arrives and destroys
// it with the call's context. Calls of the methods in `uncounted` get no interceptor: the call
// pollers count their own (Infer and GetPlan, call_pollers.h), and an interceptor on an async
// call costs it an extra pass through the completion queue.
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace psched::daemon {

class CallsInFlight {
 public:
  // `uncounted`: full method names, e.g. "/psched.v1.InferenceService/Infer".
  explicit CallsInFlight(std::vector<std::string> uncounted) : uncounted_(std::move(uncounted)) {}

  int count() const { return count_.load(); }
  // For grpc::ServerBuilder::experimental().SetInterceptorCreators; `this` must outlive the
  // server.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> InterceptorFactory();

 private:
  class Counter;
  class Factory;
  const std::vector<std::string> uncounted_;
  std::atomic<int> count_{0};
};

}  // namespace psched::daemon
