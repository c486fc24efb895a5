// What a hand-off between threads costs in CPU time on this machine, beside the cheap system calls a
// pipeline makes around one: the figures docs/performance.md uses to account for the system time that
// pipec spends over a one-threaded loop on the same work.
//
//   build/bench/handoff_cost [ROUND_TRIPS]      (default 20000)
//
// Rows: a round trip through a mutex and condition variable between two threads (each sleeps once and
// is woken once), on whatever cores the scheduler picks and with both threads pinned to the first core
// of this process's affinity; an uncontended FUTEX_WAKE; a read of the thread's CPU clock
// (CLOCK_THREAD_CPUTIME_ID, a real system call); std::call_once on a fresh flag (what libstdc++ does
// when a std::promise gets its value). CPU us is user + system time of the whole process per operation.
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <mutex>
#include <thread>

namespace {

double process_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

struct Cost {
  double wall_us, cpu_us;
};

Cost measure(int n, const std::function<void()>& run) {
  const double cpu0 = process_cpu_s();
  const auto t0 = std::chrono::steady_clock::now();
  run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {wall / n * 1e6, (process_cpu_s() - cpu0) / n * 1e6};
}

void ping_pong(int n, bool one_core) {
  std::mutex m;
  std::condition_variable cv;
  int turn = 0;
  cpu_set_t first{};
  if (one_core) {
    cpu_set_t allowed{};
    sched_getaffinity(0, sizeof allowed, &allowed);
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed)) {
        CPU_SET(c, &first);
        break;
      }
  }
  auto pin = [&] {
    if (one_core) pthread_setaffinity_np(pthread_self(), sizeof first, &first);
  };
  std::thread other([&] {
    pin();
    for (int i = 0; i < n; ++i) {
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return turn == 1; });
      turn = 0;
      cv.notify_one();
    }
  });
  cpu_set_t before{};
  sched_getaffinity(0, sizeof before, &before);
  pin();
  for (int i = 0; i < n; ++i) {
    std::unique_lock lock(m);
    turn = 1;
    cv.notify_one();
    cv.wait(lock, [&] { return turn == 0; });
  }
  other.join();
  sched_setaffinity(0, sizeof before, &before);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 20000;
  if (n <= 0) {
    std::fprintf(stderr, "usage: handoff_cost [ROUND_TRIPS > 0]\n");
    return 2;
  }
  std::printf("%-58s %10s %10s\n", "operation", "wall us", "CPU us");
  auto row = [](const char* name, Cost c) { std::printf("%-58s %10.2f %10.2f\n", name, c.wall_us, c.cpu_us); };
  row("condition-variable round trip, two threads, any cores", measure(n, [&] { ping_pong(n, false); }));
  row("condition-variable round trip, two threads, one core", measure(n, [&] { ping_pong(n, true); }));
  const int calls = n * 10;
  int word = 0;
  row("FUTEX_WAKE with nobody waiting", measure(calls, [&] {
        for (int i = 0; i < calls; ++i) syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
      }));
  row("clock_gettime(CLOCK_THREAD_CPUTIME_ID)", measure(calls, [&] {
        timespec ts{};
        for (int i = 0; i < calls; ++i) clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      }));
  row("std::call_once on a fresh flag", measure(calls, [&] {
        for (int i = 0; i < calls; ++i) {
          std::once_flag flag;
          std::call_once(flag, [] {});
        }
      }));
  return 0;
}
