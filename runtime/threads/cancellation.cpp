#include "runtime/threads/cancellation.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

namespace pipec {

struct CancellationToken::State {
  std::stop_source source;
  // Set for child tokens: forwards the parent's cancellation to `source`. Destroying it unregisters
  // from the parent, so a finished child does not leave a dangling callback behind.
  std::optional<std::stop_callback<std::function<void()>>> parent_link;
};

CancellationToken::CancellationToken() : state_(std::make_shared<State>()) {}

CancellationToken CancellationToken::child_of(const CancellationToken& parent) {
  CancellationToken child;
  // Capture the stop_source by value, not the State: the callback then keeps only the shared stop
  // state alive, and there is no reference cycle through State::parent_link.
  std::function<void()> forward = [source = child.state_->source]() mutable { source.request_stop(); };
  child.state_->parent_link.emplace(parent.stop_token(), std::move(forward));
  return child;
}

void CancellationToken::cancel() const { state_->source.request_stop(); }

bool CancellationToken::cancelled() const noexcept { return state_->source.stop_requested(); }

std::stop_token CancellationToken::stop_token() const noexcept { return state_->source.get_token(); }

bool CancellationToken::wait_for(std::chrono::nanoseconds timeout) const {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait_for(lock, stop_token(), timeout, [] { return false; });
  return cancelled();
}

// ---- Signals --------------------------------------------------------------------------------------

namespace {

std::atomic<int> g_signal{0};
std::atomic<int> g_pipe_write{-1};
static_assert(std::atomic<int>::is_always_lock_free, "signal handler needs lock-free atomics");

void on_signal(int sig) {
  const int saved_errno = errno;  // write() may clobber errno of the interrupted code
  int expected = 0;
  if (g_signal.compare_exchange_strong(expected, sig)) {
    const char byte = 1;
    // Non-blocking pipe: if it were somehow full the byte is dropped, but one is enough.
    [[maybe_unused]] ssize_t n = write(g_pipe_write.load(), &byte, 1);
  } else {
    // Second signal: the user insists. Default action + re-raise terminates with the usual status
    // once this handler returns (the signal is blocked while its handler runs).
    signal(sig, SIG_DFL);
    raise(sig);
  }
  errno = saved_errno;
}

CancellationToken& process_token_storage() {
  // Leaked on purpose: the watcher thread may touch it during static destruction.
  static auto* token = new CancellationToken();
  return *token;
}

void install_once() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK);
  g_pipe_write.store(fds[1]);

  CancellationToken& token = process_token_storage();
  std::thread([read_fd = fds[0], token] {
    char byte;
    ssize_t n;
    do n = read(read_fd, &byte, 1);
    while (n < 0 && errno == EINTR);
    // One byte means one signal arrived; later ones are handled in the handler itself.
    if (n == 1) token.cancel();
  }).detach();

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // don't make unrelated blocking calls fail with EINTR
  for (int sig : {SIGINT, SIGTERM}) {
    if (sigaction(sig, &sa, nullptr) != 0) {
      throw std::system_error(errno, std::generic_category(), "sigaction");
    }
  }
}

}  // namespace

const CancellationToken& process_cancellation_token() { return process_token_storage(); }

void install_signal_cancellation() {
  static std::once_flag once;
  std::call_once(once, install_once);
}

int cancellation_signal() noexcept { return g_signal.load(); }

}  // namespace pipec
