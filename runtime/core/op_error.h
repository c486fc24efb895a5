// The error a tensor routine throws on bad data: the problem only, no location. Kernels, dtype dispatch
// and image transforms throw it; the interpreter catches it and names the instruction (KernelError in
// runtime/ops/kernel_error.h).
#pragma once

#include <stdexcept>
#include <string>

namespace pipec {

/// "index 30 is out of range for a dimension of size 24".
class OpError : public std::runtime_error {
 public:
  explicit OpError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace pipec
