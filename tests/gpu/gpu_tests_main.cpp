// gpu_tests: the GPU-vs-interpreter tests (gtest), or with --compare the end-to-end output comparison
// that tests/gpu/run.sh uses (tests/gpu/compare_output_dirs.h).
//
//   gpu_tests [gtest flags]
//   gpu_tests --compare CPU_DIR GPU_DIR     # exit 0: the same within the bounds, 1: different
#include <iostream>
#include <string>

#include <gtest/gtest.h>

#include "tests/gpu/compare_output_dirs.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--compare") {
    if (argc != 4) {
      std::cerr << "usage: gpu_tests --compare CPU_DIR GPU_DIR\n";
      return 2;
    }
    pipec::gputest::DirComparison c = pipec::gputest::compare_output_dirs(argv[2], argv[3]);
    c.print(std::cout);
    return c.ok() ? 0 : 1;
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
