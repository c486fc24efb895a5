#include "compiler/driver/openmp_waits.h"

#include <unistd.h>

#include <cstdlib>

namespace pipec {

namespace {
char** remembered_argv = nullptr;
}  // namespace

void prefer_passive_openmp_waits(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("OMP_WAIT_POLICY");  // exec failed: carry on as loaded
}

void remember_command_line(char** argv) { remembered_argv = argv; }

void prefer_passive_openmp_waits() {
  if (remembered_argv) prefer_passive_openmp_waits(remembered_argv);
}

}  // namespace pipec
