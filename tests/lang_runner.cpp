// Golden language tests. Each tests/lang/**/*.pipe file is a spec followed by its expected output:
//
//   <spec text>
//   # ---- expected output ----
//   # names/fail_unknown.pipe:3:7: error[unknown_name]: unknown name `flgs`
//   # ...
//
// A first line `# mode: explain` compares the diagnostics and the plan as lowered (`pipec explain -O0`),
// `# mode: optimized` the plan after the optimizer (`pipec explain`), `# mode: passes` the plan after
// every pass (`pipec explain --passes`), `# mode: model` the training-step graph of every train block;
// otherwise the diagnostics of `pipec check` (which compiles train blocks too). Files named fail_* must have errors; all others must have none (warnings
// are fine). Files in a folder named `imports` below a category (tests/lang/imports/imports/helper.pipe)
// are helpers that tests import, not tests. `lang_tests --update DIR` rewrites every expected block from
// the current output.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "compiler/lower/lower.h"
#include "compiler/passes/pass_pipeline.h"
#include "compiler/train/lower_train.h"
#include "compiler/sema/program.h"

namespace fs = std::filesystem;
using namespace pipec;

static const std::string kMarker = "# ---- expected output ----";

// Imported files are named by their absolute path; the expected blocks name them relative to DIR so that
// they do not depend on where the checkout lives.
// The stdlib folder (where `import name` looks last) is shown as `<stdlib>`.
static std::string relative_paths(std::string text) {
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  };
  replace_all(fs::current_path().string() + "/", "");
  replace_all(stdlib_dir(), "<stdlib>");
  return text;
}

enum class Mode { Check, Explain, Optimized, Passes, Model };

static std::string run_spec(const std::string& rel_path, const std::string& spec, Mode mode, bool& had_errors) {
  auto program = check_text(rel_path, spec);
  std::vector<TrainProgram> trains = lower_train_blocks(*program);
  std::ostringstream out;
  program->diags.print(out, false);
  had_errors = program->diags.has_errors();
  if (mode == Mode::Model && !had_errors)
    for (const TrainProgram& t : trains) out << print_train_program(t);
  if (mode != Mode::Check && mode != Mode::Model && !had_errors) {
    for (const auto& d : program->main().decls) {
      if (d->kind != DeclKind::Pipeline) continue;
      Plan plan = lower_pipeline(*program, *d);
      for (auto& p : verify_plan(plan)) out << "VERIFIER: " << p << "\n";
      if (mode == Mode::Explain) {
        out << print_plan(plan);
        continue;
      }
      PassOptions opts;
      if (mode == Mode::Passes)
        opts.log = [&](const std::string& pass, bool changed, const Plan& after) {
          out << "== after " << pass << (changed ? " ==\n" + print_plan(after) : ": unchanged ==\n");
        };
      try {
        run_passes(plan, opts);
      } catch (const PassError& e) {
        out << "PASS ERROR: " << e.what();
      }
      if (mode == Mode::Optimized) out << print_plan(plan);
    }
  }
  return relative_paths(out.str());
}

static std::string as_comment_block(const std::string& output) {
  std::string block = kMarker + "\n";
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) block += line.empty() ? "#\n" : "# " + line + "\n";
  return block;
}

int main(int argc, char** argv) {
  bool update = false;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--update") update = true;
    else dir = a;
  }
  if (dir.empty()) {
    std::cerr << "usage: lang_tests [--update] DIR\n";
    return 2;
  }
  if (chdir(dir.c_str()) != 0) {
    std::cerr << "lang_tests: cannot enter " << dir << "\n";
    return 2;
  }
  std::vector<std::string> files;
  for (auto& e : fs::recursive_directory_iterator(".")) {
    if (!e.is_regular_file() || e.path().extension() != ".pipe") continue;
    fs::path rel = fs::relative(e.path(), ".");
    bool helper = rel.parent_path().filename() == "imports" && !rel.parent_path().parent_path().empty();
    if (!helper) files.push_back(rel.string());
  }
  std::sort(files.begin(), files.end());
  int passed = 0, failed = 0;
  for (const auto& f : files) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    size_t marker = text.find(kMarker);
    std::string spec = marker == std::string::npos ? text : text.substr(0, marker);
    std::string expected = marker == std::string::npos ? "" : text.substr(marker);
    Mode mode = spec.rfind("# mode: explain", 0) == 0     ? Mode::Explain
                : spec.rfind("# mode: optimized", 0) == 0 ? Mode::Optimized
                : spec.rfind("# mode: passes", 0) == 0    ? Mode::Passes
                : spec.rfind("# mode: model", 0) == 0     ? Mode::Model
                                                           : Mode::Check;
    bool had_errors = false;
    std::string output = run_spec(f, spec, mode, had_errors);
    std::string actual = as_comment_block(output);
    bool must_fail = fs::path(f).filename().string().rfind("fail_", 0) == 0;
    std::string problem;
    if (must_fail && !had_errors) problem = "a fail_ test produced no error";
    if (!must_fail && had_errors) problem = "produced errors but its name does not start with fail_";
    if (update) {
      if (actual != expected) {
        std::ofstream o(f);
        o << spec << actual;
      }
      expected = actual;
    }
    if (problem.empty() && actual != expected) problem = "output differs from the expected block";
    if (problem.empty()) {
      ++passed;
      continue;
    }
    ++failed;
    std::cout << "FAIL " << f << ": " << problem << "\n";
    if (actual != expected) std::cout << "--- expected\n" << expected << "--- actual\n" << actual;
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}
