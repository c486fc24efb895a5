// Errors that kernels raise on bad data at run time.
#pragma once

#include <stdexcept>
#include <string>

#include "runtime/core/op_error.h"
#include "runtime/plan/expr_function.h"

namespace pipec {

/// A run-time failure of one instruction on bad data, e.g.
///   "chess.pipe:21:15: reshape: cannot reshape a row of 1500 elements to [8, 8, 24]"
/// (the location is left out when the instruction has none).
class KernelError : public std::runtime_error {
 public:
  KernelError(const SpecLoc& loc, const std::string& op, const std::string& detail)
      : std::runtime_error((loc.valid() ? loc.to_string() + ": " : std::string()) + op + ": " + detail),
        loc_(loc),
        op_(op),
        detail_(detail) {}

  const SpecLoc& loc() const { return loc_; }
  const std::string& op() const { return op_; }
  const std::string& detail() const { return detail_; }

 private:
  SpecLoc loc_;
  std::string op_;
  std::string detail_;
};

}  // namespace pipec
