#include "daemon/infer_pollers.h"

#include <grpc/support/time.h>

#include <utility>

#include "absl/time/clock.h"
#include "spdlog/spdlog.h"

namespace psched::daemon {

// One Infer call from the request for it to its end. Its three tags come back on its
// poller's queue: arrived (a call came, or the server shut down before one did), answered
// (Finish went out) and ended (the call is over: AsyncNotifyWhenDone). It is deleted after
// the last of them.
struct InferPollers::Call {
  enum class Event { kArrived, kAnswered, kEnded };
  struct Tag {
    Call* call;
    Event event;
  };

  grpc::ServerContext context;
  v1::InferRequest request;
  v1::InferResponse response;
  grpc::ServerAsyncResponseWriter<v1::InferResponse> responder{&context};
  Tag arrived{this, Event::kArrived};
  Tag answered{this, Event::kAnswered};
  Tag ended{this, Event::kEnded};
  // Set by the poller when the ended tag says the caller went away; read by the engine.
  std::atomic<bool> cancelled{false};
  // Stored (release) before Finish by whichever thread answered, loaded (acquire) before the
  // delete: orders a spare thread's writes before the poller frees the call, visibly to
  // ThreadSanitizer, which cannot see the ordering inside gRPC's queue.
  std::atomic<bool> finished{false};
  int tags_to_come = 2;  // answered and ended, once arrived
};

InferPollers::InferPollers(grpc::ServerBuilder& builder, int count, absl::Duration spin,
                           int max_spare_threads)
    : spin_(spin), spares_(std::make_unique<SpareThreads>(max_spare_threads)) {
  for (int i = 0; i < count; ++i) {
    auto poller = std::make_unique<Poller>();
    poller->queue = builder.AddCompletionQueue();
    pollers_.push_back(std::move(poller));
  }
}

InferPollers::~InferPollers() { Stop(); }

void InferPollers::Start(InferenceServiceImpl* service, const Engine* engine) {
  service_ = service;
  engine_ = engine;
  for (std::unique_ptr<Poller>& poller : pollers_) {
    Ask(*poller);
    poller->thread = std::thread([this, p = poller.get()] { Poll(*p); });
  }
}

void InferPollers::Stop() {
  if (stopping_.exchange(true)) return;
  for (std::unique_ptr<Poller>& poller : pollers_) {
    if (poller->thread.joinable()) {
      // The poller shuts its queue down itself once it has seen this and its calls are done.
      poller->wake.Set(poller->queue.get(), gpr_now(GPR_CLOCK_MONOTONIC), &poller->wake);
      poller->thread.join();
    } else {  // never started: nothing was asked for
      poller->queue->Shutdown();
      void* tag;
      bool ok;
      while (poller->queue->Next(&tag, &ok)) {
      }
    }
  }
  spares_.reset();  // idle by now: every call handed to it was answered
  spdlog::info("infer pollers answered {} calls on a poller and {} on a spare thread",
               on_pollers_.load(), on_spares_.load());
}

void InferPollers::Ask(Poller& poller) {
  auto* call = new Call;
  call->context.AsyncNotifyWhenDone(&call->ended);
  service_->RequestInfer(&call->context, &call->request, &call->responder, poller.queue.get(),
                         poller.queue.get(), &call->arrived);
}

void InferPollers::Take(Poller& poller, Call* call) {
  auto answer = [this, call](std::atomic<int64_t>& counter) {
    const grpc::Status status = service_->Answer(
        &call->context, [call] { return call->cancelled.load(); }, call->request, &call->response);
    counter.fetch_add(1);
    call->finished.store(true, std::memory_order_release);
    if (status.ok()) {
      call->responder.Finish(call->response, status, &call->answered);
    } else {
      call->responder.FinishWithError(status, &call->answered);
    }
  };
  if (engine_->QueueProgress().depth == 0) {
    answer(on_pollers_);
    if (!stopping_.load()) Ask(poller);
  } else {
    if (!stopping_.load()) Ask(poller);
    spares_->Run([answer, this] { answer(on_spares_); });
  }
}

void InferPollers::Poll(Poller& poller) {
  absl::Time last_call = absl::InfinitePast();
  bool woken = false;  // by Stop's alarm
  for (;;) {
    const bool spinning = absl::Now() - last_call < spin_;
    void* tag = nullptr;
    bool ok = false;
    const grpc::CompletionQueue::NextStatus next = poller.queue->AsyncNext(
        &tag, &ok,
        spinning ? gpr_time_0(GPR_CLOCK_MONOTONIC) : gpr_inf_future(GPR_CLOCK_MONOTONIC));
    if (next == grpc::CompletionQueue::SHUTDOWN) return;
    if (next == grpc::CompletionQueue::TIMEOUT) {
      std::this_thread::yield();  // still spinning: anything runnable goes first
      continue;
    }
    if (tag == &poller.wake) {
      woken = true;
    } else {
      Call::Tag* event = static_cast<Call::Tag*>(tag);
      Call* call = event->call;
      if (event->event == Call::Event::kArrived) {
        if (!ok) {
          delete call;  // the server shut down before a call came
        } else {
          ++poller.calls;
          Take(poller, call);
          last_call = absl::Now();
        }
      } else {
        // The ended tag has come: now the context may be asked whether the caller left.
        if (event->event == Call::Event::kEnded && call->context.IsCancelled()) {
          call->cancelled.store(true);
        }
        if (--call->tags_to_come == 0) {
          (void)call->finished.load(std::memory_order_acquire);
          delete call;
          --poller.calls;
        }
      }
    }
    if (woken && poller.calls == 0 && !poller.shut_down) {
      poller.shut_down = true;
      poller.queue->Shutdown();  // what is still queued comes out, then SHUTDOWN
    }
  }
}

}  // namespace psched::daemon
