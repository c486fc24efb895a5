#include "compiler/driver/openmp_waits.h"

#include <unistd.h>

#include <cstdlib>

namespace pipec {

void prefer_passive_openmp_waits(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("OMP_WAIT_POLICY");  // exec failed: carry on as loaded
}

}  // namespace pipec
