// Cooperative cancellation: a shared token that blocking waits can observe, plus SIGINT/SIGTERM wiring.
//
// The token wraps std::stop_source because the standard library already provides what blocking waits
// need: an atomic flag, a callback list that is safe against concurrent unregistration, and
// std::condition_variable_any::wait(lock, stop_token, pred), which wakes immediately on cancel
// instead of polling.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <stop_token>

namespace pipec {

/// Thrown by CancellationToken::throw_if_cancelled().
class CancelledError : public std::runtime_error {
 public:
  CancelledError() : std::runtime_error("cancelled") {}
};

/// A handle to shared cancellation state. Copies refer to the same state; cancelling through any copy
/// is seen by all. Cancellation is sticky: once cancelled, a token stays cancelled.
class CancellationToken {
 public:
  /// A fresh, not-yet-cancelled token.
  CancellationToken();

  /// A new token that is cancelled when `parent` is (e.g. one run of a pipeline under the process-wide
  /// signal token), but that can also be cancelled on its own without affecting the parent.
  static CancellationToken child_of(const CancellationToken& parent);

  /// Requests cancellation and wakes every wait observing this token. Thread-safe; idempotent. Not
  /// async-signal-safe (it runs callbacks): signal handlers go through install_signal_cancellation().
  void cancel() const;
  bool cancelled() const noexcept;
  void throw_if_cancelled() const {
    if (cancelled()) throw CancelledError();
  }

  /// For std::condition_variable_any::wait(lock, stop_token, pred) and std::stop_callback.
  std::stop_token stop_token() const noexcept;

  /// Sleeps for up to `timeout`, returning early when cancelled. Returns cancelled().
  bool wait_for(std::chrono::nanoseconds timeout) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

/// The process-wide token set by SIGINT/SIGTERM once install_signal_cancellation() has run.
const CancellationToken& process_cancellation_token();

/// Installs SIGINT and SIGTERM handlers (idempotent). The handler only records the signal in a
/// lock-free atomic and writes one byte to a self-pipe; a background thread reads the pipe and cancels
/// process_cancellation_token(), because cancel() takes locks and is not async-signal-safe.
/// A second signal while the first is still pending restores the default action and re-raises, so a
/// user pressing Ctrl-C twice always gets out even if the pipeline ignores cancellation.
void install_signal_cancellation();

/// The signal that cancelled the process token, or 0 if none has arrived.
int cancellation_signal() noexcept;

}  // namespace pipec
