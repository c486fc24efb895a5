// In-process replicas on threads: N communicators sharing one rendezvous, one per replica thread
// (`mirrored` on the CPU, and the tests of everything built on Communicator). A collective is two
// barriers: every replica publishes its buffer, then each computes its share of the result straight
// from the others' buffers (all_reduce: replica k sums the k-th of N slices in rank order and writes
// the sum into every replica's buffer), then every replica waits until all are done, so no buffer is
// touched again before the others have read it. No copy, no extra memory.
//
// The watchdog: a barrier not complete within the timeout fails every replica with CollectiveError
// naming the replicas that did not arrive. Replicas calling different collectives (or one buffer size
// against another) fail likewise: a bug in the caller, caught instead of read out of bounds.
#pragma once

#include <memory>
#include <vector>

#include "runtime/dist/communicator.h"

namespace pipec {

/// `n` communicators (ranks 0..n-1) of one in-process group; each must be used by one thread at a time.
std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int n, const CollectiveOptions& options = {});

}  // namespace pipec
