// The error the GPU runtime throws: a driver call that failed, with the call and the driver's message.
#pragma once

#include <stdexcept>

namespace pipec::gpu {

class GpuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace pipec::gpu
