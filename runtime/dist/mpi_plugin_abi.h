// The C interface between pipec and libpipec_mpi.so, the small library built against Debian's Open MPI
// (runtime/dist/mpi/pipec_mpi.cpp) that pipec opens with dlopen when a spec trains with multi_worker()
// under mpirun. MPI's ABI belongs to the implementation (Open MPI's handles are pointers to global
// symbols, MPICH's are integers), so pipec never calls libmpi itself: only this table of plain C
// functions, which the plugin implements with the MPI of the machine it was built on. pipec without
// the plugin (or without MPI installed) runs everything else.
//
// Every function returns 0 on success or an MPI error code (error_string() says it in words). Requests
// are opaque handles the plugin allocates; test() frees one once it reports it complete. Sizes are
// below 2^31 bytes per call (the communicator splits larger transfers).
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PIPEC_MPI_ABI_VERSION 1

typedef struct PipecMpiApi {
  uint32_t abi_version;  // PIPEC_MPI_ABI_VERSION
  /// MPI_Init_thread(MPI_THREAD_SERIALIZED): this process's rank and the world's size.
  int (*init)(int* rank, int* size);
  int (*finalize)(void);
  /// MPI_Abort(MPI_COMM_WORLD, code): ends every rank of the job; does not return.
  void (*abort)(int code);
  /// MPI_Get_library_version, the first line ("Open MPI v4.1.4, ...").
  int (*library_version)(char* out, int capacity);
  int (*error_string)(int code, char* out, int capacity);
  /// Non-blocking point-to-point on MPI_COMM_WORLD (bytes as MPI_BYTE).
  int (*isend)(const void* data, int32_t bytes, int peer, int tag, void** request);
  int (*irecv)(void* data, int32_t bytes, int peer, int tag, void** request);
  /// MPI_Iallreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM): the library's own reduction.
  int (*iallreduce_sum_f32)(float* data, int32_t n, void** request);
  /// MPI_Test: *done becomes 1 when the request completed (then it is freed), else 0.
  int (*test)(void* request, int* done);
  /// The largest tag MPI_COMM_WORLD accepts (MPI_TAG_UB, at least 32767).
  int (*tag_upper_bound)(void);
} PipecMpiApi;

/// The plugin's one exported symbol.
const PipecMpiApi* pipec_mpi_api(void);
typedef const PipecMpiApi* (*PipecMpiApiFn)(void);

#ifdef __cplusplus
}
#endif
