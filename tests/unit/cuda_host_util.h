// Generated CUDA kernels run on the host, to check the CUDA printer without a GPU: the prelude is also
// valid host C++ (compiler/codegen/cuda/cuda_prelude.h), so a kernel compiled by the host compiler
// computes every element in one call, with the host's libm, i.e. the interpreter's own functions.
// Its results must then equal the interpreter's bit for bit (NaN payloads aside), random ops included.
//
// Kernels are compiled in batches, one compiler run for many: the prelude once, then each kernel's own
// text in a namespace of its own (its Ctx, tables and result functions), and a wrapper with a fixed
// signature per kernel. NVRTC batches work the same way (nvrtc_batch_source).
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/codegen/cuda/cuda_emitter.h"
#include "compiler/codegen/cuda/cuda_prelude.h"
#include "runtime/core/chunk.h"
#include "runtime/gpu/nvrtc_loader.h"
#include "runtime/ops/interpreter.h"
#include "runtime/ops/kernel.h"
#include "runtime/plan/plan.h"
#include "tests/unit/codegen_util.h"

namespace pipec::testing {

inline std::string host_ctype(DType t) {
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
    default: return "void";
  }
}

/// A kernel's source without the prelude (which every generated source starts with).
inline std::string kernel_body(const GpuKernel& k) {
  const std::string_view prelude = cuda_codegen::cuda_prelude();
  EXPECT_EQ(k.source.compare(0, prelude.size(), prelude), 0) << "the kernel does not start with the prelude";
  return k.source.substr(std::min(prelude.size(), k.source.size()));
}

/// The prelude and then every kernel in a namespace of its own (entries must differ).
inline std::string batch_source(const std::vector<const GpuKernel*>& kernels) {
  std::string src(cuda_codegen::cuda_prelude());
  std::set<std::string> entries;
  for (size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_TRUE(entries.insert(kernels[i]->entry).second) << "two kernels named " << kernels[i]->entry;
    src += fmt::format("namespace pipec_k{} {{\n{}}}  // namespace pipec_k{}\n", i, kernel_body(*kernels[i]), i);
  }
  return src;
}

using HostEntry = void (*)(void* const* ins, void* const* outs, long long rows, long long first, long long epoch,
                           unsigned long long seed);

/// Many generated kernels compiled as host C++ into one shared library.
class HostKernels {
 public:
  HostKernels() = default;
  HostKernels(const HostKernels&) = delete;
  HostKernels& operator=(const HostKernels&) = delete;
  ~HostKernels() {
    if (handle_) dlclose(handle_);
  }

  /// Adds kernel `k`, whose inputs and outputs have these dtypes; returns its index.
  int add(const GpuKernel& k, std::vector<DType> in_types, std::vector<DType> out_types) {
    kernels_.push_back({k, std::move(in_types), std::move(out_types)});
    return static_cast<int>(kernels_.size()) - 1;
  }
  size_t size() const { return kernels_.size(); }
  const GpuKernel& kernel(int i) const { return kernels_.at(static_cast<size_t>(i)).k; }

  /// Compiles and loads everything added (one compiler run). False, with a test failure, on error.
  bool build() {
    std::vector<const GpuKernel*> ks;
    for (const Entry& e : kernels_) ks.push_back(&e.k);
    std::string src = batch_source(ks);
    for (size_t i = 0; i < kernels_.size(); ++i) {
      const Entry& e = kernels_[i];
      src += fmt::format(
          "extern \"C\" void host_entry_{}(void* const* ins, void* const* outs, long long rows, long long first, "
          "long long epoch, unsigned long long seed) {{\n  pipec_k{}::{}(",
          i, i, e.k.entry);
      for (size_t j = 0; j < e.in_types.size(); ++j)
        src += fmt::format("(const {}*)ins[{}], ", host_ctype(e.in_types[j]), j);
      for (size_t j = 0; j < e.out_types.size(); ++j)
        src += fmt::format("({}*)outs[{}], ", host_ctype(e.out_types[j]), j);
      src += "rows, first, epoch, seed);\n}\n";
    }
    const std::filesystem::path cpp = dir_.path / "kernels.cpp", so = dir_.path / "kernels.so",
                                log = dir_.path / "cc.log";
    std::ofstream(cpp) << src;
    // -ffp-contract=off: like the interpreter (and NVRTC with --fmad=false), no fused multiply-adds.
    // -O0: these sources are large and only checked for their values.
    const std::string cmd = fmt::format("c++ -std=c++17 -O0 -ffp-contract=off -shared -fPIC -o {} {} 2> {}",
                                        so.string(), cpp.string(), log.string());
    if (std::system(cmd.c_str()) != 0) {
      ADD_FAILURE() << "the host compiler rejected the generated kernels:\n"
                    << read_all(log) << "\n(source: " << cpp.string() << ")";
      dir_.keep = true;
      return false;
    }
    handle_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      ADD_FAILURE() << dlerror();
      return false;
    }
    return true;
  }

  HostEntry entry(int i) const {
    return handle_ ? reinterpret_cast<HostEntry>(dlsym(handle_, fmt::format("host_entry_{}", i).c_str())) : nullptr;
  }

 private:
  struct Entry {
    GpuKernel k;
    std::vector<DType> in_types, out_types;
  };
  struct Dir {
    std::filesystem::path path;
    bool keep = false;
    Dir() {
      char tmpl[] = "/tmp/pipec_cuda_host_XXXXXX";
      path = mkdtemp(tmpl);
    }
    ~Dir() {
      std::error_code ec;
      if (!keep) std::filesystem::remove_all(path, ec);
    }
  };
  static std::string read_all(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::vector<Entry> kernels_;
  Dir dir_;
  void* handle_ = nullptr;
};

/// A map stage to check: its body, its input element and a generated kernel.
struct HostCase {
  std::string what;  // for messages: "examples/chess/chess.pipe stage #2"
  std::shared_ptr<ExprFunction> fn;
  std::vector<Field> input;  // the input element's fields
  std::shared_ptr<GpuKernel> kernel;
  int index = -1;  // in HostKernels
};

/// The kernel's input and output dtypes (its params' and results' dtypes).
inline std::pair<std::vector<DType>, std::vector<DType>> kernel_dtypes(const ExprFunction& fn, const GpuKernel& k,
                                                                       const std::vector<Field>& input) {
  std::vector<DType> ins, outs;
  std::vector<std::string> names;
  for (const Field& f : input) names.push_back(f.name);
  // Input k reads field input_fields[k] through a param of that field: its dtype is the param's.
  for (int fi : k.input_fields) {
    DType dt = input.at(static_cast<size_t>(fi)).type->dtype;
    for (const Instr& in : fn.body)
      if (in.op == OpKind::Param) {
        const Value* f = find_attr(in, "field");
        if ((f && f->s == names[static_cast<size_t>(fi)]) || names.size() == 1) dt = in.type.dtype;
      }
    ins.push_back(dt);
  }
  for (const auto& [name, id] : fn.results) outs.push_back(fn.body.at(static_cast<size_t>(id)).type.dtype);
  return {ins, outs};
}

/// Random rows for `input` (edge values mixed in, as random_tensor makes them); a field whose param
/// reads it as u8 (a fixed-length `bytes` field) gets random bytes of the param's length.
inline Chunk random_chunk(const ExprFunction& fn, const std::vector<Field>& input, int64_t rows, std::mt19937_64& rng) {
  Chunk in;
  in.rows = rows;
  for (size_t i = 0; i < input.size(); ++i) {
    const Type& t = *input[i].type;
    const Instr* param = nullptr;
    for (const Instr& p : fn.body)
      if (p.op == OpKind::Param) {
        const Value* f = find_attr(p, "field");
        if ((f && f->s == input[i].name) || input.size() == 1) param = &p;
      }
    const Type& use = param && param->type.fully_known() ? param->type : t;
    Column c;
    if (t.dtype == DType::Bytes) {
      const int64_t n = use.dtype == DType::U8 && use.rank() == 1 ? use.shape[0] : 4;
      std::vector<std::string> strings;
      for (int64_t r = 0; r < rows; ++r) {
        std::string s(static_cast<size_t>(n), '\0');
        for (char& ch : s) ch = static_cast<char>(rng());
        strings.push_back(s);
      }
      c.dense = Tensor::from_strings(strings, {rows});
    } else {
      std::vector<int64_t> shape{rows};
      for (int64_t d : use.shape) shape.push_back(d < 0 ? 3 : d);
      c.dense = random_tensor(t.dtype, shape, rng);
    }
    in.columns.push_back(c);
  }
  return in;
}

/// Runs the interpreter and host kernel `e` on `in` and compares every result bit for bit.
inline ::testing::AssertionResult host_kernel_matches(const HostCase& c, HostEntry e, const Chunk& in, uint64_t seed) {
  std::vector<std::string> names;
  for (const Field& f : c.input) names.push_back(f.name);
  EvalContext ctx;
  ctx.seed = seed;
  std::vector<Column> want;
  try {
    want = run_function(*c.fn, names, in, ctx);
  } catch (const std::exception& ex) {
    return ::testing::AssertionFailure() << c.what << ": the interpreter failed: " << ex.what();
  }
  if (!e) return ::testing::AssertionFailure() << c.what << ": no host entry";
  std::vector<Tensor> keep;
  std::vector<void*> ins, outs;
  for (int fi : c.kernel->input_fields) {
    const Tensor& t = in.columns.at(static_cast<size_t>(fi)).dense;
    if (t.dtype() == DType::Bytes) {  // as the runtime passes a bytes[N] field: dense u8 rows
      const int64_t n = in.rows ? static_cast<int64_t>(t.str(0).size()) : 0;
      Tensor u8 = Tensor::empty(DType::U8, {in.rows, n});
      for (int64_t r = 0; r < in.rows; ++r)
        if (n) std::memcpy(u8.data<uint8_t>() + r * n, t.str(r).data(), static_cast<size_t>(n));
      keep.push_back(u8);
      ins.push_back(u8.raw());
    } else {
      ins.push_back(const_cast<uint8_t*>(t.raw()));
    }
  }
  std::vector<Tensor> got;
  for (const Column& w : want) {
    if (w.ragged) return ::testing::AssertionFailure() << c.what << ": a ragged result";
    got.push_back(Tensor::empty(w.dense.dtype(), w.dense.shape()));
  }
  for (Tensor& g : got) outs.push_back(g.raw());
  e(ins.data(), outs.data(), in.rows, in.first_index, in.epoch, seed);
  for (size_t j = 0; j < got.size(); ++j) {
    auto r = same_bits(want[j].dense, got[j], c.what + " result `" + c.fn->results[j].first + "`");
    if (!r) return r;
  }
  return ::testing::AssertionSuccess();
}

/// NVRTC for the tests: null with a test failure when it is missing, unless PIPEC_ALLOW_NO_NVRTC=1.
inline const gpu::Nvrtc* nvrtc_or_fail() {
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

/// NVRTC's log with the source line each message points at ("kernels.cu(12): ...") after it.
inline std::string log_with_lines(const std::string& log, const std::string& source) {
  std::vector<std::string> lines;
  std::stringstream ss(source);
  for (std::string l; std::getline(ss, l);) lines.push_back(l);
  std::string out;
  std::stringstream ls(log);
  for (std::string l; std::getline(ls, l);) {
    out += l + "\n";
    const size_t open = l.find(".cu(");
    if (open == std::string::npos) continue;
    const size_t n = std::strtoul(l.c_str() + open + 4, nullptr, 10);
    if (n >= 1 && n <= lines.size()) out += "    > " + lines[n - 1] + "\n";
  }
  return out;
}

/// NVRTC compiles `source` to PTX for sm_80 and sm_90 (or `archs`) with the runtime's options, with every entry.
inline void expect_nvrtc_compiles(const gpu::Nvrtc& nvrtc, const std::string& source,
                                  const std::vector<std::string>& entries, const std::string& what,
                                  const std::vector<int>& archs = {80, 90}) {
  for (int arch : archs) {
    gpu::PtxResult r = nvrtc.compile(source, "kernels.cu", arch, gpu::exact_math_options());
    EXPECT_TRUE(r.ok) << what << " for sm_" << arch << ":\n" << log_with_lines(r.log, source);
    if (!r.ok) continue;
    EXPECT_EQ(r.log.find("warning"), std::string::npos) << what << " for sm_" << arch << ":\n"
                                                        << log_with_lines(r.log, source);
    EXPECT_NE(r.ptx.find(fmt::format(".target sm_{}", arch)), std::string::npos) << what;
    for (const std::string& e : entries) EXPECT_NE(r.ptx.find(".entry " + e), std::string::npos) << what << ": " << e;
  }
}

}  // namespace pipec::testing
