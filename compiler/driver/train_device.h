// Where `pipec run` trains: the GPU executor on an NVIDIA GPU, or the fast (or reference) executor on the
// CPU, from --device, --executor and what the machine has.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "runtime/train/step_executor.h"

namespace pipec {

struct TrainDeviceChoice {
  /// Makes the executor (null: the reference executor, the training loop's default).
  std::function<std::unique_ptr<StepExecutor>(const ModelGraph&, uint64_t seed)> make;
  /// Makes the evaluation's executor (null: the reference executor): the fast executor on the CPU, also
  /// when training runs on the GPU (evaluation there reads the weights the GPU executor syncs to the host).
  std::function<std::unique_ptr<StepExecutor>(const ModelGraph&, uint64_t seed)> make_eval;
  bool gpu = false;
  /// Said once before the first step when not empty (a GPU found but not usable under --device auto).
  std::string note;
  /// Set when the run cannot go on (--device gpu with no usable GPU, exit code 3; a flag conflict, 2).
  std::string error;
  int exit_code = 0;
};

struct TrainDeviceRequest {
  std::string device = "auto";    // --device: auto, cpu or gpu
  std::string executor = "fast";  // --executor: fast or reference (CPU executors)
  bool executor_given = false;    // --executor was on the command line (or implied by -O0)
  bool direct_conv = false;       // --conv direct
  std::string cpu_bf16 = "auto";  // --cpu-bf16: auto, native or emulated
  bool allow_tf32 = false;        // --allow-tf32
  int threads = 0;                // --threads
};

/// --device gpu: the GPU executor, or an error when there is no usable GPU (no driver, no device, no
/// NVRTC; the reason said). --device auto: the GPU when one is usable; a machine with no CUDA driver at
/// all trains on the CPU without a word, one whose GPU cannot be used gets a note saying why. --device
/// cpu, --executor reference (and -O0): the CPU. $PIPEC_GPU_HOST_EMULATION=1 makes --device gpu run the
/// GPU executor on the host emulation of a GPU (runtime/train/gpu/host_step_device.h): for tests.
/// --cpu-bf16 native on a CPU without bf16 instructions is an error (exit 2) naming what the CPU has.
TrainDeviceChoice choose_train_device(const TrainDeviceRequest& r);

}  // namespace pipec
