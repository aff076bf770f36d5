// CallPollers: serves the calls a client makes per request, Infer and GetPlan, from
// completion queues polled by threads of its own, each of which keeps polling, without
// sleeping, for `spin` after anything it handled (a call, an answer going out).
//
// Why: gRPC's sync server hands each call to a thread that sleeps until the call comes, and
// where idle cores halt a sleeping thread's wake-up is most of a small model's round trip
// (20-50 us each on a VM that does not poll before halting; docs/runtime-performance.md).
// A client's next call usually comes within microseconds of the last answer, so a poller
// still spinning reads it at once. The spin is bounded and yields the core to any runnable
// thread, so an idle daemon sleeps as before and a busy one loses nothing but the polls.
//
// A call its service answers at once and soon (a GetPlan whose plan is ready in memory; an
// Infer whose plan is in memory and that finds the inference queue full, to be refused, or
// idle with the plan measured at most brief_infer_us, Engine::InferAnswersAtOnce: the engine
// then runs it on this thread too) is answered on its poller. Any other goes to a spare thread
// (spare_threads.h), so a poller never sleeps in the queue or in a planner, nor runs a long
// inference, while calls come; a GetPlan's progress messages are written from there, each waiting
// for its poller to see the write done. Each poller has its own completion queue with one requested
// call of each method in it, asked for again once the poller is free; gRPC gives a new call to a
// poller that asked.
//
// One poller is the default and the fast choice: gRPC lets one thread at a time wait in
// epoll for the socket, and a second poller, asleep, is that thread, so the spinning one
// reads a call only after the sleeper's wake-up (Infer overhead 91-133 us with two against
// 36-82 us with one, docs/runtime-performance.md). More pollers only help when many clients'
// calls are all answered at once.
//
// Thread-safety: Start and Stop are called from one thread. Stop only after the gRPC
// server's Shutdown (no new call comes); the services and engine must outlive Stop.
#pragma once

#include <grpcpp/alarm.h>
#include <grpcpp/server_builder.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "daemon/rpc/services.h"
#include "daemon/rpc/spare_threads.h"

namespace psched::daemon {

class CallPollers {
 public:
  // Adds `count` completion queues to `builder`; call before the server is built.
  CallPollers(grpc::ServerBuilder& builder, int count, absl::Duration spin, int max_spare_threads);
  ~CallPollers();  // Stop()
  CallPollers(const CallPollers&) = delete;
  CallPollers& operator=(const CallPollers&) = delete;

  // Asks for calls and starts polling; the server is built and started.
  void Start(PlanServiceImpl* plans, InferenceServiceImpl* inference);
  // Lets every call taken finish and be answered, then shuts the queues down and joins.
  // Idempotent.
  void Stop();
  // Calls taken and not yet over, over every poller.
  int calls_in_flight() const { return in_flight_.load(); }

 private:
  class Call;
  class InferCall;
  class PlanCall;
  struct Poller {
    std::unique_ptr<grpc::ServerCompletionQueue> queue;
    grpc::Alarm wake;  // set by Stop to wake a sleeping poller
    std::thread thread;
    int calls = 0;  // taken and not yet over; only its thread touches it
    bool shut_down = false;
  };

  void Poll(Poller& poller);
  void Take(Call* call);

  std::atomic<int> in_flight_{0};  // the pollers' `calls`, summed
  const absl::Duration spin_;
  std::vector<std::unique_ptr<Poller>> pollers_;
  std::unique_ptr<SpareThreads> spares_;
  PlanServiceImpl* plans_ = nullptr;
  InferenceServiceImpl* inference_ = nullptr;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> on_pollers_{0};
  std::atomic<int64_t> on_spares_{0};
};

}  // namespace psched::daemon
