// Checks, before any case runs, that the comparison really catches differences (so a harness bug
// cannot make every case "agree"): one flipped integer bit, a float beyond the ulp bound, a missing
// element and a failed run must all be reported; NaN vs NaN and values within the bound must not.
#pragma once

#include <string>

namespace pipec::difftest {

/// Empty when the comparator behaves; otherwise what went wrong.
std::string comparator_self_check();

}  // namespace pipec::difftest
