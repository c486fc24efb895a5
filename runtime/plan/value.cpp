#include "runtime/plan/value.h"

#include <fmt/format.h>

namespace pipec {

std::string Value::to_string() const {
  switch (kind) {
    case Int: return std::to_string(i);
    case Float: return fmt::format("{}", f);
    case Bool: return b ? "true" : "false";
    case String: return "\"" + s + "\"";
    case Symbol: return s;
    case List: {
      std::string out = "[";
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) out += ", ";
        out += items[k].to_string();
      }
      return out + "]";
    }
  }
  return "?";
}

}  // namespace pipec
