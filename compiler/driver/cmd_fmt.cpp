// `pipec fmt`: prints .pipe files in their canonical layout, rewrites them (-w) or checks them (--check).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "compiler/driver/cli.h"
#include "compiler/driver/commands.h"
#include "compiler/fmt/formatter.h"
#include "compiler/front/diagnostics.h"
#include "compiler/front/parser.h"

namespace pipec {

namespace {

enum class Mode { Print, Write, Check };

// Writes `text` to a temporary file next to `path` and renames it over `path`, keeping the file's mode.
bool replace_file(const std::string& path, const std::string& text, std::string& error) {
  struct stat st {};
  bool have_mode = ::stat(path.c_str(), &st) == 0;
  std::string tmp = path + ".pipec-fmt-XXXXXX";
  std::vector<char> name(tmp.begin(), tmp.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0) {
    error = std::strerror(errno);
    return false;
  }
  const char* p = text.data();
  size_t left = text.size();
  bool ok = true;
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      ok = false;
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (ok && have_mode && ::fchmod(fd, st.st_mode & 07777) != 0) ok = false;
  if (ok && ::fsync(fd) != 0) ok = false;
  if (ok) error.clear();
  else error = std::strerror(errno);
  if (::close(fd) != 0 && ok) {
    ok = false;
    error = std::strerror(errno);
  }
  if (ok && ::rename(name.data(), path.c_str()) != 0) {
    ok = false;
    error = std::strerror(errno);
  }
  if (!ok) ::unlink(name.data());
  return ok;
}

}  // namespace

int cmd_fmt(const Args& args) {
  bool write = false;
  bool check = false;
  std::vector<std::string> files;
  auto app =
      make_command("fmt", "FILE...", "Prints each .pipe FILE in its canonical layout; `-` reads standard input.");
  app->add_option("FILE", files, "the specs")->required();
  auto* write_flag = app->add_flag("-w", write, "rewrite the files in place (only those that change)");
  app->add_flag("--check", check, "print `FILE: not formatted` for each file that would change; exit 1 if any")
      ->excludes(write_flag);
  app->footer("Files with syntax errors are left alone: their errors are printed and the exit code is 1.");
  if (auto code = parse_command_line(*app, args)) return *code;
  Mode mode = write ? Mode::Write : check ? Mode::Check : Mode::Print;
  bool color = ::isatty(STDERR_FILENO) != 0;

  int rc = 0;
  for (const std::string& file : files) {
    bool is_stdin = file == "-";
    std::string display = is_stdin ? "<stdin>" : file;
    std::string text;
    if (is_stdin) {
      text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
      std::string error;
      if (!read_text_file(file, text, error)) {
        std::cerr << "pipec fmt: cannot read " << file << ": " << error << "\n";
        rc = std::max(rc, 2);
        continue;
      }
    }

    SourceManager sources;
    uint32_t id = sources.add(display, text);
    Diagnostics diags(sources);
    std::unique_ptr<Module> module = parse_module(sources, id, diags);
    if (diags.has_errors()) {
      diags.sort();
      diags.print(std::cerr, color);
      rc = std::max(rc, 1);
      continue;
    }
    std::string formatted = format_module(*module, sources.file(id));

    switch (mode) {
      case Mode::Print: std::cout << formatted; break;
      case Mode::Check:
        if (formatted != text) {
          std::cout << display << ": not formatted\n";
          rc = std::max(rc, 1);
        }
        break;
      case Mode::Write:
        if (is_stdin) {
          std::cout << formatted;
        } else if (formatted != text) {
          std::string error;
          if (!replace_file(file, formatted, error)) {
            std::cerr << "pipec fmt: cannot write " << file << ": " << error << "\n";
            rc = std::max(rc, 2);
          }
        }
        break;
    }
  }
  std::cout.flush();
  return rc;
}

}  // namespace pipec
