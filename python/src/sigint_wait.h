// Ctrl-C during a wait in the runtime, from Python's main thread.
//
// Python's SIGINT handler only sets a flag that the interpreter checks between bytecodes, so a thread
// waiting in the runtime (the GIL released) would not see Ctrl-C until the next batch arrived, which
// may be never. While a SigintScope lives, SIGINT also cancels the scope's token (the runtime's waits
// watch it, so the wait ends with CancelledError) and then runs the handler that was there before,
// which makes Python raise KeyboardInterrupt once the caller checks for signals.
#pragma once

#include "runtime/threads/cancellation.h"

namespace pipec::python {

class SigintScope {
 public:
  /// Takes over SIGINT until destroyed when `enable` (the caller is Python's main thread and SIGINT
  /// has Python's default handler); otherwise does nothing.
  SigintScope(const CancellationToken& token, bool enable);
  ~SigintScope();
  SigintScope(const SigintScope&) = delete;
  SigintScope& operator=(const SigintScope&) = delete;

  /// Whether SIGINT arrived while the scope was active.
  bool fired() const;

 private:
  bool active_ = false;
};

}  // namespace pipec::python
