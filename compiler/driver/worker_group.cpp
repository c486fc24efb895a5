#include "compiler/driver/worker_group.h"

#include <cstdint>
#include <functional>
#include <vector>

#include <fmt/format.h>

#include "runtime/dist/mpi_communicator.h"

namespace pipec {

WorkerGroup join_workers(const std::string& fingerprint, double timeout_seconds) {
  WorkerGroup w;
  std::string why;
  const PipecMpiApi* api = mpi_plugin(&why);
  if (!api) {
    w.error = "multi_worker under mpirun needs pipec's MPI plugin (libpipec_mpi.so): " + why;
    return w;
  }
  CollectiveOptions o;
  o.timeout_seconds = timeout_seconds;
  try {
    w.comm = make_mpi_communicator(*api, o);
  } catch (const CollectiveError& e) {
    w.error = e.what();
    return w;
  }
  w.rank = w.comm->rank();
  w.size = w.comm->size();
  // The fingerprint's hash as two exact halves (a double holds 32 bits exactly).
  const uint64_t h = std::hash<std::string>{}(fingerprint);
  const double mine[2] = {static_cast<double>(h >> 32), static_cast<double>(h & 0xffffffffu)};
  const std::vector<double> all = w.comm->all_gather(mine, 2, "the ranks' specs");
  std::string others;
  for (int r = 1; r < w.size; ++r)
    if (all[2 * static_cast<size_t>(r)] != all[0] || all[2 * static_cast<size_t>(r) + 1] != all[1])
      others += (others.empty() ? "" : ", ") + std::to_string(r);
  if (!others.empty()) {
    w.error = fmt::format(
        "rank{} {} started with another spec or other training flags than rank 0: every rank of a "
        "multi_worker run must train the same spec",
        others.find(',') == std::string::npos ? "" : "s", others);
    w.comm.reset();
  }
  return w;
}

}  // namespace pipec
