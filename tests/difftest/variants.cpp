#include "tests/difftest/variants.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "compiler/compile/compile.h"
#include "runtime/capi/pipe_handle.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/io/npy.h"

namespace pipec::difftest {

namespace fs = std::filesystem;

namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Element sorted(Element e) {
  std::sort(e.begin(), e.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return e;
}

// What `pipec run -O0 --no-jit --device cpu` does, minus the command line: compile (check, lower,
// verify), run, and collect every element.
RunOutput run_in_process(const Variant& v, const RunRequest& req) {
  RunOutput out;
  try {
    CompileRequest request;
    request.path = req.spec.string();
    request.pipeline = req.pipeline;
    request.options.passes.opt_level = 0;
    CompileResult compiled = compile(request);
    if (!compiled.ok()) {
      std::ostringstream diags;
      compiled.program->diags.print(diags, false);
      out.error = "compile failed: " + diags.str() + compiled.error;
      return out;
    }
    const Plan& plan = compiled.pipelines[0].plan;
    const std::vector<Field>& fields = plan.stages.back().element.fields;
    RunOptions ro;
    ro.threads = v.threads;
    ro.chunk_rows = v.chunk_rows;
    ro.spec_dir = req.spec.parent_path().string();
    PipelineRun run(plan, ro);
    Chunk c;
    while (!(req.take && static_cast<int64_t>(out.elements.size()) >= *req.take) && run.next(c)) {
      for (int64_t r = 0; r < c.rows; ++r) {
        if (req.take && static_cast<int64_t>(out.elements.size()) >= *req.take) break;
        Element e;
        for (size_t k = 0; k < fields.size(); ++k) e.emplace_back(fields[k].name, column_row(c.columns[k], r));
        out.elements.push_back(sorted(std::move(e)));
      }
    }
    out.ok = true;
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

void read_output_dir(const fs::path& dir, RunOutput& out);

// `pipec run --output DIR`, read back: DIR/NNNNNN/<field>.npy.
RunOutput run_command_line(const Variant& v, const RunRequest& req, const std::string& pipec) {
  RunOutput out;
  fs::path dir = req.scratch / ("out-" + v.name);
  std::error_code ec;
  fs::remove_all(dir, ec);
  std::vector<std::string> args = {"run", req.spec.string(), "--output", dir.string(), "--quiet"};
  if (!req.pipeline.empty()) args.insert(args.end(), {"--pipeline", req.pipeline});
  if (req.take) args.insert(args.end(), {"--take", std::to_string(*req.take)});
  args.insert(args.end(), v.flags.begin(), v.flags.end());
  std::string err;
  int code = run_command(pipec, args, req.scratch, nullptr, &err);
  if (code != 0) {
    out.error = fmt::format("pipec run exited with {}: {}", code, err);
    return out;
  }
  read_output_dir(dir, out);
  fs::remove_all(dir, ec);
  return out;
}

// Why `pipec build` must refuse the pipeline (docs/capi.md: byte-string fields cannot travel as
// DLPack), from its element as the checker types it; empty when it can be built.
std::string library_refusal(const RunRequest& req) {
  CompileRequest request;
  request.path = req.spec.string();
  request.pipeline = req.pipeline;
  request.options.passes.opt_level = 0;
  request.options.cpu_kernels = CpuKernels::None;
  CompileResult r = compile(request);
  if (!r.ok() || r.pipelines.size() != 1) return "";  // the build fails for that reason, and the comparison reports it
  return capi_element_problem(r.pipelines[0].plan.stages.back().element);
}

// The library `pipec build` makes of the spec, read by difftest_read_lib into the same layout.
RunOutput run_built_library(const Variant& v, const RunRequest& req, const std::string& pipec,
                            const std::string& reader) {
  RunOutput out;
  const std::string refusal = library_refusal(req);
  fs::path lib = req.scratch / "lib" / "libcase.so";
  fs::path dir = req.scratch / ("out-" + v.name);
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(lib.parent_path());
  std::vector<std::string> args = {"build", req.spec.string(), "-o", lib.string()};
  if (!req.pipeline.empty()) args.insert(args.end(), {"--pipeline", req.pipeline});
  args.insert(args.end(), v.flags.begin(), v.flags.end());
  std::string err;
  int code = run_command(pipec, args, req.scratch, nullptr, &err);
  if (!refusal.empty()) {
    // The variant does not apply; what is checked is that `pipec build` refuses it, and why.
    if (code == 1 && err.find(refusal) != std::string::npos) out.not_applicable = refusal;
    else
      out.error =
          fmt::format("pipec build must refuse this pipeline ({}), but it exited with {}: {}", refusal, code, err);
    return out;
  }
  if (code != 0) {
    out.error = fmt::format("pipec build exited with {}: {}", code, err);
    return out;
  }
  std::vector<std::string> rargs = {lib.string(), dir.string()};
  if (req.take) rargs.push_back(std::to_string(*req.take));
  if (int code = run_command(reader, rargs, req.scratch, nullptr, &err)) {
    out.error = fmt::format("difftest_read_lib exited with {}: {}", code, err);
    return out;
  }
  read_output_dir(dir, out);
  fs::remove_all(dir, ec);
  fs::remove_all(lib.parent_path(), ec);
  return out;
}

void read_output_dir(const fs::path& dir, RunOutput& out) {
  try {
    std::vector<fs::path> folders;
    if (fs::exists(dir))
      for (const auto& entry : fs::directory_iterator(dir)) folders.push_back(entry.path());
    std::sort(folders.begin(), folders.end());
    for (size_t i = 0; i < folders.size(); ++i) {
      if (folders[i].filename() != fmt::format("{:06d}", i)) {
        out.error = "unexpected output folder " + folders[i].string();
        return;
      }
      Element e;
      for (const auto& f : fs::directory_iterator(folders[i]))
        if (f.path().extension() == ".npy") e.emplace_back(f.path().stem().string(), read_npy(f.path().string()));
      out.elements.push_back(sorted(std::move(e)));
    }
    out.ok = true;
  } catch (const std::exception& e) {
    out.error = e.what();
  }
}

}  // namespace

int run_command(const std::string& pipec, const std::vector<std::string>& args, const fs::path& scratch,
                std::string* out, std::string* err) {
  fs::create_directories(scratch);
  fs::path o = scratch / "cmd.out", e = scratch / "cmd.err";
  std::string cmd = quote(pipec);
  for (const auto& a : args) cmd += " " + quote(a);
  cmd += " >" + quote(o.string()) + " 2>" + quote(e.string()) + " </dev/null";
  int status = std::system(cmd.c_str());
  if (out) *out = read_all(o);
  if (err) *err = read_all(e);
  if (status == -1) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Variant reference_variant() { return Variant{"interp-threads1", true, 1, 0, {}, Tolerance::Exact}; }

VariantSet detect_variants(const std::string& pipec, const std::string& lib_reader, int lib_every) {
  VariantSet s;
  // Scheduling must not change a single bit: several threads, and chunks of odd sizes (one row, a
  // prime) that put chunk boundaries inside batches, shuffle buffers and repeats.
  s.enabled.push_back({"interp-threads4", true, 4, 0, {}, Tolerance::Exact});
  s.enabled.push_back({"interp-chunk1", true, 3, 1, {}, Tolerance::Exact});
  s.enabled.push_back({"interp-chunk7", true, 2, 7, {}, Tolerance::Exact});
  fs::path scratch = fs::temp_directory_path() / fmt::format("pipec-difftest-detect-{}", ::getpid());
  std::string help;
  int code = run_command(pipec, {"run", "--help"}, scratch, &help);
  if (code != 0) {
    s.skipped.push_back(fmt::format("pipec-run*: `{} run --help` failed (exit {})", pipec, code));
  } else {
    // The command line as users run it: whatever the default pipeline is (optimized, JIT when it exists).
    s.enabled.push_back({"pipec-run", false, 0, 0, {}, Tolerance::Ulp});
    s.enabled.push_back({"pipec-run-threads1", false, 0, 0, {"--threads", "1"}, Tolerance::Ulp});
    struct Flagged {
      const char* name;
      const char* flag;
      Tolerance tol;
    };
    // -O0 runs the unoptimized plan, the closest thing to the reference; --no-jit the optimized plan in the
    // interpreter.
    for (Flagged f :
         {Flagged{"pipec-run-O0", "-O0", Tolerance::Ulp}, Flagged{"pipec-run-no-jit", "--no-jit", Tolerance::Ulp}}) {
      if (help.find(f.flag) != std::string::npos) s.enabled.push_back({f.name, false, 0, 0, {f.flag}, f.tol});
      else s.skipped.push_back(fmt::format("{}: `pipec run --help` lists no {}", f.name, f.flag));
    }
  }
  std::string build_help;
  int build_code = run_command(pipec, {"build", "--help"}, scratch, &build_help);
  if (build_code == 0 && lib_reader.empty()) {
    s.skipped.push_back("built-library: no difftest_read_lib program given");
  } else if (build_code == 0) {
    // Libraries may run compiled kernels: the ulp bound applies. Building one links a library, so it
    // runs on every lib_every-th case only.
    Variant v{"built-library", false, 0, 0, {}, Tolerance::Ulp};
    v.built_library = true;
    v.every = std::max(1, lib_every);
    s.enabled.push_back(v);
  } else
    s.skipped.push_back(
        fmt::format("built-library: `pipec build --help` failed (exit {}): no `pipec build` in this tree", build_code));
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return s;
}

RunOutput run_variant(const Variant& v, const RunRequest& req, const std::string& pipec,
                      const std::string& lib_reader) {
  if (v.in_process) return run_in_process(v, req);
  if (v.built_library) return run_built_library(v, req, pipec, lib_reader);
  return run_command_line(v, req, pipec);
}

}  // namespace pipec::difftest
