// Golden language tests. Each tests/lang/**/*.pipe file is a spec followed by its expected output:
//
//   <spec text>
//   # ---- expected output ----
//   # names/fail_unknown.pipe:3:7: error[unknown_name]: unknown name `flgs`
//   # ...
//
// A first line `# mode: explain` compares the diagnostics and the plan as lowered (`pipec explain -O0`),
// `# mode: optimized` the plan after the optimizer (`pipec explain`), `# mode: passes` the plan after
// every pass (`pipec explain --passes`), `# mode: run` the elements every pipeline produces (the
// reference: -O0 on the interpreter, one thread; at most 100 elements each) or the error its run ends
// with, after which each pipeline runs again as `pipec run` does (optimized, JIT kernels, 4 threads):
// its kernels are listed, and when its elements or its error differ from the reference's that is
// printed too (a run that fails must fail with the same error; the elements before it may differ, as
// chunks do); `# mode: model` the training-step graph of every train block;
// otherwise the diagnostics of `pipec check` (which compiles train blocks too). Lines `# -D NAME=VALUE`
// among the first comment lines override consts as `pipec -D NAME=VALUE` does. Files named fail_* must have errors; all
// others must have none (warnings are fine). Files in a folder named `imports` below a category
// (tests/lang/imports/imports/helper.pipe) are helpers that tests import, not tests. `lang_tests --update DIR` rewrites
// every expected block from the current output.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "compiler/compile/compile.h"
#include "runtime/core/dtype_dispatch.h"

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

// The `# -D NAME=VALUE` lines of the spec's leading comments.
static std::vector<ConstOverride> overrides_of(const std::string& spec) {
  std::vector<ConstOverride> out;
  std::istringstream in(spec);
  std::string line;
  while (std::getline(in, line) && line.rfind("#", 0) == 0) {
    static const std::regex directive(R"(# -D ([A-Za-z_][A-Za-z0-9_]*)=(.*))");
    std::smatch m;
    if (std::regex_match(line, m, directive)) out.push_back({m[1].str(), m[2].str()});
  }
  return out;
}

enum class Mode { Check, Explain, Optimized, Passes, Run, Model };

// One value as text: nested lists row-major, floats in their shortest exact form, strings quoted.
static std::string value_text(const Tensor& t) {
  auto scalar = [&](int64_t k) -> std::string {
    if (t.dtype() == DType::Bytes) {
      // Quoted with the language's escapes; other bytes outside printable ASCII as \xNN.
      std::string q = "\"";
      for (unsigned char ch : t.str(k)) {
        if (ch == '"' || ch == '\\') q += std::string("\\") + static_cast<char>(ch);
        else if (ch == '\n') q += "\\n";
        else if (ch == '\t') q += "\\t";
        else if (ch == '\r') q += "\\r";
        else if (ch == 0) q += "\\0";
        else if (ch < 0x20 || ch >= 0x7f) q += fmt::format("\\x{:02x}", ch);
        else q += static_cast<char>(ch);
      }
      return q + "\"";
    }
    return visit_numeric(t.dtype(), [&](auto tag) -> std::string {
      using T = typename decltype(tag)::type;
      const T v = t.data<T>()[k];
      if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
      else if constexpr (std::is_integral_v<T>) return std::to_string(v);
      else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) return fmt::format("{}", v);
      else return fmt::format("{}", convert<float>(v));
    });
  };
  const Shape& shape = t.shape();
  int64_t k = 0;
  std::function<std::string(size_t)> build = [&](size_t axis) -> std::string {
    if (axis == shape.size()) return scalar(k++);
    std::string out = "[";
    for (int64_t i = 0; i < shape[axis]; ++i) out += (i ? ", " : "") + build(axis + 1);
    return out + "]";
  };
  return fmt::format("{}{} {}", dtype_name(t.dtype()), shape_to_spec(shape), build(0));
}

// Runs `plan` to its end (or 100 elements): one line per element, or `error: ...` where it fails.
static std::vector<std::string> run_elements(const Plan& plan, int threads, const std::string& spec_dir) {
  std::vector<std::string> lines;
  try {
    RunOptions ro;
    ro.threads = threads;
    ro.device = DevicePolicy::Cpu;
    ro.spec_dir = spec_dir;
    PipelineRun run(plan, ro);
    const std::vector<Field>& fields = plan.stages.back().element.fields;
    Chunk c;
    while (lines.size() < 100 && run.next(c))
      for (int64_t r = 0; r < c.rows && lines.size() < 100; ++r) {
        std::string e;
        for (size_t k = 0; k < fields.size(); ++k)
          e += (k ? ", " : "") + fields[k].name + ": " + value_text(column_row(c.columns[k], r));
        lines.push_back(fmt::format("#{} {{{}}}", lines.size(), e));
      }
  } catch (const std::exception& e) {
    lines.push_back(std::string("error: ") + e.what());
  }
  return lines;
}

// Mode::Run: every pipeline of the spec, on the reference and as `pipec run` runs it.
static std::string run_pipelines(const std::string& rel_path, const std::string& spec, bool& had_errors) {
  std::ostringstream out;
  CompileRequest req;
  req.path = rel_path;
  req.text = spec;
  req.target = CompileTarget::EveryPipeline;
  req.options.check.const_overrides = overrides_of(spec);
  CompileRequest fast = req;
  req.options.passes.opt_level = 0;
  fast.options.cpu_kernels = CpuKernels::Jit;
  fast.options.jit.use_cache = false;
  CompileResult ref = compile(req);
  ref.program->diags.print(out, false);
  had_errors = ref.program->diags.has_errors();
  if (!ref.ok()) return out.str() + (ref.error.empty() ? "" : "compile failed: " + ref.error + "\n");
  CompileResult opt = compile(fast);
  const std::string dir = fs::path(rel_path).parent_path().string();
  for (size_t p = 0; p < ref.pipelines.size(); ++p) {
    out << "pipeline " << ref.pipelines[p].decl->name << "\n";
    std::vector<std::string> want = run_elements(ref.pipelines[p].plan, 1, dir);
    for (const std::string& line : want) out << "  " << line << "\n";
    if (!opt.ok() || p >= opt.pipelines.size()) {
      out << "  optimized: compile failed: " << opt.error << "\n";
      continue;
    }
    const CompiledPipeline& o = opt.pipelines[p];
    if (o.jit)
      for (const auto& k : o.jit->stages) {
        // A stage of a flat_map's inner pipeline is `#<flat_map>.<stage>`, found through the inner plans.
        const Plan* plan = &o.plan;
        std::string number;
        for (int f : k.within) {
          number += std::to_string(f) + ".";
          plan = plan->stages.at(static_cast<size_t>(f)).inner.get();
        }
        number += std::to_string(k.stage);
        out << "  kernel #" << number << " " << stage_name(plan->stages.at(static_cast<size_t>(k.stage)).kind) << ": "
            << (k.native ? "jit" : "interpreter: " + k.why_not) << "\n";
      }
    std::vector<std::string> got = run_elements(o.plan, 4, dir);
    // A run that fails must fail alike; how many elements come out before depends on the chunks.
    auto failed = [](const std::vector<std::string>& v) { return !v.empty() && v.back().rfind("error: ", 0) == 0; };
    if (got == want || (failed(got) && failed(want) && got.back() == want.back())) continue;
    out << "  optimized run differs:\n";
    for (const std::string& line : got) out << "    " << line << "\n";
  }
  return out.str();
}

static std::string run_spec(const std::string& rel_path, const std::string& spec, Mode mode, bool& had_errors) {
  if (mode == Mode::Run) return relative_paths(run_pipelines(rel_path, spec, had_errors));
  std::ostringstream out, passes;
  CompileRequest req;
  req.path = rel_path;
  req.text = spec;
  req.target = mode == Mode::Check || mode == Mode::Model ? CompileTarget::CheckOnly : CompileTarget::EveryPipeline;
  req.options.check.const_overrides = overrides_of(spec);
  if (mode == Mode::Explain) req.options.passes.opt_level = 0;
  if (mode == Mode::Passes)
    req.options.passes.log = [&](const std::string& pass, bool changed, const Plan& after) {
      passes << "== after " << pass << (changed ? " ==\n" + print_plan(after) : ": unchanged ==\n");
    };
  CompileResult r = compile(req);
  r.program->diags.print(out, false);
  had_errors = r.program->diags.has_errors();
  out << passes.str();
  if (r.status == CompileStatus::InternalError) out << "INTERNAL ERROR: " << r.error << "\n";
  if (mode == Mode::Explain || mode == Mode::Optimized)
    for (const CompiledPipeline& p : r.pipelines) out << print_plan(p.plan);
  if (mode == Mode::Model && !had_errors)
    for (const CompiledTrain& t : r.trains) out << print_train_program(t.program);
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
                : spec.rfind("# mode: run", 0) == 0       ? Mode::Run
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
