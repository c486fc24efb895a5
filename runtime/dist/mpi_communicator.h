// Open MPI as a Communicator: one rank per process, started by `mpirun -np N pipec run spec.pipe`
// (`multi_worker()`). pipec opens libpipec_mpi.so (runtime/dist/mpi_plugin_abi.h) with dlopen, so a
// pipec without MPI runs everything else, and calls MPI only through it.
//
// The collectives are built from non-blocking point-to-point messages that this side polls, so the
// watchdog sees which peer has not answered: all_reduce in rank order is a reduce-scatter (rank k gets
// the k-th slice of every rank's buffer and sums it in rank order) then an all-gather of the sums; the
// small collectives send each rank's part to every other. ReductionOrder::Library calls
// MPI_Iallreduce instead (MPI's order; a timeout then cannot name the rank). One collective at a time:
// calls from several threads are serialized (MPI is initialized with MPI_THREAD_SERIALIZED).
//
// A rank that dies makes mpirun end the job (Open MPI's default); one that stops answering makes the
// others' next collective fail after the timeout, naming it; abort() is MPI_Abort.
#pragma once

#include <memory>
#include <string>

#include "runtime/dist/communicator.h"
#include "runtime/dist/mpi_plugin_abi.h"

namespace pipec {

/// How this process was launched: by mpirun (Open MPI's OMPI_COMM_WORLD_SIZE and _RANK, or PMIx's
/// PMIX_RANK with OMPI's size), and as which rank of how many. `size` is 1 outside mpirun.
struct MpiLaunch {
  bool under_mpirun = false;
  int size = 1;
  int rank = 0;
};
MpiLaunch mpi_launch_from_environment();

/// libpipec_mpi.so opened once per process (RTLD_GLOBAL: Open MPI's own plugins need its symbols):
/// $PIPEC_MPI_LIBRARY, else libpipec_mpi.so beside the pipec executable, in its lib/ folder, in
/// ../lib/pipec (an install), then on the loader's path. Null with `why` in one sentence.
const PipecMpiApi* mpi_plugin(std::string* why = nullptr);

/// MPI initialized through `api` and its world as a Communicator; the communicator finalizes MPI when
/// it goes (unless aborted). Throws CollectiveError when MPI cannot start.
std::unique_ptr<Communicator> make_mpi_communicator(const PipecMpiApi& api, const CollectiveOptions& options = {});

}  // namespace pipec
