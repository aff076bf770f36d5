#include "daemon/rpc/calls_in_flight.h"

#include <algorithm>

namespace psched::daemon {

// Counts its call while it lives; passes every hook on untouched.
class CallsInFlight::Counter final : public grpc::experimental::Interceptor {
 public:
  explicit Counter(std::atomic<int>* count) : count_(count) { count_->fetch_add(1); }
  ~Counter() override { count_->fetch_sub(1); }
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    methods->Proceed();
  }

 private:
  std::atomic<int>* const count_;
};

class CallsInFlight::Factory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit Factory(CallsInFlight* calls) : calls_(calls) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    const std::vector<std::string>& uncounted = calls_->uncounted_;
    if (std::find(uncounted.begin(), uncounted.end(), info->method()) != uncounted.end()) {
      return nullptr;
    }
    return new Counter(&calls_->count_);
  }

 private:
  CallsInFlight* const calls_;
};

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
CallsInFlight::InterceptorFactory() {
  return std::make_unique<Factory>(this);
}

}  // namespace psched::daemon
