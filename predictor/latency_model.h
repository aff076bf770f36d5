// The interface every latency predictor implements: the estimated execution time of one
// (sub)operator configuration on one device of a platform, in microseconds, including any
// per-subtask dispatch/synchronisation overhead of that device (paper sec. 2.1).
//
// Beside op latencies a model may predict the cost of handing work between two devices
// (SyncUs): how much later a subtask on one device starts when the input it waits for was
// produced on another one - waking a parked device thread, moving its data between caches - on
// top of any copy between memory domains the platform charges. Schedulers add it to every edge
// between subtasks on different devices (scheduler/problem.h). What a hand-off really costs
// depends on how long the waiting device had been idle when the input came (HandOffUs): a
// waiter still spinning resumes at once, one that has parked must be woken. That is for
// predicting how a fixed plan will run (scheduler/retime.h RetimeByWaits); planners charge the
// constant, which keeps their choices independent of waits they have not placed yet.
//
// Where a plan puts work on several devices at once, their kernels may run slower than each
// device's prediction (CoRunFactor: caches and memory bandwidth shared with the others). Like
// HandOffUs it is for predicting a fixed plan's run, not for planning.
//
// A model may also know what a whole run costs outside every subtask (RunOverheadUs: waking the
// devices, copying inputs in and outputs out): the latency a caller sees is a plan's makespan
// plus it. A constant per run, it changes no plan; it makes a plan's predicted latency
// comparable with its measured one.
//
// Implementations are immutable after construction and their const methods are
// thread-safe. Device indices refer to the platform the model was built for.
#pragma once

#include <span>
#include <string>

#include "predictor/op_config.h"

namespace psched::predictor {

class LatencyModel {
 public:
  virtual ~LatencyModel() = default;

  virtual int num_devices() const = 0;
  // REQUIRES: 0 <= device_index < num_devices().
  virtual double PredictUs(const OpConfig& config, int device_index) const = 0;
  // REQUIRES: out.size() == configs.size().
  virtual void PredictBatch(std::span<const OpConfig> configs, int device_index,
                            std::span<double> out) const;
  // Microseconds from a subtask's end on `from_device` to the start of a subtask on
  // `to_device` that depends on it, beyond the subtasks' own latencies; 0 by default.
  // REQUIRES: both in [0, num_devices()), from_device != to_device.
  virtual double SyncUs(int from_device, int to_device) const { return 0; }
  // The same hand-off when the waiting subtask's device had been idle for `idle_us` (> 0) when
  // the input came; SyncUs by default. REQUIRES: as SyncUs.
  virtual double HandOffUs(int from_device, int to_device, double idle_us) const {
    return SyncUs(from_device, to_device);
  }
  // How much longer the device's subtasks take while another device runs work too (applied to
  // the share of each subtask that overlaps it, scheduler/co_run_overlap.h); 1 by default.
  // REQUIRES: 0 <= device < num_devices().
  virtual double CoRunFactor(int device) const { return 1.0; }
  // Nanoseconds per element the last slice of a cin-split op ending on the device takes to add
  // the other slices' partial sums into the output (they were written by other devices); 0 by
  // default: unknown, predict the adds as element-wise ops.
  // REQUIRES: 0 <= device < num_devices().
  virtual double PartialSumNs(int device) const { return 0; }
  // Microseconds a subtask of the device starts after the device's previous one ends when no
  // input from another device holds it (the runtime taking its next step, a GPU queue's
  // dispatch), `synced`: for a subtask with a sync kernel before it in a GPU queue (one waiting
  // for its input from another device, or signalling another device after the previous
  // subtask), in a plan on two devices or more; 0 by default. For predicting a fixed plan, like
  // CoRunFactor.
  // REQUIRES: 0 <= device < num_devices().
  virtual double SubtaskGapUs(int device, bool synced) const { return 0; }
  // True when the model has nothing of its own for `config` on the device and its prediction
  // comes from a stand-in (a GBDT model file without a family for the op: the analytic
  // roofline predicts it); plans report such ops. False by default.
  // REQUIRES: 0 <= device_index < num_devices().
  virtual bool PredictsWithFallback(const OpConfig& config, int device_index) const {
    return false;
  }
  // Microseconds a run of any plan takes beyond its makespan; 0 by default.
  virtual double RunOverheadUs() const { return 0; }
  // Identifies the model and its parameters; part of the plan cache key.
  virtual std::string Version() const = 0;
};

}  // namespace psched::predictor
