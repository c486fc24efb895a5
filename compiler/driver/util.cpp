#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "compiler/driver/commands.h"

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
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    error = "Is a directory";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  return true;
}

}  // namespace pipec
