#include "compiler/codegen/llvm/jit.h"

#include <chrono>
#include <functional>
#include <memory>

#include <fmt/format.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/Mangling.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/codegen/llvm/emit_kernel.h"
#include "compiler/codegen/llvm/emit_optimizer.h"
#include "compiler/codegen/llvm/host_compiler.h"
#include "compiler/codegen/llvm/kernel_cache.h"
#include "compiler/codegen/loop_nest.h"
#include "compiler/codegen/stage_kernel.h"
#include "runtime/model/bf16_storage.h"

namespace pipec::codegen {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::string module_ir(llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return os.str();
}

// True when `object` parses as an object file defining `symbol`: a cached file that passed its
// checksum but was written for something else must not reach the linker.
bool object_defines(const std::string& object, const std::string& symbol) {
  auto buf = llvm::MemoryBuffer::getMemBuffer(object, "kernel", false);
  auto obj = llvm::object::ObjectFile::createObjectFile(buf->getMemBufferRef());
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return false;
  }
  for (const auto& sym : (*obj)->symbols()) {
    auto name = sym.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (*name == symbol) return true;
  }
  return false;
}

std::string error_text(llvm::Error e) { return llvm::toString(std::move(e)); }

}  // namespace

std::string StageJitStatus::where() const {
  std::string s = fmt::format("stage {}", stage);
  for (auto it = within.rbegin(); it != within.rend(); ++it) s += fmt::format(" of flat_map {}'s pipeline", *it);
  return s;
}

std::string JitReport::summary() const {
  auto plural = [](int n) { return n == 1 ? "kernel" : "kernels"; };
  std::string s;
  if (compiled) s = fmt::format("compiled {} {} in {:.0f} ms", compiled, plural(compiled), compile_ms);
  if (cached) s += fmt::format("{}{} {} from cache", s.empty() ? "" : ", ", cached, plural(cached));
  if (s.empty()) {
    s = "no kernels";
    for (const StageJitStatus& st : stages)
      if (!st.native) {
        s += fmt::format(" ({}: {})", st.where(), st.why_not);
        break;
      }
  }
  return s;
}

namespace {

// One LLJIT session and the host's target machine, made on the first kernel: compiles a loop nest (or
// loads its object from the disk cache) and links it in. The kernels it returns own the session.
class KernelLinker {
 public:
  explicit KernelLinker(const JitOptions& opts)
      : opts_(opts), dir_(opts.cache_dir.empty() ? default_cache_dir() : opts.cache_dir) {}

  /// The kernel of `nest` as `symbol`; fills st's from_cache and compile_ms. Throws
  /// std::runtime_error when LLVM or the linker fail.
  std::shared_ptr<NativeKernel> add(const LoopNest& nest, const std::string& symbol, StageJitStatus& st,
                                    Clock::time_point t0) {
    auto k = add_module(
        symbol, [&](llvm::Module& m) { emit_kernel(nest, m, symbol); }, st, t0);
    k->input_fields = kernel_input_fields(nest);
    return k;
  }

  /// The function `symbol` that `emit` adds to an empty module, compiled (or from the cache) and linked.
  std::shared_ptr<NativeKernel> add_module(const std::string& symbol, const std::function<void(llvm::Module&)>& emit,
                                           StageJitStatus& st, Clock::time_point t0) {
    if (!tm_) tm_ = host_target_machine();
    if (!jit_) {
      auto j = llvm::orc::LLJITBuilder().create();
      if (!j) throw std::runtime_error("LLJIT: " + error_text(j.takeError()));
      jit_ = std::shared_ptr<llvm::orc::LLJIT>(std::move(*j));
      llvm::orc::SymbolMap syms;
      for (const auto& [name, addr] : kernel_runtime_symbols())
        syms[jit_->mangleAndIntern(name)] =
            llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(addr), llvm::JITSymbolFlags::Exported);
      if (auto e = jit_->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(syms))))
        throw std::runtime_error("LLJIT: " + error_text(std::move(e)));
    }
    llvm::LLVMContext ctx;
    auto m = std::make_unique<llvm::Module>(symbol, ctx);
    emit(*m);
    const std::string key = kernel_cache_key(module_ir(*m), target_description(*tm_));
    std::optional<std::string> object;
    if (opts_.use_cache) {
      object = cache_load(dir_, key);
      if (object && !object_defines(*object, symbol)) object.reset();
    }
    if (object) {
      st.from_cache = true;
    } else {
      const auto c0 = Clock::now();
      object = compile_to_object(*m, *tm_);
      st.compile_ms = ms_since(c0);
      if (opts_.use_cache) cache_store(dir_, key, *object);
    }
    if (auto e = jit_->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(*object, symbol)))
      throw std::runtime_error("LLJIT: " + error_text(std::move(e)));
    auto addr = jit_->lookup(symbol);
    if (!addr) throw std::runtime_error("LLJIT: " + error_text(addr.takeError()));
    auto k = std::make_shared<NativeKernel>();
    k->fn = reinterpret_cast<PipecKernelFn>(static_cast<uintptr_t>(addr->getAddress()));
    k->symbol = symbol;
    k->backend = "llvm-jit";
    k->compile_ms = st.from_cache ? 0 : ms_since(t0);
    k->keep_alive = jit_;
    return k;
  }

 private:
  JitOptions opts_;
  std::string dir_;
  std::unique_ptr<llvm::TargetMachine> tm_;
  std::shared_ptr<llvm::orc::LLJIT> jit_;
};

}  // namespace

namespace {

// attach_native_kernels on `plan`, the inner pipeline of the flat_maps `within` (none: the run's plan).
void attach_plan_kernels(Plan& plan, std::vector<int>& within, KernelLinker& linker, JitReport& report) {
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    if (plan.stages[i].inner) {
      Plan inner = *plan.stages[i].inner;  // the plan may share it with others (a copy of the run's)
      within.push_back(static_cast<int>(i));
      attach_plan_kernels(inner, within, linker, report);
      within.pop_back();
      plan.stages[i].inner = std::make_shared<const Plan>(std::move(inner));
    }
    const Stage& s = plan.stages[i];
    if (!has_element_kernel(s)) continue;
    StageJitStatus st;
    st.stage = static_cast<int>(i);
    st.within = within;
    const auto t0 = Clock::now();
    LoopNest nest;
    if (!stage_loop_nest(plan, st.stage, nest, st.why_not)) {
      report.stages.push_back(st);
      continue;
    }
    try {
      plan.stages[i].native = linker.add(nest, kernel_symbol(within, st.stage), st, t0);
      st.native = true;
      (st.from_cache ? report.cached : report.compiled)++;
    } catch (const std::exception& e) {
      st.why_not = e.what();
    }
    report.stages.push_back(st);
  }
}

}  // namespace

JitReport attach_native_kernels(Plan& plan, const JitOptions& opts) {
  const auto start = Clock::now();
  JitReport report;
  KernelLinker linker(opts);
  std::vector<int> within;
  attach_plan_kernels(plan, within, linker, report);
  report.compile_ms = ms_since(start);
  return report;
}

namespace {

// mixed_bf16: every expr kernel that reads or writes a value the fast executor stores as bf16 on bf16
// kernels (runtime/model/bf16_storage.h, decided from the kernels just attached) gets a second kernel
// that loads those inputs as bf16 and stores those outputs as bf16. Not for a kernel with per-row checks
// (it could fail, and the interpreter that would then run the node reads f32); the executor then keeps
// every value in f32. The f32 kernel stays for the emulation and CPUs without bf16 instructions.
void attach_bf16_storage_variants(ModelGraph& graph, std::vector<LoopNest>& nests, KernelLinker& linker) {
  const std::vector<bool> bf16 = plan_bf16_storage(graph);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    GraphNode& n = graph.nodes[i];
    if (n.op != ModelOp::Expr || !n.native || !nests[i].checks.empty()) continue;
    LoopNest nest = nests[i];
    bool any = false;
    auto variant = std::make_shared<NativeKernel>();
    for (LoopInput& in : nest.inputs) {
      const int v = n.inputs.at(static_cast<size_t>(in.field_index));
      in.bf16_storage = in.dtype == DType::F32 && bf16[v];
      any |= in.bf16_storage;
      variant->bf16_inputs.push_back(in.bf16_storage);
    }
    for (size_t j = 0; j < nest.outputs.size(); ++j) {
      LoopOutput& o = nest.outputs[j];
      o.bf16_storage = o.dtype == DType::F32 && bf16[n.outputs.at(j)];
      any |= o.bf16_storage;
      variant->bf16_outputs.push_back(o.bf16_storage);
    }
    if (!any) continue;
    StageJitStatus st;
    try {
      std::shared_ptr<NativeKernel> k =
          linker.add(nest, fmt::format("pipec_step_{}_node_{}_bf16", graph.name, i), st, Clock::now());
      k->bf16_inputs = std::move(variant->bf16_inputs);
      k->bf16_outputs = std::move(variant->bf16_outputs);
      auto with = std::make_shared<NativeKernel>(*n.native);
      with->bf16_storage = std::move(k);
      n.native = std::move(with);
    } catch (const std::exception&) {
      // No variant: the executor keeps the step's values in f32.
    }
  }
}

}  // namespace

JitReport attach_step_kernels(ModelGraph& graph, const JitOptions& opts) {
  const auto start = Clock::now();
  JitReport report;
  KernelLinker linker(opts);
  std::vector<LoopNest> nests(graph.nodes.size());  // per expr node with a kernel: its loop nest
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    GraphNode& n = graph.nodes[i];
    if (n.op == ModelOp::OptimizerStep) {
      // The update over the flat buffers: one generated loop (emit_optimizer.h).
      StageJitStatus st;
      st.stage = static_cast<int>(i);
      const OptimizerConfig config = OptimizerConfig::from_node(n);
      const std::string symbol = fmt::format("pipec_step_{}_optimizer_{}", graph.name, i);
      try {
        n.native = linker.add_module(
            symbol, [&](llvm::Module& m) { emit_optimizer_kernel(config, m, symbol); }, st, Clock::now());
        st.native = true;
        (st.from_cache ? report.cached : report.compiled)++;
      } catch (const std::exception& e) {
        st.why_not = e.what();
      }
      report.stages.push_back(st);
      continue;
    }
    if (n.op != ModelOp::Expr || !n.fn) continue;
    StageJitStatus st;
    st.stage = static_cast<int>(i);
    const auto t0 = Clock::now();
    // The executors hold f32 values, and a random op would be keyed by the interpreter's context,
    // not a row's element index: such nodes stay on the interpreter.
    std::vector<std::string> fields;
    for (const Instr& in : n.fn->body) {
      if (op_has(in.op, OpFlag::Input)) {
        fields.push_back(in.attrs.at("field").s);
        if (in.type.dtype != DType::F32) st.why_not = "an input other than f32";
      }
      if (op_has(in.op, OpFlag::Random)) st.why_not = "a random op";
    }
    for (const auto& [name, id] : n.fn->results)
      if (n.fn->body.at(static_cast<size_t>(id)).type.dtype != DType::F32) st.why_not = "a result other than f32";
    LoopNest nest;
    if (!st.why_not.empty() || !lower_to_loop_nest(*n.fn, fields, nest, st.why_not)) {
      report.stages.push_back(st);
      continue;
    }
    try {
      n.native = linker.add(nest, fmt::format("pipec_step_{}_node_{}", graph.name, i), st, t0);
      st.native = true;
      (st.from_cache ? report.cached : report.compiled)++;
      nests[i] = std::move(nest);
    } catch (const std::exception& e) {
      st.why_not = e.what();
    }
    report.stages.push_back(st);
  }
  attach_bf16_storage_variants(graph, nests, linker);
  report.compile_ms = ms_since(start);
  return report;
}

namespace {

void append_llvm_ir(const Plan& plan, std::vector<int>& within, std::string& out) {
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    if (plan.stages[i].inner) {
      within.push_back(static_cast<int>(i));
      append_llvm_ir(*plan.stages[i].inner, within, out);
      within.pop_back();
    }
    LoopNest nest;
    std::string why;
    if (!stage_loop_nest(plan, static_cast<int>(i), nest, why)) continue;
    llvm::LLVMContext ctx;
    const std::string symbol = kernel_symbol(within, static_cast<int>(i));
    llvm::Module m(symbol, ctx);
    emit_kernel(nest, m, symbol);
    out += module_ir(m);
  }
}

}  // namespace

std::string kernels_llvm_ir(const Plan& plan) {
  std::string out;
  std::vector<int> within;
  append_llvm_ir(plan, within, out);
  return out;
}

}  // namespace pipec::codegen
