#include "daemon/rpc/call_pollers.h"

#include <grpc/support/time.h>

#include <functional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "spdlog/spdlog.h"
#include "sync/mutex.h"

namespace psched::daemon {
namespace {

// Puts `tag` on `queue` at once. The deadline is long past, not now: gRPC 1.51 rounds an
// alarm's deadline up to the next millisecond, so an alarm set to now fired about 1 ms later
// (every answer from a spare thread took 1 ms longer).
void FireAtOnce(grpc::Alarm& alarm, grpc::ServerCompletionQueue* queue, void* tag) {
  alarm.Set(queue, gpr_inf_past(GPR_CLOCK_MONOTONIC), tag);
}

}  // namespace

// One call from the request for it to its end. Its tags come back on its poller's queue:
// arrived (a call came, or the server shut down before one did), relayed (a spare thread
// left an operation for the poller), written (a progress message went out), answered (the
// last message and the status went out) and ended (the call is over: AsyncNotifyWhenDone).
// It is deleted once answered and ended have come.
//
// Every gRPC operation of a call starts on its poller, also when a spare thread made the
// answer: gRPC's op sets live in its headers, compiled (and, under ThreadSanitizer, watched)
// with psched, while the locks that order them across threads are inside libgrpc, which
// ThreadSanitizer cannot see; an op started on one thread and completed on another is then
// reported as a race. Keeping each call's gRPC state on one thread makes that moot.
class CallPollers::Call {
 public:
  enum class Event { kArrived, kRelayed, kWritten, kAnswered, kEnded };
  struct Tag {
    Call* call;
    Event event;
  };

  explicit Call(grpc::ServerCompletionQueue* queue) : queue_(queue) {}
  virtual ~Call() = default;

  // Asks for the next call of this method on the same queue.
  virtual void AskForAnother() const = 0;
  virtual bool AnswersAtOnce() const = 0;
  // Runs the handler and sends the answer. `on_spare`: on a spare thread, not on the poller.
  virtual void Answer(bool on_spare) = 0;

  // The poller's side: a tag came back.
  void RunRelayed() {
    std::function<void()> operation;
    {
      sync::MutexLock lock(&mu_);
      operation = std::move(relayed_);
    }
    operation();
  }
  void Written(bool ok) {
    sync::MutexLock lock(&mu_);
    write_done_ = true;
    write_failed_ = write_failed_ || !ok;
  }
  // The ended tag has come: only now may the context be asked whether the caller left.
  void Ended() {
    if (context_.IsCancelled()) cancelled_.store(true);
  }
  // Answered or ended came; true when it was the last.
  bool Over() { return --tags_to_come_ == 0; }

 protected:
  CancelledFn Cancelled() {
    return [this] { return cancelled_.load(); };
  }
  // Starts `operation` (a gRPC operation of this call) on the poller: at once when called
  // there, else through the relay alarm. A spare thread must not touch the call after
  // relaying the last operation; the poller may delete it from then on.
  void OnPoller(bool on_spare, std::function<void()> operation) {
    if (!on_spare) {
      operation();
      return;
    }
    // Set under the lock: the poller takes the operation under it too, so the call cannot
    // be over and deleted before Set has returned.
    sync::MutexLock lock(&mu_);
    relayed_ = std::move(operation);
    FireAtOnce(relay_, queue_, &relayed_tag_);
  }
  // From a spare thread: writes `message` on the poller and waits until it went out (or the
  // stream broke). One relayed operation at a time: the next waits for this one's write.
  template <typename Writer, typename Message>
  void WriteAndWait(Writer& writer, const Message& message) {
    {
      sync::MutexLock lock(&mu_);
      if (write_failed_) return;
      write_done_ = false;
    }
    OnPoller(true, [this, &writer, &message] { writer.Write(message, &written_); });
    sync::MutexLock lock(&mu_);
    mu_.Await(sync::Condition(&write_done_));
  }

  grpc::ServerCompletionQueue* const queue_;
  grpc::ServerContext context_;
  Tag arrived_{this, Event::kArrived};
  Tag written_{this, Event::kWritten};
  Tag answered_{this, Event::kAnswered};
  Tag ended_{this, Event::kEnded};

 private:
  Tag relayed_tag_{this, Event::kRelayed};
  grpc::Alarm relay_;  // fires at once: wakes the poller for a relayed operation
  std::atomic<bool> cancelled_{false};
  sync::Mutex mu_;
  std::function<void()> relayed_ ABSL_GUARDED_BY(mu_);
  bool write_done_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  int tags_to_come_ = 2;  // answered and ended; only the poller counts
};

class CallPollers::InferCall final : public Call {
 public:
  InferCall(InferenceServiceImpl* service, grpc::ServerCompletionQueue* queue)
      : Call(queue), service_(service) {
    context_.AsyncNotifyWhenDone(&ended_);
    service_->RequestInfer(&context_, &request_, &responder_, queue_, queue_, &arrived_);
  }
  void AskForAnother() const override { new InferCall(service_, queue_); }
  bool AnswersAtOnce() const override { return service_->AnswersAtOnce(request_); }
  void Answer(bool on_spare) override {
    const grpc::Status status = service_->Answer(&context_, Cancelled(), request_, &response_);
    OnPoller(on_spare, [this, status] {
      if (status.ok()) {
        responder_.Finish(response_, status, &answered_);
      } else {
        responder_.FinishWithError(status, &answered_);
      }
    });
  }

 private:
  InferenceServiceImpl* const service_;
  v1::InferRequest request_;
  v1::InferResponse response_;
  grpc::ServerAsyncResponseWriter<v1::InferResponse> responder_{&context_};
};

class CallPollers::PlanCall final : public Call {
 public:
  PlanCall(PlanServiceImpl* service, grpc::ServerCompletionQueue* queue)
      : Call(queue), service_(service) {
    context_.AsyncNotifyWhenDone(&ended_);
    service_->RequestGetPlan(&context_, &request_, &writer_, queue_, queue_, &arrived_);
  }
  void AskForAnother() const override { new PlanCall(service_, queue_); }
  bool AnswersAtOnce() const override { return service_->AnswersAtOnce(request_); }
  void Answer(bool on_spare) override {
    // On its poller no one would see a write done. A ready plan sends no progress; one
    // dropped from memory between AnswersAtOnce and here is planned without it.
    auto progress = [this, on_spare](const v1::GetPlanResponse& message) {
      if (on_spare) WriteAndWait(writer_, message);
    };
    const grpc::Status status =
        service_->Answer(&context_, Cancelled(), request_, progress, &last_);
    OnPoller(on_spare, [this, status] {
      // The plan goes with the status in one flush: a cached GetPlan costs one unary call.
      if (status.ok()) {
        writer_.WriteAndFinish(last_, grpc::WriteOptions(), status, &answered_);
      } else {
        writer_.Finish(status, &answered_);
      }
    });
  }

 private:
  PlanServiceImpl* const service_;
  v1::GetPlanRequest request_;
  v1::GetPlanResponse last_;
  grpc::ServerAsyncWriter<v1::GetPlanResponse> writer_{&context_};
};

CallPollers::CallPollers(grpc::ServerBuilder& builder, int count, absl::Duration spin,
                         int max_spare_threads)
    : spin_(spin), spares_(std::make_unique<SpareThreads>(max_spare_threads)) {
  for (int i = 0; i < count; ++i) {
    auto poller = std::make_unique<Poller>();
    poller->queue = builder.AddCompletionQueue();
    pollers_.push_back(std::move(poller));
  }
}

CallPollers::~CallPollers() { Stop(); }

void CallPollers::Start(PlanServiceImpl* plans, InferenceServiceImpl* inference) {
  for (std::unique_ptr<Poller>& poller : pollers_) {
    new PlanCall(plans, poller->queue.get());
    new InferCall(inference, poller->queue.get());
    poller->thread = std::thread([this, p = poller.get()] { Poll(*p); });
  }
}

void CallPollers::Stop() {
  if (stopping_.exchange(true)) return;
  for (std::unique_ptr<Poller>& poller : pollers_) {
    if (poller->thread.joinable()) {
      // The poller shuts its queue down itself once it has seen this and its calls are over.
      FireAtOnce(poller->wake, poller->queue.get(), &poller->wake);
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
  spdlog::info("call pollers answered {} calls on a poller and {} on a spare thread",
               on_pollers_.load(), on_spares_.load());
}

void CallPollers::Take(Call* call) {
  if (call->AnswersAtOnce()) {
    call->Answer(/*on_spare=*/false);
    on_pollers_.fetch_add(1);
    // Only now: a poller busy with a call holds no request, so new calls go to idle ones.
    if (!stopping_.load()) call->AskForAnother();
  } else {
    if (!stopping_.load()) call->AskForAnother();
    spares_->Run([this, call] {
      call->Answer(/*on_spare=*/true);  // the poller may delete `call` from here on
      on_spares_.fetch_add(1);
    });
  }
}

void CallPollers::Poll(Poller& poller) {
  // A client's next call comes soon after its answer went out, also when a spare thread made
  // that answer: the spin counts from the last event of any kind.
  absl::Time last_event = absl::InfinitePast();
  bool woken = false;  // by Stop's alarm
  for (;;) {
    const bool spinning = absl::Now() - last_event < spin_;
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
      const Call::Tag& event = *static_cast<Call::Tag*>(tag);
      Call* call = event.call;
      switch (event.event) {
        case Call::Event::kArrived:
          if (!ok) {
            delete call;  // the server shut down before a call came
            break;
          }
          ++poller.calls;
          in_flight_.fetch_add(1);
          Take(call);
          break;
        case Call::Event::kRelayed:
          call->RunRelayed();
          break;
        case Call::Event::kWritten:
          call->Written(ok);
          break;
        case Call::Event::kEnded:
          call->Ended();
          [[fallthrough]];
        case Call::Event::kAnswered:
          if (call->Over()) {
            delete call;
            --poller.calls;
            in_flight_.fetch_sub(1);
          }
          break;
      }
    }
    last_event = absl::Now();  // after a call answered here: its answer has just gone out
    if (woken && poller.calls == 0 && !poller.shut_down) {
      poller.shut_down = true;
      poller.queue->Shutdown();  // what is still queued comes out, then SHUTDOWN
    }
  }
}

}  // namespace psched::daemon
