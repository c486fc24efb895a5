// Golden tests of the CUDA code generator: for each tests/cuda/NAME.pipe, the kernels generated for its
// maps after to(gpu) must equal tests/cuda/NAME.cu byte for byte. `--update` rewrites the .cu files
// (review the diff: it is the generated code).
//
//   build/tests/cuda_golden tests/cuda [--update]
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "compiler/compile/compile.h"

namespace fs = std::filesystem;
using namespace pipec;

static std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The kernels of the plans as lowered (-O0), so that a change in the optimizer does not move them.
static std::string generate(const fs::path& spec, std::string& error) {
  CompileRequest req;
  req.path = spec.string();
  req.target = CompileTarget::EveryPipeline;
  req.options.passes.opt_level = 0;
  req.options.device = DevicePolicy::Auto;
  CompileResult r = compile(req);
  if (r.status == CompileStatus::SpecErrors) {
    std::ostringstream diags;
    r.program->diags.print(diags, false);
    error = diags.str();
    return "";
  }
  if (!r.ok() && r.status != CompileStatus::NoPipeline) {
    error = r.error;
    return "";
  }
  std::string out;
  for (const CompiledPipeline& p : r.pipelines) {
    for (size_t i = 0; i < p.plan.stages.size(); ++i) {
      const Stage& s = p.plan.stages[i];
      if (!s.gpu) continue;
      out += fmt::format("// ==== pipeline {} stage #{} ====\n", p.decl->name, i);
      out += s.gpu->unsupported.empty() ? s.gpu->source : "// not lowered: " + s.gpu->unsupported + "\n";
    }
  }
  if (out.empty()) error = "no map after to(gpu)";
  return out;
}

int main(int argc, char** argv) {
  std::string dir;
  bool update = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--update") update = true;
    else dir = a;
  }
  if (dir.empty()) {
    std::cerr << "usage: cuda_golden DIR [--update]\n";
    return 2;
  }
  std::vector<fs::path> specs;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".pipe") specs.push_back(e.path());
  std::sort(specs.begin(), specs.end());
  int passed = 0, failed = 0;
  for (const fs::path& spec : specs) {
    std::string error;
    std::string got = generate(spec, error);
    fs::path golden = fs::path(spec).replace_extension(".cu");
    if (!error.empty()) {
      std::cerr << "FAIL " << spec.string() << ": " << error << "\n";
      ++failed;
      continue;
    }
    if (update) {
      std::ofstream(golden, std::ios::binary) << got;
      ++passed;
      continue;
    }
    if (!fs::exists(golden) || read(golden) != got) {
      std::cerr << "FAIL " << spec.string() << ": generated source differs from " << golden.string()
                << " (run with --update and review the diff)\n";
      ++failed;
    } else {
      ++passed;
    }
  }
  if (specs.empty()) {
    std::cerr << "no .pipe files in " << dir << "\n";
    return 1;
  }
  std::cout << "cuda_golden: " << passed << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}
