#include <iostream>
#include <sstream>

#include "compiler/driver/commands.h"
#include "compiler/front/source.h"

namespace pipec {

bool wants_help(const Args& args) {
  for (const auto& a : args)
    if (a == "-h" || a == "--help") return true;
  return false;
}

bool read_text_file(const std::string& path, std::string& text, std::string& error) {
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
    return true;
  }
  return read_source_file(path, text, error);
}

}  // namespace pipec
