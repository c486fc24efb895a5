// Running the built `pipec` from tests: exit code, stdout and stderr, and scratch folders.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace pipec::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A fresh empty folder under the system temp dir, removed when the object goes away.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "pipec-test-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    path_ = mkdtemp(buf.data());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& s) const { return path_ / s; }

 private:
  std::filesystem::path path_;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// Runs `pipec ARGS...` (the binary under test), capturing its output.
inline CommandResult run_pipec(const std::vector<std::string>& args) {
  static int counter = 0;
  std::filesystem::path base = std::filesystem::temp_directory_path() /
                               ("pipec-cmd-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  std::string cmd = shell_quote(PIPEC_BINARY);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " >" + shell_quote(base.string() + ".out") + " 2>" + shell_quote(base.string() + ".err") + " </dev/null";
  int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_all(base.string() + ".out");
  r.err = read_all(base.string() + ".err");
  std::filesystem::remove(base.string() + ".out");
  std::filesystem::remove(base.string() + ".err");
  return r;
}

/// Runs a shell command line, capturing stdout and stderr together in `out`.
inline CommandResult run_shell(const std::string& cmd) {
  static int counter = 0;
  const std::string out_file = (std::filesystem::temp_directory_path() /
                                ("pipec-sh-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".out"))
                                   .string();
  int status = std::system((cmd + " >" + shell_quote(out_file) + " 2>&1").c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  r.out = read_all(out_file);
  std::filesystem::remove(out_file);
  return r;
}

/// Starts `pipec ARGS...` in the background (output discarded); returns its pid.
inline pid_t spawn_pipec(const std::vector<std::string>& args) {
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    std::string bin = PIPEC_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

inline void write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

}  // namespace pipec::testing
