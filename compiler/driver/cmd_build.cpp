// `pipec build SPEC -o libNAME.so`: a pipeline compiled ahead of time into a shared library with the
// C ABI of runtime/capi/pipe.h, plus libNAME.h describing its fields and a copy of pipe.h beside it.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "compiler/compile/compile.h"
#include "compiler/compile/compile_serving.h"
#include "compiler/driver/build_library.h"
#include "compiler/driver/cli.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/compile_report.h"
#include "compiler/driver/installed_layout.h"
#include "compiler/driver/library_header.h"
#include "compiler/driver/opt_flags.h"
#include "compiler/driver/spec_options.h"
#include "runtime/capi/pipe_handle.h"
#include "runtime/model/model_serialize.h"
#include "runtime/train/persist/weights_file.h"

namespace pipec {

namespace fs = std::filesystem;

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

// `pipec build SPEC --train T --weights W -o libT.so`: a model library (runtime/serve). Returns the exit code.
int build_model_library(const CompileRequest& request, const SpecFlags& flags, const std::string& weights,
                        const std::string& output, const TempDir& tmp) {
  ServingCompile served = compile_serving(request);
  if (auto code = report_compile(served.result, "build", flags)) return *code;
  if (!served.error.empty()) {
    std::cerr << fmt::format("pipec build: train `{}` cannot be served: {}\n", served.result.trains[0].program.name,
                             served.error);
    return 1;
  }
  const TrainProgram& t = served.result.trains[0].program;
  // The weights must be this model's: checked now rather than when the library is opened.
  try {
    FlatBuffers<float> buffers;
    buffers.params.resize(static_cast<size_t>(t.inference.param_elements()));
    buffers.states.resize(static_cast<size_t>(t.inference.state_elements()));
    load_weights(t.inference, weights, buffers);
  } catch (const WeightsFileError& e) {
    std::cerr << "pipec build: --weights: " << e.what() << "\n";
    return 1;
  }
  LibraryBuild b;
  b.output = output;
  b.spec_dir = fs::absolute(fs::path(request.path)).parent_path().lexically_normal().string();
  b.work_dir = tmp.path.string();
  if (served.object_kernels > 0) b.kernel_objects.push_back(request.options.object_path);
  b.model = ModelEmbedding{encode_model_graph(t.inference), weights, t.name};
  fs::path out_dir = fs::absolute(fs::path(output)).parent_path();
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (std::string err = build_library(served.plan, b); !err.empty()) {
    std::cerr << "pipec build: " << err << "\n";
    return 2;
  }
  const std::string stem = library_stem(output);
  const fs::path header = out_dir / ("lib" + stem + ".h");
  std::ofstream(header) << model_header_text(served.plan, t.inference, stem, request.path, t.name);
  fs::copy_file(capi_header_path(), out_dir / "pipe.h", fs::copy_options::overwrite_existing, ec);
  if (ec || !fs::exists(header)) {
    std::cerr << fmt::format("pipec build: cannot write {} and pipe.h: {}\n", header.string(), ec.message());
    return 2;
  }
  if (!flags.quiet) {
    std::string inputs;
    for (const Field& f : served.plan.stages.front().element.fields)
      inputs += fmt::format("{}{}: {}", inputs.empty() ? "" : ", ", f.name, type_to_string(*f.type));
    std::cerr << fmt::format(
        "pipec build: wrote {} (train `{}`: inputs {}; {} preprocessing kernels compiled) and {}\n", output, t.name,
        inputs, served.object_kernels, header.string());
  }
  return 0;
}

}  // namespace

int cmd_build(const Args& args) {
  SpecFlags flags;
  CompileRequest request;
  std::string output;
  bool no_kernels = false;
  std::string train, weights;
  auto app = make_command(
      "build", "SPEC -o libNAME.so",
      "Compiles a pipeline of SPEC into a shared library that C, C++ and Python (ctypes, DLPack) programs\n"
      "read batches from through the C ABI in pipe.h. Writes libNAME.so, libNAME.h (the fields: names,\n"
      "dtypes, shapes) and pipe.h into the output's folder. Relative data paths resolve against SPEC's\n"
      "folder unless pipe_options.data_dir says otherwise.\n"
      "With --train T --weights W, the library serves train block T's model instead: the preprocessing of its\n"
      "data (the maps before `batch`) and the model's forward pass in inference mode with W's weights, behind\n"
      "pipe_predict (docs/capi.md, \"Served models\").");
  app->add_option("SPEC", request.path, "the spec")->required();
  app->add_option("-o,--output", output, "the library to write (its header is named after it)")
      ->type_name("FILE")
      ->required();
  app->add_option("--pipeline", request.pipeline,
                  "the pipeline to build (default: the only one, or the one a train block uses)")
      ->type_name("NAME");
  app->add_option("--train", train, "build a model library of this train block (needs --weights)")->type_name("T");
  app->add_option("--weights", weights,
                  "the trained weights the model library carries (`pipec run --save` writes them)")
      ->type_name("W.safetensors");
  app->add_flag("--no-kernels", no_kernels,
                "compile no map/filter kernels: the library runs every body on the interpreter");
  add_spec_flags(*app, flags, "no line saying what was written");
  add_opt_flags(*app, request.options.passes);
  app->footer(
      "environment:\n"
      "  PIPEC_CC                the C compiler and linker (default: cc)\n"
      "  PIPEC_RUNTIME_LIB_DIR   folder with libpipec_runtime.a and libpipec_capi.a (default: this build's)");
  if (auto code = parse_command_line(*app, args)) return *code;
  if (train.empty() != weights.empty()) {
    std::cerr << "pipec build: --train and --weights go together: a model library carries a train block's model "
                 "and its trained weights\n";
    return 2;
  }

  TempDir tmp;
  if (tmp.path.empty()) {
    std::cerr << "pipec build: cannot create a temporary folder\n";
    return 2;
  }
  if (!train.empty()) {
    request.train.block = train;
    request.options.check = flags.check_options();
    request.options.cpu_kernels = no_kernels ? CpuKernels::None : CpuKernels::Object;
    request.options.object_path = (tmp.path / "kernels.o").string();
    request.options.device = DevicePolicy::Cpu;
    return build_model_library(request, flags, weights, output, tmp);
  }
  // The same optimized plan `pipec run` executes; at -O0 (the reference, the lowered plan on the
  // interpreter) compile() makes no kernels either. Every map/filter body LLVM can compile goes into one
  // object linked into the library; each compiled stage's native->symbol is kept in the serialized plan,
  // which pipe_open binds. A library's plan runs on the CPU: no CUDA kernels.
  const fs::path object = tmp.path / "kernels.o";
  request.options.check = flags.check_options();
  request.options.cpu_kernels = no_kernels ? CpuKernels::None : CpuKernels::Object;
  request.options.object_path = object.string();
  request.options.device = DevicePolicy::Cpu;
  CompileResult compiled = compile(request);
  if (auto code = report_compile(compiled, "build", flags)) return *code;
  const Decl* decl = compiled.pipelines[0].decl;
  const Plan& plan = compiled.pipelines[0].plan;
  const int num_kernels = compiled.pipelines[0].object_kernels;
  if (std::string why = capi_element_problem(plan.stages.back().element); !why.empty()) {
    std::cerr << fmt::format("pipec build: pipeline `{}` cannot be built into a library: {}\n", decl->name, why);
    return 1;
  }

  const std::string& spec = request.path;
  LibraryBuild b;
  b.output = output;
  b.spec_dir = fs::absolute(fs::path(spec)).parent_path().lexically_normal().string();
  b.work_dir = tmp.path.string();
  if (num_kernels > 0) b.kernel_objects.push_back(object.string());

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
  fs::copy_file(capi_header_path(), out_dir / "pipe.h", fs::copy_options::overwrite_existing, ec);
  if (ec || !fs::exists(header)) {
    std::cerr << fmt::format("pipec build: cannot write {} and pipe.h: {}\n", header.string(), ec.message());
    return 2;
  }
  if (!flags.quiet)
    std::cerr << fmt::format("pipec build: wrote {} ({} fields, {} compiled kernels) and {}\n", output,
                             plan.stages.back().element.fields.size(), num_kernels, header.string());
  return 0;
}

}  // namespace pipec
