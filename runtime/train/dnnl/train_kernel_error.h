// The error every CPU training kernel throws: a shape it refuses (checked before oneDNN sees it) or a
// primitive oneDNN cannot create or run. The message names the op and its shapes, e.g.
// "conv2d [3, 5, 7, 17] kernel 2x2 filters 4: output is empty with valid padding".
#pragma once

#include <stdexcept>
#include <string>

namespace pipec::train {

class TrainKernelError : public std::runtime_error {
 public:
  explicit TrainKernelError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace pipec::train
