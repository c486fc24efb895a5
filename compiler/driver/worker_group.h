// multi_worker() under mpirun: this process joins the other ranks over Open MPI (libpipec_mpi.so,
// opened with dlopen), and the ranks check that they train the same thing before the first step.
#pragma once

#include <memory>
#include <string>

#include "runtime/dist/communicator.h"

namespace pipec {

struct WorkerGroup {
  std::shared_ptr<Communicator> comm;  // null when `error` says why not
  int rank = 0;
  int size = 1;
  std::string error;  // one sentence: no MPI plugin, MPI failed to start, a rank runs another spec
};

/// Opens MPI and compares every rank's `fingerprint` (the spec's text and the flags that change what is
/// trained) with rank 0's: a rank started with another spec is refused at start-up, on every rank.
WorkerGroup join_workers(const std::string& fingerprint, double timeout_seconds);

}  // namespace pipec
