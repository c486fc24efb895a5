// `pipec build SPEC -o libNAME.so`: a pipeline compiled ahead of time into a shared library with the
// C ABI of runtime/capi/pipe.h, plus libNAME.h describing its fields and a copy of pipe.h beside it.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "compiler/codegen/llvm/aot.h"
#include "compiler/driver/build_library.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/library_header.h"
#include "compiler/driver/opt_flags.h"
#include "compiler/driver/pick_pipeline.h"
#include "compiler/driver/spec_options.h"
#include "compiler/lower/lower.h"
#include "runtime/capi/pipe_handle.h"

namespace pipec {

namespace fs = std::filesystem;

static const char* kBuildUsage =
    "usage: pipec build [options] SPEC -o libNAME.so\n"
    "\n"
    "Compiles a pipeline of SPEC into a shared library that C, C++ and Python (ctypes, DLPack) programs\n"
    "read batches from through the C ABI in pipe.h. Writes libNAME.so, libNAME.h (the fields: names,\n"
    "dtypes, shapes) and pipe.h into the output's folder. Relative data paths resolve against SPEC's\n"
    "folder unless pipe_options.data_dir says otherwise.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   the library to write (required; its header is named after it)\n"
    "  --pipeline NAME     the pipeline to build (default: the only one, or the one a train block uses)\n"
    "  --no-kernels        compile no map/filter kernels: the library runs every body on the interpreter\n"
    "  -I DIR              also search DIR for `import name`\n"
    "\n"
    "environment:\n"
    "  PIPEC_CC                the C compiler and linker (default: cc)\n"
    "  PIPEC_RUNTIME_LIB_DIR   folder with libpipec_runtime.a and libpipec_capi.a (default: this build's)\n";

namespace {

// NAME of libNAME.so (or of NAME.so): the prefix of the header's identifiers.
std::string library_stem(const fs::path& out) {
  std::string stem = out.filename().string();
  if (auto dot = stem.find('.'); dot != std::string::npos) stem = stem.substr(0, dot);
  if (stem.rfind("lib", 0) == 0 && stem.size() > 3) stem = stem.substr(3);
  return stem;
}

// A temporary folder for the generated files, removed on scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "pipec-build-XXXXXX").string();
    if (mkdtemp(tmpl.data())) path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

}  // namespace

int cmd_build(const Args& args) {
  if (wants_help(args)) {
    std::cout << kBuildUsage << kOptFlagsHelp;
    return 0;
  }
  SpecOptions opts;
  std::vector<std::string> rest;
  std::vector<std::string> extra = {"-o", "--output", "--pipeline", "--no-kernels"};
  extra.insert(extra.end(), opt_flag_names().begin(), opt_flag_names().end());
  if (!parse_spec_options(args, opts, rest, "build", extra)) return 2;
  PassOptions passes;
  if (!take_opt_flags(rest, passes, "build")) return 2;
  std::string spec, output, pipeline;
  bool kernels = true;
  for (size_t i = 0; i < rest.size(); ++i) {
    const std::string& a = rest[i];
    if (a == "-o" || a == "--output" || a == "--pipeline") {
      if (i + 1 >= rest.size()) {
        std::cerr << "pipec build: " << a << " needs a value\n";
        return 2;
      }
      (a == "--pipeline" ? pipeline : output) = rest[++i];
    } else if (a == "--no-kernels") {
      kernels = false;
    } else if (a.rfind("--output=", 0) == 0) {
      output = a.substr(9);
    } else if (a.rfind("--pipeline=", 0) == 0) {
      pipeline = a.substr(11);
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "pipec build: unknown option " << a << " (see pipec build --help)\n";
      return 2;
    } else if (spec.empty()) {
      spec = a;
    } else {
      std::cerr << "pipec build: expected one spec file, got `" << spec << "` and `" << a << "`\n";
      return 2;
    }
  }
  if (spec.empty() || output.empty()) {
    std::cerr << "pipec build: " << (spec.empty() ? "no spec file" : "no output: give -o libNAME.so") << "\n" << kBuildUsage;
    return 2;
  }

  auto program = check_file(spec, opts.check);
  if (!program->io_error.empty()) {
    std::cerr << "pipec build: " << program->io_error << "\n";
    return 2;
  }
  program->diags.print(std::cerr, opts.color);
  if (program->diags.has_errors()) return 1;
  std::string error;
  const Decl* decl = pick_pipeline(*program, pipeline, error);
  if (!decl) {
    std::cerr << "pipec build: " << error << "\n";
    return 2;
  }
  Plan plan = lower_pipeline(*program, *decl);
  // The same optimized plan `pipec run` executes; -O0, like `pipec run -O0`, is the lowered plan on the
  // interpreter (the reference), so it compiles no kernels either.
  if (passes.opt_level == 0) kernels = false;
  try {
    run_passes(plan, passes);
  } catch (const PassError& e) {
    std::cerr << "pipec build: " << e.what();
    return 2;
  }
  if (auto problems = verify_plan(plan); !problems.empty()) {
    std::cerr << "pipec build: internal error: the plan does not verify:\n";
    for (auto& p : problems) std::cerr << "  " << p << "\n";
    return 2;
  }
  if (std::string why = capi_element_problem(plan.stages.back().element); !why.empty()) {
    std::cerr << fmt::format("pipec build: pipeline `{}` cannot be built into a library: {}\n", decl->name, why);
    return 1;
  }

  TempDir tmp;
  if (tmp.path.empty()) {
    std::cerr << "pipec build: cannot create a temporary folder\n";
    return 2;
  }
  LibraryBuild b;
  b.output = output;
  b.spec_dir = fs::absolute(fs::path(spec)).parent_path().lexically_normal().string();
  b.work_dir = tmp.path.string();
  // Code generation: every map/filter body LLVM can compile goes into one object, linked into the
  // library; emit_kernels_object sets each compiled stage's native->symbol, which the serialized plan
  // keeps and pipe_open binds. The rest run on the interpreter.
  int num_kernels = 0;
  if (kernels) {
    fs::path obj = tmp.path / "kernels.o";
    try {
      num_kernels = codegen::emit_kernels_object(plan, obj.string());
    } catch (const std::exception& e) {
      std::cerr << "pipec build: code generation failed: " << e.what() << "\n";
      return 2;
    }
    if (num_kernels > 0) b.kernel_objects.push_back(obj.string());
  }

  fs::path out_dir = fs::absolute(fs::path(output)).parent_path();
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (std::string err = build_library(plan, b); !err.empty()) {
    std::cerr << "pipec build: " << err << "\n";
    return 2;
  }
  std::string stem = library_stem(output);
  fs::path header = out_dir / ("lib" + stem + ".h");
  std::ofstream(header) << library_header_text(plan, stem, spec);
  fs::copy_file(PIPEC_CAPI_HEADER, out_dir / "pipe.h", fs::copy_options::overwrite_existing, ec);
  if (ec || !fs::exists(header)) {
    std::cerr << fmt::format("pipec build: cannot write {} and pipe.h: {}\n", header.string(), ec.message());
    return 2;
  }
  if (!opts.quiet)
    std::cerr << fmt::format("pipec build: wrote {} ({} fields, {} compiled kernels) and {}\n", output,
                             plan.stages.back().element.fields.size(), num_kernels, header.string());
  return 0;
}

}  // namespace pipec
