#include "python/src/sigint_wait.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <thread>

namespace pipec::python {

namespace {

// A signal handler may only write to a pipe; a thread reading it does the cancelling, which takes
// locks. One scope is active at a time: only Python's main thread opens them.
int g_pipe[2] = {-1, -1};
struct sigaction g_previous;
std::atomic<bool> g_fired{false};
// Each scope has its own number; a signal names the scope it arrived in, so a byte read late never
// cancels a later scope's run.
std::atomic<uint32_t> g_scope{0};
std::mutex g_mutex;
const CancellationToken* g_token = nullptr;  // guarded by g_mutex, with the scope it belongs to
uint32_t g_token_scope = 0;

void on_sigint(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  g_fired.store(true);
  const uint32_t scope = g_scope.load();
  [[maybe_unused]] ssize_t n = write(g_pipe[1], &scope, sizeof scope);  // atomic: under PIPE_BUF
  errno = saved_errno;
  // Python's handler (or whatever was there) runs too, so KeyboardInterrupt follows.
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN && g_previous.sa_handler) {
    g_previous.sa_handler(sig);
  }
}

void canceller() {
  uint32_t scope;
  for (;;) {
    ssize_t n = read(g_pipe[0], &scope, sizeof scope);
    if (n < 0 && errno == EINTR) continue;
    if (n != sizeof scope) return;
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_token && g_token_scope == scope) g_token->cancel();
  }
}

bool start_canceller() {
  static bool started = [] {
    if (pipe2(g_pipe, O_CLOEXEC) != 0) return false;
    std::thread(canceller).detach();
    return true;
  }();
  return started;
}

}  // namespace

SigintScope::SigintScope(const CancellationToken& token, bool enable) {
  if (!enable || !start_canceller()) return;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_token = &token;
    g_token_scope = g_scope.fetch_add(1) + 1;
  }
  g_fired.store(false);
  struct sigaction ours {};
  ours.sa_sigaction = on_sigint;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  if (sigaction(SIGINT, &ours, &g_previous) != 0) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_token = nullptr;
    return;
  }
  active_ = true;
}

SigintScope::~SigintScope() {
  if (!active_) return;
  sigaction(SIGINT, &g_previous, nullptr);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_token = nullptr;
}

bool SigintScope::fired() const { return active_ && g_fired.load(); }

}  // namespace pipec::python
