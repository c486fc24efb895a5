// The CUDA code generator, checked without a GPU:
//  - NVRTC compiles the kernel of every example map and of synthetic maps to PTX for sm_80 and sm_90;
//  - the same source, compiled as host C++ (the prelude's host mode), gives the interpreter's values,
//    random ops included, which checks the generated index arithmetic and Philox streams.
// NVRTC comes with the CUDA toolkit that scripts/setup.sh expects; a machine without it fails these
// tests loudly unless PIPEC_ALLOW_NO_NVRTC=1 says that is intended.
#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cli_util.h"
#include "compiler/codegen/cuda/attach_gpu_kernels.h"
#include "compiler/codegen/cuda/cuda_emitter.h"
#include "compiler/lower/lower.h"
#include "compiler/sema/program.h"
#include "runtime/core/chunk.h"
#include "runtime/gpu/nvrtc_loader.h"
#include "runtime/ops/interpreter.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using cuda_codegen::emit_cuda_map;
using testing::ScratchDir;

const gpu::Nvrtc* nvrtc_or_fail() {
  std::string why;
  const gpu::Nvrtc* n = gpu::Nvrtc::get(&why);
  if (!n) {
    const char* allow = std::getenv("PIPEC_ALLOW_NO_NVRTC");
    if (allow && std::string(allow) == "1") return nullptr;
    ADD_FAILURE() << "NVRTC is needed for this test and is missing: " << why
                  << "\n(install the CUDA toolkit, or set PIPEC_ALLOW_NO_NVRTC=1 to skip NVRTC checks on purpose)";
  }
  return n;
}

std::vector<Plan> plans_of_file(const std::string& path) {
  auto program = check_file(path);
  std::ostringstream diags;
  program->diags.print(diags, false);
  EXPECT_FALSE(program->diags.has_errors()) << diags.str();
  std::vector<Plan> plans;
  for (const auto& d : program->main().decls)
    if (d->kind == DeclKind::Pipeline) plans.push_back(lower_pipeline(*program, *d));
  return plans;
}

Plan plan_of(const std::string& text) {
  auto program = check_text("test.pipe", text);
  std::ostringstream diags;
  program->diags.print(diags, false);
  EXPECT_FALSE(program->diags.has_errors()) << diags.str();
  for (const auto& d : program->main().decls)
    if (d->kind == DeclKind::Pipeline) return lower_pipeline(*program, *d);
  ADD_FAILURE() << "no pipeline";
  return {};
}

std::vector<std::string> input_fields(const Plan& p, const Stage& s) {
  std::vector<std::string> out;
  for (const Field& f : p.stages.at(s.inputs.at(0)).element.fields) out.push_back(f.name);
  return out;
}

void expect_nvrtc_compiles(const gpu::Nvrtc& nvrtc, const GpuKernel& k, const std::string& what) {
  for (int arch : {80, 90}) {
    gpu::PtxResult r = nvrtc.compile(k.source, k.entry + ".cu", arch, {"--fmad=false"});
    EXPECT_TRUE(r.ok) << what << " for sm_" << arch << ":\n" << r.log << "\n" << k.source;
    EXPECT_NE(r.ptx.find(fmt::format(".target sm_{}", arch)), std::string::npos) << what;
    EXPECT_NE(r.ptx.find(".entry " + k.entry), std::string::npos) << what;
  }
}

// Synthetic maps covering every op family the generator lowers.
const char* kSynthetic[] = {
    // arithmetic, casts, comparisons, logic, where, clip, min/max/sign, bit ops, float math
    "pipeline p = range(100) | map(r => {\n"
    "  x = f32(r.value) * 0.25 - 3.0\n"
    "  {\n"
    "    a: tanh(x) + exp(-abs(x)) * sqrt(abs(x)) - sigmoid(x) + log1p(abs(x)) * cos(x) - sin(x) / rsqrt(abs(x) + 1.0),\n"
    "    b: where(x > 0.0, floor(x), ceil(x)) - relu(-x) * square(x),\n"
    "    c: clip(r.value * 7 - 300, -100, 100),\n"
    "    d: i32(x * 1000.0) + max(i32(r.value), 50) - min(i32(r.value), 20) + sign(i32(r.value) - 40),\n"
    "    e: bit_or(r.value & 6, r.value ^ 3) + ~r.value,\n"
    "    f: u8(r.value * 37),\n"
    "    g: r.value > 30 && !(r.value == 50) || r.value <= 3,\n"
    "    h: i64(f64(r.value) * 1e18) + i64(x * 3e9)\n"
    "  }\n"
    "})\n",
    // bits, slices, gathers, reshapes, broadcasting against constant tables
    "pipeline p = range(64) | map(r => {\n"
    "  v = u8([1, 2, 3, 4, 5, 6, 7, 8] * r.value + [0, 9, 18, 27, 36, 45, 54, 63])\n"
    "  bits = unpack_bits(v)\n"
    "  grid = reshape(bits[0:48], [4, 3, 4])\n"
    "  { g: f32(grid[:, :, [3, 0, 2]]) * [1.0, -1.0, 0.5], s: bits[60:4:-3], t: grid[1:, ::2, 1] }\n"
    "})\n",
    // random ops: uniform (f32 and f64), normal, with and without their own seed, per-row operands
    "pipeline p = range(50) | map(r => {\n"
    "  {\n"
    "    u: random_uniform([3, 5], -2.0, 2.0),\n"
    "    w: f64(random_uniform([7], seed = 11)) + f64(r.value),\n"
    "    n: random_normal([6], 1.0, 3.0, seed = 5),\n"
    "    m: random_normal([3], f64(r.value), 2.0)\n"
    "  }\n"
    "})\n",
};

TEST(CudaCodegen, NvrtcCompilesEveryExampleMap) {
  const gpu::Nvrtc* nvrtc = nvrtc_or_fail();
  int kernels = 0;
  std::vector<std::string> skipped;
  for (const char* ex : {"chess/chess.pipe", "deblur/deblur.pipe", "preprocess/preprocess.pipe",
                         "segmentation/segmentation.pipe"}) {
    const std::string path = std::string(PIPEC_SOURCE_DIR) + "/examples/" + ex;
    for (const Plan& plan : plans_of_file(path)) {
      for (size_t i = 0; i < plan.stages.size(); ++i) {
        const Stage& s = plan.stages[i];
        if (s.kind != StageKind::Map || !s.fn) continue;
        auto r = emit_cuda_map(*s.fn, input_fields(plan, s), fmt::format("pipec_map_{}", i));
        const std::string what = fmt::format("{} stage #{}", ex, i);
        if (!r.kernel) {
          skipped.push_back(what + ": " + r.error);
          continue;
        }
        ++kernels;
        if (nvrtc) expect_nvrtc_compiles(*nvrtc, *r.kernel, what);
      }
    }
  }
  for (const std::string& s : skipped) std::cout << "  not lowered (runs on the CPU): " << s << "\n";
  // chess's map at least (deblur's GPU map uses image ops the generator does not lower yet).
  EXPECT_GE(kernels, 1);
}

TEST(CudaCodegen, ChessMapIsLoweredAndDeblurSaysWhyNot) {
  Plan chess = plans_of_file(std::string(PIPEC_SOURCE_DIR) + "/examples/chess/chess.pipe").at(0);
  bool found = false;
  for (const Stage& s : chess.stages)
    if (s.kind == StageKind::Map) {
      auto r = emit_cuda_map(*s.fn, input_fields(chess, s), "k");
      EXPECT_TRUE(r.kernel) << r.error;
      found = true;
    }
  EXPECT_TRUE(found);
  // deblur's map after to(gpu) uses image ops with no CUDA lowering yet: it gets a GpuKernel that says
  // which op and where, so the run can warn and keep that map on the CPU.
  // The training pipeline is the file's last one (the first two list the image files).
  Plan deblur = plans_of_file(std::string(PIPEC_SOURCE_DIR) + "/examples/deblur/deblur.pipe").back();
  EXPECT_EQ(cuda_codegen::attach_gpu_kernels(deblur), 0);
  int marked = 0;
  for (const Stage& s : deblur.stages)
    if (s.gpu) {
      ++marked;
      EXPECT_NE(s.gpu->unsupported.find("deblur.pipe:"), std::string::npos) << s.gpu->unsupported;
      EXPECT_TRUE(s.gpu->source.empty());
    }
  EXPECT_EQ(marked, 1);
}

TEST(CudaCodegen, NvrtcCompilesSyntheticMaps) {
  const gpu::Nvrtc* nvrtc = nvrtc_or_fail();
  if (!nvrtc) return;
  for (const char* text : kSynthetic) {
    Plan plan = plan_of(text);
    const Stage& s = plan.stages.back();
    ASSERT_EQ(s.kind, StageKind::Map);
    auto r = emit_cuda_map(*s.fn, input_fields(plan, s), "pipec_map_test");
    ASSERT_TRUE(r.kernel) << r.error;
    expect_nvrtc_compiles(*nvrtc, *r.kernel, text);
  }
}

TEST(CudaCodegen, NvrtcReportsCompileErrors) {
  const gpu::Nvrtc* nvrtc = nvrtc_or_fail();
  if (!nvrtc) return;
  gpu::PtxResult r = nvrtc->compile("extern \"C\" __global__ void k() { undefined_thing(); }", "bad.cu", 80);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("undefined_thing"), std::string::npos) << r.log;
}

TEST(CudaCodegen, UnsupportedOpsAreNamedWithTheirLocation) {
  Plan plan = plan_of("pipeline p = range(10) | map(r => { x: random_int([2], 0, 10) })\n");
  auto r = emit_cuda_map(*plan.stages.back().fn, input_fields(plan, plan.stages.back()), "k");
  EXPECT_FALSE(r.kernel);
  EXPECT_NE(r.error.find("random_int"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("test.pipe:1:"), std::string::npos) << r.error;
}

// ---- host differential: the generated source compiled by the host compiler ----------------------------

std::string ctype_of(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::U8: return "unsigned char";
    case DType::I8: return "signed char";
    case DType::U16: return "unsigned short";
    case DType::I16: return "short";
    case DType::U32: return "unsigned int";
    case DType::I32: return "int";
    case DType::U64: return "unsigned long long";
    case DType::I64: return "long long";
    case DType::F32: return "float";
    case DType::F64: return "double";
    default: return "?";
  }
}

using HostEntry = void (*)(void* const* ins, void* const* outs, long long rows, long long first, long long epoch,
                           unsigned long long seed);

/// Compiles the kernel plus a wrapper with a fixed signature as a shared library and opens it.
HostEntry compile_on_host(const GpuKernel& k, const ExprFunction& fn, const std::vector<DType>& in_types,
                          const ScratchDir& dir, void*& handle) {
  std::string src = k.source;
  src += "extern \"C\" void host_entry(void* const* ins, void* const* outs, long long rows, long long first, "
         "long long epoch, unsigned long long seed) {\n  " + k.entry + "(";
  for (size_t i = 0; i < in_types.size(); ++i) src += fmt::format("(const {}*)ins[{}], ", ctype_of(in_types[i]), i);
  for (size_t j = 0; j < fn.results.size(); ++j)
    src += fmt::format("({}*)outs[{}], ", ctype_of(fn.body[fn.results[j].second].type.dtype), j);
  src += "rows, first, epoch, seed);\n}\n";
  std::ofstream(dir / "k.cpp") << src;
  // -ffp-contract=off: like the interpreter (and NVRTC with --fmad=false), no fused multiply-adds.
  std::string cmd = fmt::format("c++ -std=c++17 -O1 -ffp-contract=off -shared -fPIC -o {} {} 2> {}", (dir / "k.so").string(),
                                (dir / "k.cpp").string(), (dir / "cc.log").string());
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << testing::read_all(dir / "cc.log") << "\n" << src;
  if (rc != 0) return nullptr;
  handle = dlopen((dir / "k.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_TRUE(handle) << dlerror();
  return handle ? reinterpret_cast<HostEntry>(dlsym(handle, "host_entry")) : nullptr;
}

bool close_enough(DType t, double a, double b) {
  if (!is_float(t)) return a == b;
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b || std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b));
}

double element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::Bool: return t.data<bool>()[i];
    case DType::U8: return t.data<uint8_t>()[i];
    case DType::I8: return t.data<int8_t>()[i];
    case DType::I32: return t.data<int32_t>()[i];
    case DType::U32: return t.data<uint32_t>()[i];
    case DType::I64: return static_cast<double>(t.data<int64_t>()[i]);
    case DType::F32: return t.data<float>()[i];
    case DType::F64: return t.data<double>()[i];
    default: return NAN;
  }
}

/// A column of `rows` elements of type `t` filled with a fixed pattern (every dtype the inputs use).
Column pattern_column(const Type& t, int64_t rows) {
  std::vector<int64_t> shape{rows};
  shape.insert(shape.end(), t.shape.begin(), t.shape.end());
  Column c;
  c.dense = Tensor::empty(t.dtype, shape);
  const int64_t n = c.dense.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = (i * 2654435761LL) % 1000 - 300;
    switch (t.dtype) {
      case DType::U8: c.dense.data<uint8_t>()[i] = static_cast<uint8_t>(i * 37 + (i >> 3)); break;
      case DType::I64: c.dense.data<int64_t>()[i] = v; break;
      case DType::I32: c.dense.data<int32_t>()[i] = static_cast<int32_t>(v); break;
      case DType::F32: c.dense.data<float>()[i] = static_cast<float>(v) * 0.01f; break;
      case DType::F64: c.dense.data<double>()[i] = static_cast<double>(v) * 0.01; break;
      default: ADD_FAILURE() << "no pattern for " << dtype_name(t.dtype); return c;
    }
  }
  return c;
}

/// Runs map stage `stage` of `plan` through the interpreter and through the host-compiled kernel on a
/// chunk of pattern data; every value must agree (floats within an ulp-scale tolerance, everything
/// else exactly). Returns the number of values compared.
int64_t differential(const Plan& plan, size_t stage, int64_t first_index, int64_t epoch, uint64_t seed) {
  const Stage& s = plan.stages.at(stage);
  const Stage& src = plan.stages.at(s.inputs.at(0));
  auto r = emit_cuda_map(*s.fn, input_fields(plan, s), "pipec_map_test");
  EXPECT_TRUE(r.kernel) << r.error;
  if (!r.kernel) return 0;
  const int64_t rows = 37;
  Chunk in;
  in.rows = rows;
  in.first_index = first_index;
  in.epoch = epoch;
  for (const Field& f : src.element.fields) in.columns.push_back(pattern_column(*f.type, rows));
  EvalContext ctx;
  ctx.seed = seed;
  std::vector<Column> want = run_function(*s.fn, input_fields(plan, s), in, ctx);

  ScratchDir dir;
  void* handle = nullptr;
  std::vector<DType> in_types;
  std::vector<void*> ins, outs;
  for (int f : r.kernel->input_fields) {
    in_types.push_back(src.element.fields.at(f).type->dtype);
    ins.push_back(in.columns.at(f).dense.raw());
  }
  HostEntry entry = compile_on_host(*r.kernel, *s.fn, in_types, dir, handle);
  if (!entry) return 0;
  std::vector<Tensor> got;
  for (size_t j = 0; j < s.fn->results.size(); ++j) {
    EXPECT_FALSE(want[j].ragged);
    got.push_back(Tensor::empty(want[j].dense.dtype(), want[j].dense.shape()));
    outs.push_back(got.back().raw());
  }
  entry(ins.data(), outs.data(), rows, first_index, epoch, seed);
  int64_t compared = 0;
  for (size_t j = 0; j < got.size(); ++j) {
    const Tensor& w = want[j].dense;
    EXPECT_EQ(got[j].shape(), w.shape());
    int bad = 0;
    for (int64_t i = 0; i < w.num_elements() && bad < 5; ++i, ++compared) {
      double a = element(got[j], i), b = element(w, i);
      if (!close_enough(w.dtype(), a, b)) {
        ++bad;
        ADD_FAILURE() << "result " << s.fn->results[j].first << " value " << i << ": kernel " << a << ", interpreter " << b;
      }
    }
  }
  dlclose(handle);
  return compared;
}

int64_t differential(const std::string& text, int64_t first_index, int64_t epoch, uint64_t seed) {
  Plan plan = plan_of(text);
  return differential(plan, plan.stages.size() - 1, first_index, epoch, seed);
}

TEST(CudaCodegenHost, ArithmeticMatchesInterpreter) { EXPECT_GT(differential(kSynthetic[0], 0, 0, 0), 0); }
TEST(CudaCodegenHost, BitsSlicesGathersMatchInterpreter) { EXPECT_GT(differential(kSynthetic[1], 5, 0, 0), 0); }
TEST(CudaCodegenHost, RandomStreamsMatchInterpreter) {
  EXPECT_GT(differential(kSynthetic[2], 0, 0, 0), 0);
  // Other element indices (past 2^32), epochs and run seeds give other streams, still the interpreter's.
  EXPECT_GT(differential(kSynthetic[2], (int64_t{1} << 32) + 17, 3, 0xdeadbeefcafeULL), 0);
}
TEST(CudaCodegenHost, ChessMapMatchesInterpreter) {
  // chess's map: unpack_bits, slices, a plane gather, broadcasting signs, f64 scoring with sign/tanh/max.
  Plan plan = plans_of_file(std::string(PIPEC_SOURCE_DIR) + "/examples/chess/chess.pipe").at(0);
  int maps = 0;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    if (plan.stages[i].kind != StageKind::Map) continue;
    EXPECT_GT(differential(plan, i, 1000, 1, 42), 0);
    ++maps;
  }
  EXPECT_EQ(maps, 1);
}

}  // namespace
}  // namespace pipec
