// OrtPeerProcess: the ONNX Runtime peer (ort_peer.py) as a co-process of psched_coexec_bench.
//
// Start creates the peer's venv once (ort_venv.sh: onnxruntime, onnx and numpy from PyPI) and
// starts the peer on a pair of pipes; Load and RunMs send one command and read its one-line
// reply, so ONNX Runtime's timed runs interleave with psched's in the same rounds. Errors say
// which command failed and what the peer replied. Owns the child; the destructor closes its
// stdin and reaps it. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace psched::bench {

class OrtPeerProcess {
 public:
  // `venv_script`: ort_venv.sh; `venv_dir`: where the venv lives; `peer_script`: ort_peer.py.
  static absl::StatusOr<std::unique_ptr<OrtPeerProcess>> Start(const std::string& venv_script,
                                                               const std::string& venv_dir,
                                                               const std::string& peer_script);
  ~OrtPeerProcess();
  OrtPeerProcess(const OrtPeerProcess&) = delete;
  OrtPeerProcess& operator=(const OrtPeerProcess&) = delete;

  // Fills `src`'s weights, writes the complete model to `dst` and each thread count's output
  // for an all-0.5 input to `dst`.<threads>.npy (NCHW).
  absl::Status Load(const std::string& name, const std::string& src, const std::string& dst);
  // One timed run of a loaded model with 1 or 2 intra-op threads; `profiled`: of the
  // one-thread profiling session instead.
  absl::StatusOr<double> RunMs(const std::string& name, int threads, bool profiled = false);
  // Ends the profiling session's profile; writes key,count,us per node configuration.
  absl::Status WriteProfile(const std::string& name, const std::string& csv);

 private:
  OrtPeerProcess(pid_t pid, FILE* to, FILE* from) : pid_(pid), to_(to), from_(from) {}
  absl::StatusOr<std::string> Command(const std::string& line);
  // A command whose reply must be "ok".
  absl::Status CommandOk(const std::string& line);

  pid_t pid_;
  FILE* to_;    // the peer's stdin
  FILE* from_;  // the peer's stdout
};

}  // namespace psched::bench
