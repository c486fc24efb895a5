// libpipec_mpi.so: runtime/dist/mpi_plugin_abi.h implemented with the MPI this library is compiled
// against (Debian's Open MPI). Each function is one MPI call; the communicator's logic (rank-order
// reductions, the watchdog) stays in pipec (runtime/dist/mpi_communicator.cpp), so that it is tested
// with the rest and this library has nothing to get wrong.
#include <mpi.h>

#include <cstring>
#include <new>

#include "runtime/dist/mpi_plugin_abi.h"

namespace {

int init(int* rank, int* size) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided); rc != MPI_SUCCESS) return rc;
    if (provided < MPI_THREAD_SERIALIZED) return MPI_ERR_OTHER;
  }
  // Errors come back as codes (the communicator names what failed) instead of ending the job unseen.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (int rc = MPI_Comm_rank(MPI_COMM_WORLD, rank); rc != MPI_SUCCESS) return rc;
  return MPI_Comm_size(MPI_COMM_WORLD, size);
}

int finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized ? MPI_SUCCESS : MPI_Finalize();
}

void abort_all(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

int library_version(char* out, int capacity) {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  if (int rc = MPI_Get_library_version(text, &length); rc != MPI_SUCCESS) return rc;
  int n = 0;
  while (n < length && text[n] != '\n' && text[n] != ',' && n + 1 < capacity) ++n;
  std::memcpy(out, text, static_cast<size_t>(n));
  out[n] = '\0';
  return MPI_SUCCESS;
}

int error_string(int code, char* out, int capacity) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  const int n = length < capacity - 1 ? length : capacity - 1;
  std::memcpy(out, text, static_cast<size_t>(n));
  out[n] = '\0';
  return MPI_SUCCESS;
}

// Each request lives on the heap until test() sees it complete.
int isend(const void* data, int32_t bytes, int peer, int tag, void** request) {
  auto* r = new (std::nothrow) MPI_Request;
  if (!r) return MPI_ERR_NO_MEM;
  if (int rc = MPI_Isend(data, bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, r); rc != MPI_SUCCESS) {
    delete r;
    return rc;
  }
  *request = r;
  return MPI_SUCCESS;
}

int irecv(void* data, int32_t bytes, int peer, int tag, void** request) {
  auto* r = new (std::nothrow) MPI_Request;
  if (!r) return MPI_ERR_NO_MEM;
  if (int rc = MPI_Irecv(data, bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, r); rc != MPI_SUCCESS) {
    delete r;
    return rc;
  }
  *request = r;
  return MPI_SUCCESS;
}

int iallreduce_sum_f32(float* data, int32_t n, void** request) {
  auto* r = new (std::nothrow) MPI_Request;
  if (!r) return MPI_ERR_NO_MEM;
  if (int rc = MPI_Iallreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, r); rc != MPI_SUCCESS) {
    delete r;
    return rc;
  }
  *request = r;
  return MPI_SUCCESS;
}

int test(void* request, int* done) {
  auto* r = static_cast<MPI_Request*>(request);
  int flag = 0;
  if (int rc = MPI_Test(r, &flag, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) return rc;
  *done = flag;
  if (flag) delete r;
  return MPI_SUCCESS;
}

int tag_upper_bound() {
  void* value = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found);
  return found && value ? *static_cast<int*>(value) : 32767;
}

const PipecMpiApi kApi = {PIPEC_MPI_ABI_VERSION, init,         finalize,       abort_all,
                          library_version,       error_string, isend,          irecv,
                          iallreduce_sum_f32,    test,         tag_upper_bound};

}  // namespace

extern "C" __attribute__((visibility("default"))) const PipecMpiApi* pipec_mpi_api(void) { return &kApi; }
