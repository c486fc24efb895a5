// How a train block's `strategy` runs on this machine:
//   - `single()`: one replica.
//   - `mirrored(devices = ...)`: one replica per device. On the CPU (no usable GPU), `devices = all`
//     means one replica, so that a spec written for GPUs gives the results it gives on one device, and
//     an explicit count (or list) means that many replicas on threads of this process, each with its
//     share of --threads, the batch split evenly between them (runtime/train/parallel). With a GPU, one
//     replica trains on it: replicas over several GPUs are not built yet, and the warning says so.
//   - `multi_worker()`: one replica per process started by mpirun (Open MPI), each on its shard of the
//     data; outside mpirun one worker, with a note.
#pragma once

#include <string>

#include "runtime/model/train_program.h"

namespace pipec {

struct StrategyChoice {
  int replicas = 1;  // replicas in this process (threads)
  bool mpi = false;  // one replica per mpirun rank (multi_worker under mpirun)
  std::string device = "cpu";
  std::string warning;  // printed once before the first step when not empty ("warning: ...")
  std::string note;     // likewise ("note: ...")
  std::string error;    // the run cannot start (a batch that does not split evenly)
};

/// `no_gpu_why` is empty when a GPU is usable, else the sentence saying why not ("the CUDA driver
/// found no GPU"). `batch` is the data pipeline's batch size (0 when it has none: then the step graph's,
/// when known). `mpi_ranks` is the number of processes mpirun started (1 outside mpirun).
StrategyChoice choose_strategy(const TrainProgram& t, const std::string& no_gpu_why, int64_t batch = 0,
                               int mpi_ranks = 1);

}  // namespace pipec
