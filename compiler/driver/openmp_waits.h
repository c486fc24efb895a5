// OpenMP's idle threads spin by default (libgomp's OMP_WAIT_POLICY=active), which on a machine with
// more runnable threads than cores takes the cores from the input pipeline, other processes and the
// other OpenMP threads themselves: the chess step took twice the CPU time and twice the wall time with
// spinning threads on the shared 2-core development machine (docs/performance.md). libgomp reads the
// policy once, when it is loaded, before main() runs; so `pipec run` re-executes itself once with
// OMP_WAIT_POLICY=passive unless the environment already chooses a policy. Only a run that may train
// does: a pipeline flag (--pipeline, --take, --output) means no OpenMP thread will start, and the
// second start-up (dynamic linking and page faults again, ~25 ms of CPU) would be wasted.
#pragma once

namespace pipec {

/// For `pipec run`: when OMP_WAIT_POLICY is unset, sets it to passive and re-executes this binary with
/// the same arguments (returns only if that fails, leaving the policy as it was).
void prefer_passive_openmp_waits(char** argv);

/// main() keeps its argv here, so a command can decide later, once its flags are parsed, whether to
/// re-execute (prefer_passive_openmp_waits() below).
void remember_command_line(char** argv);
/// prefer_passive_openmp_waits(argv) with the argv remember_command_line() kept; nothing without one.
void prefer_passive_openmp_waits();

}  // namespace pipec
