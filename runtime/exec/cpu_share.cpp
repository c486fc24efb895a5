#include "runtime/exec/cpu_share.h"

#include <dirent.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace pipec {

ProcessCpuTimes process_cpu_times() {
  ProcessCpuTimes t;
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return t;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const std::string path = std::string("/proc/self/task/") + e->d_name + "/schedstat";
    FILE* f = std::fopen(path.c_str(), "r");
    if (!f) continue;  // the thread ended in between
    long long run = 0, wait = 0;
    if (std::fscanf(f, "%lld %lld", &run, &wait) == 2) {
      t.run_ns += run;
      t.wait_ns += wait;
      t.known = true;
    }
    std::fclose(f);
  }
  closedir(dir);
  return t;
}

int64_t thread_cpu_ns() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

double available_cores(int cores, const ProcessCpuTimes& delta, int64_t wall_ns) {
  const double all = std::max(1, cores);
  if (!delta.known || wall_ns <= 0 || delta.run_ns <= 0) return all;
  const double runnable = static_cast<double>(delta.run_ns + delta.wait_ns);
  if (delta.wait_ns < kWaitShare * runnable) return all;
  return std::clamp(static_cast<double>(delta.run_ns) / static_cast<double>(wall_ns), 1.0, all);
}

}  // namespace pipec
