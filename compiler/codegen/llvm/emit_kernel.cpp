#include "compiler/codegen/llvm/emit_kernel.h"

#include <functional>
#include <set>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include "runtime/ops/native_random.h"
#include "runtime/plan/native_kernel.h"

namespace pipec::codegen {

namespace {

using llvm::IRBuilder;
using llvm::Value;

bool is_signed(DType t) { return is_signed_int(t); }

class KernelEmitter {
 public:
  KernelEmitter(const LoopNest& nest, llvm::Module& m) : nest_(nest), m_(m), ctx_(m.getContext()), b_(ctx_) {}

  llvm::Function* emit(const std::string& symbol) {
    auto* i64 = b_.getInt64Ty();
    auto* i8p = b_.getInt8PtrTy();
    // The body: (in0.., out0.., rows, first_index, epoch, seed) with noalias buffers.
    std::vector<llvm::Type*> params;
    for (size_t i = 0; i < nest_.inputs.size() + nest_.outputs.size(); ++i) params.push_back(i8p);
    for (int i = 0; i < 4; ++i) params.push_back(i64);
    auto* body_ty = llvm::FunctionType::get(b_.getInt32Ty(), params, false);
    auto* body = llvm::Function::Create(body_ty, llvm::Function::InternalLinkage, symbol + ".body", m_);
    body->addFnAttr(llvm::Attribute::NoInline);
    body->addFnAttr(llvm::Attribute::NoUnwind);
    for (size_t i = 0; i < nest_.inputs.size() + nest_.outputs.size(); ++i) {
      body->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);
      if (i < nest_.inputs.size()) body->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::ReadOnly);
    }
    emit_body(body);
    return emit_kernel_entry(m_, symbol, body, [&](const KernelEntryArgs& a) {
      std::vector<Value*> call_args;
      for (size_t i = 0; i < nest_.inputs.size(); ++i) call_args.push_back(a.input(static_cast<int>(i)));
      for (size_t i = 0; i < nest_.outputs.size(); ++i) call_args.push_back(a.output(static_cast<int>(i)));
      for (Value* field : {a.rows, a.first_index, a.epoch, a.seed}) call_args.push_back(field);
      return call_args;
    });
  }

 private:
  llvm::Type* ty(DType t) {
    switch (t) {
      case DType::Bool: return b_.getInt1Ty();
      case DType::U8:
      case DType::I8: return b_.getInt8Ty();
      case DType::U16:
      case DType::I16: return b_.getInt16Ty();
      case DType::U32:
      case DType::I32: return b_.getInt32Ty();
      case DType::U64:
      case DType::I64: return b_.getInt64Ty();
      case DType::F32: return b_.getFloatTy();
      case DType::F64: return b_.getDoubleTy();
      // A loop nest holds a 16-bit value only between the two casts of a rounding (loop_nest.h): the
      // f32 it represents.
      case DType::F16:
      case DType::BF16: return b_.getFloatTy();
      default: throw std::logic_error("codegen: unsupported dtype");
    }
  }
  // How a dtype is stored in memory (bool: one byte 0/1).
  llvm::Type* mem_ty(DType t) { return t == DType::Bool ? b_.getInt8Ty() : ty(t); }
  llvm::Type* mem_ty(const LoopInput& in) { return in.bf16_storage ? b_.getInt16Ty() : mem_ty(in.dtype); }
  llvm::Type* mem_ty(const LoopOutput& o) { return o.bf16_storage ? b_.getInt16Ty() : mem_ty(o.dtype); }
  // bf16 bits -> the f32 they are (a 16-bit shift), and an f32 whose low 16 bits are zero -> its bf16 bits.
  Value* widen_bf16(Value* bits) {
    return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(bits, b_.getInt32Ty()), 16), b_.getFloatTy());
  }
  Value* narrow_bf16(Value* f) {
    return b_.CreateTrunc(b_.CreateLShr(b_.CreateBitCast(f, b_.getInt32Ty()), 16), b_.getInt16Ty());
  }

  void emit_body(llvm::Function* f) {
    entry_ = llvm::BasicBlock::Create(ctx_, "entry", f);
    b_.SetInsertPoint(entry_);
    const size_t ni = nest_.inputs.size(), no = nest_.outputs.size();
    for (size_t i = 0; i < ni; ++i)
      in_ptr_.push_back(b_.CreateBitCast(f->getArg(static_cast<unsigned>(i)), mem_ty(nest_.inputs[i])->getPointerTo()));
    rows_ = f->getArg(static_cast<unsigned>(ni + no));
    first_index_ = f->getArg(static_cast<unsigned>(ni + no + 1));
    epoch_ = f->getArg(static_cast<unsigned>(ni + no + 2));
    run_seed_ = f->getArg(static_cast<unsigned>(ni + no + 3));
    // Per-row scratch for the draws of each random op, on the stack (sizes are bounded by the lowering).
    for (const RandomDraws& r : nest_.randoms)
      random_buf_.push_back(b_.CreateAlloca(mem_ty(r.dtype), b_.getInt64(r.count)));
    for (const ConstTable& t : nest_.tables) tables_.push_back(table_global(t));
    emit_checks();
    for (size_t j = 0; j < no; ++j) {
      const LoopOutput& o = nest_.outputs[j];
      Value* out = b_.CreateBitCast(f->getArg(static_cast<unsigned>(ni + j)), mem_ty(o)->getPointerTo());
      emit_output(o, out);
    }
    b_.CreateRet(b_.getInt32(0));
  }

  llvm::GlobalVariable* table_global(const ConstTable& t) {
    llvm::Constant* data;
    const uint8_t* p = t.bytes.data();
    auto n = static_cast<size_t>(t.count);
    switch (t.dtype) {
      case DType::Bool:
      case DType::U8:
      case DType::I8: data = llvm::ConstantDataArray::get(ctx_, llvm::ArrayRef<uint8_t>(p, n)); break;
      case DType::U16:
      case DType::I16:
        data = llvm::ConstantDataArray::get(ctx_, llvm::ArrayRef<uint16_t>(reinterpret_cast<const uint16_t*>(p), n));
        break;
      case DType::U32:
      case DType::I32:
        data = llvm::ConstantDataArray::get(ctx_, llvm::ArrayRef<uint32_t>(reinterpret_cast<const uint32_t*>(p), n));
        break;
      case DType::U64:
      case DType::I64:
        data = llvm::ConstantDataArray::get(ctx_, llvm::ArrayRef<uint64_t>(reinterpret_cast<const uint64_t*>(p), n));
        break;
      case DType::F32:
        data = llvm::ConstantDataArray::get(ctx_, llvm::ArrayRef<float>(reinterpret_cast<const float*>(p), n));
        break;
      case DType::F64:
        data = llvm::ConstantDataArray::get(ctx_, llvm::ArrayRef<double>(reinterpret_cast<const double*>(p), n));
        break;
      default: throw std::logic_error("codegen: unsupported table dtype");
    }
    auto* g = new llvm::GlobalVariable(m_, data->getType(), true, llvm::GlobalValue::PrivateLinkage, data, "table");
    g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    return g;
  }

  // A counted loop [0, n): calls body(index) in the loop; leaves the builder after the loop.
  template <class F>
  void loop(Value* n, F&& body) {
    llvm::Function* f = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(ctx_, "loop", f);
    auto* bodyb = llvm::BasicBlock::Create(ctx_, "body", f);
    auto* exit = llvm::BasicBlock::Create(ctx_, "exit", f);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2);
    i->addIncoming(b_.getInt64(0), pre);
    b_.CreateCondBr(b_.CreateICmpSLT(i, n), bodyb, exit);
    b_.SetInsertPoint(bodyb);
    body(i);
    Value* next = b_.CreateAdd(i, b_.getInt64(1), "", true, true);
    i->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
  }

  void emit_output(const LoopOutput& o, Value* out) {
    std::vector<Value*> vars(static_cast<size_t>(std::max<int>(o.num_vars, static_cast<int>(o.shape.size()) + 1)));
    std::function<void(size_t, Value*)> level = [&](size_t d, Value* flat) {
      if (d == o.shape.size()) {
        std::vector<Value*> vals(o.nodes.size(), nullptr);
        Value* v = node(o, o.root, vals, vars);
        if (o.dtype == DType::Bool) v = b_.CreateZExt(v, b_.getInt8Ty());
        if (o.bf16_storage) v = narrow_bf16(v);
        b_.CreateStore(v, b_.CreateGEP(mem_ty(o), out, flat));
        return;
      }
      loop(b_.getInt64(o.shape[d]), [&](Value* i) {
        vars[d + 1] = i;
        level(d + 1, b_.CreateAdd(b_.CreateMul(flat, b_.getInt64(o.shape[d]), "", true, true), i, "", true, true));
      });
    };
    const std::set<int> randoms = randoms_of(o);
    loop(rows_, [&](Value* row) {
      vars[0] = row;
      for (int r : randoms) fill_random(r, row);
      level(0, row);
    });
  }

  static std::set<int> randoms_of(const LoopOutput& o) {
    std::set<int> randoms;
    for (const Node& n : o.nodes)
      if (n.kind == NodeKind::Random) randoms.insert(n.random);
    return randoms;
  }

  // Every check of every row, before any output is written: the first that fails returns
  // kPipecKernelIndexOutOfRange (the interpreter then runs the chunk and reports it). The index is a
  // per-row scalar, so this loop is short next to the outputs' loops.
  void emit_checks() {
    if (nest_.checks.empty()) return;
    loop(rows_, [&](Value* row) {
      for (const LoopOutput& c : nest_.checks) {
        std::vector<Value*> vars(static_cast<size_t>(std::max(c.num_vars, 1)));
        vars[0] = row;
        for (int r : randoms_of(c)) fill_random(r, row);
        std::vector<Value*> vals(c.nodes.size(), nullptr);
        Value* ok = node(c, c.root, vals, vars);
        llvm::Function* f = b_.GetInsertBlock()->getParent();
        auto* fail = llvm::BasicBlock::Create(ctx_, "index_out_of_range", f);
        auto* next = llvm::BasicBlock::Create(ctx_, "index_ok", f);
        b_.CreateCondBr(ok, next, fail);
        b_.SetInsertPoint(fail);
        b_.CreateRet(b_.getInt32(kPipecKernelIndexOutOfRange));
        b_.SetInsertPoint(next);
      }
    });
  }

  // Calls pipec_random_fill for random op `r` and row `row`; a nonzero result is returned at once.
  void fill_random(int r, Value* row) {
    const RandomDraws& d = nest_.randoms[r];
    auto* i64 = b_.getInt64Ty();
    auto* i32 = b_.getInt32Ty();
    auto callee = m_.getOrInsertFunction(
        "pipec_random_fill",
        llvm::FunctionType::get(i32, {i32, i64, i64, i64, i64, i64, i64, i64, b_.getInt8PtrTy()}, false));
    Value* seed = d.has_seed ? static_cast<Value*>(b_.getInt64(d.seed)) : run_seed_;
    Value* rc = b_.CreateCall(
        callee, {b_.getInt32(d.kind), seed, b_.getInt64(d.op_id), b_.CreateAdd(first_index_, row), epoch_,
                 b_.getInt64(d.count), b_.getInt64(static_cast<uint64_t>(d.lo)),
                 b_.getInt64(static_cast<uint64_t>(d.hi)), b_.CreateBitCast(random_buf_[r], b_.getInt8PtrTy())});
    llvm::Function* f = b_.GetInsertBlock()->getParent();
    auto* fail = llvm::BasicBlock::Create(ctx_, "random_failed", f);
    auto* ok = llvm::BasicBlock::Create(ctx_, "random_ok", f);
    b_.CreateCondBr(b_.CreateICmpNE(rc, b_.getInt32(0)), fail, ok);
    b_.SetInsertPoint(fail);
    b_.CreateRet(rc);
    b_.SetInsertPoint(ok);
  }

  llvm::Function* libm(const std::string& name, llvm::Type* t, int nargs) {
    std::vector<llvm::Type*> ps(static_cast<size_t>(nargs), t);
    auto callee = m_.getOrInsertFunction(name, llvm::FunctionType::get(t, ps, false));
    auto* f = llvm::cast<llvm::Function>(callee.getCallee());
    // The interpreter ignores errno, so the calls are pure for our purposes (lets LICM hoist them).
    f->addFnAttr(llvm::Attribute::ReadNone);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    f->addFnAttr(llvm::Attribute::WillReturn);
    return f;
  }
  // A libm call, marked `nobuiltin` so that LLVM treats it as an opaque pure function: its library-call
  // simplifier would otherwise rewrite calls it recognizes into other code that need not give libm's bits
  // (pow(x, 0.5) -> sqrt(x), pow(10, x) -> exp10(x), pow(x, 2) -> x * x), and LLVM 14 breaks a vectorized
  // pow(2.0, int-to-float(b)): it becomes ldexp(1.0, zext <8 x i1> b to i32), which is invalid IR and
  // aborts instruction selection ("Cannot select: zero_extend"). readnone still lets LICM hoist it.
  Value* call(const char* fname, const char* dname, DType t, std::vector<Value*> args) {
    llvm::CallInst* c =
        b_.CreateCall(libm(t == DType::F32 ? fname : dname, ty(t), static_cast<int>(args.size())), args);
    c->addFnAttr(llvm::Attribute::NoBuiltin);
    return c;
  }
  Value* intrinsic(llvm::Intrinsic::ID id, DType t, std::vector<Value*> args) {
    return b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, id, {ty(t)}), args);
  }
  Value* fconst(DType t, double v) { return llvm::ConstantFP::get(ty(t), v); }
  Value* iconst(DType t, int64_t v) { return llvm::ConstantInt::get(ty(t), static_cast<uint64_t>(v), is_signed(t)); }

  // A Reduce node: a sequential loop carrying the accumulator. Values computed inside the loop are
  // forgotten afterwards (they do not dominate the code after it).
  Value* reduce(const LoopOutput& o, const Node& n, std::vector<Value*>& vals, std::vector<Value*>& vars) {
    const DType acc_t = n.dtype, xt = n.arg_dtype;
    const bool f = is_float(acc_t);
    Value* init;
    if (n.reduce_op == ReduceOp::Sum) init = f ? fconst(acc_t, 0) : iconst(acc_t, 0);
    else if (n.reduce_op == ReduceOp::Prod) init = f ? fconst(acc_t, 1) : iconst(acc_t, 1);
    else {
      const bool mx = n.reduce_op == ReduceOp::Max;
      if (f) init = fconst(acc_t, mx ? -INFINITY : INFINITY);
      else if (acc_t == DType::Bool) init = b_.getInt1(!mx);
      else {
        const unsigned bits = ty(acc_t)->getIntegerBitWidth();
        llvm::APInt v = is_signed(acc_t)
                            ? (mx ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getSignedMaxValue(bits))
                            : (mx ? llvm::APInt::getMinValue(bits) : llvm::APInt::getMaxValue(bits));
        init = llvm::ConstantInt::get(ctx_, v);
      }
    }
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(ctx_, "reduce", fn);
    auto* body = llvm::BasicBlock::Create(ctx_, "reduce_body", fn);
    auto* exit = llvm::BasicBlock::Create(ctx_, "reduce_exit", fn);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* j = b_.CreatePHI(b_.getInt64Ty(), 2);
    llvm::PHINode* acc = b_.CreatePHI(ty(acc_t), 2);
    j->addIncoming(b_.getInt64(0), pre);
    acc->addIncoming(init, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(j, b_.getInt64(n.ival)), body, exit);
    b_.SetInsertPoint(body);
    std::vector<Value*> saved = vals;
    vars.at(static_cast<size_t>(n.var)) = j;
    Value* x = node(o, n.args[0], vals, vars);
    vals = saved;
    Value* next;
    if (n.reduce_op == ReduceOp::Sum || n.reduce_op == ReduceOp::Prod) {
      Value* v = cast(x, xt, acc_t);
      next = n.reduce_op == ReduceOp::Sum ? (f ? b_.CreateFAdd(acc, v) : b_.CreateAdd(acc, v))
                                          : (f ? b_.CreateFMul(acc, v) : b_.CreateMul(acc, v));
    } else {
      const bool mx = n.reduce_op == ReduceOp::Max;
      Value* better = f                  ? (mx ? b_.CreateFCmpOGT(x, acc) : b_.CreateFCmpOLT(x, acc))
                      : is_signed(acc_t) ? (mx ? b_.CreateICmpSGT(x, acc) : b_.CreateICmpSLT(x, acc))
                                         : (mx ? b_.CreateICmpUGT(x, acc) : b_.CreateICmpULT(x, acc));
      next = b_.CreateSelect(better, x, acc);
      if (f) {
        next = b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, next);        // a NaN takes over...
        next = b_.CreateSelect(b_.CreateFCmpUNO(acc, acc), acc, next);  // ...and sticks
      }
    }
    j->addIncoming(b_.CreateAdd(j, b_.getInt64(1), "", true, true), b_.GetInsertBlock());
    acc->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
    return acc;
  }

  Value* node(const LoopOutput& o, int id, std::vector<Value*>& vals, std::vector<Value*>& vars) {
    if (vals[id]) return vals[id];
    const Node& n = o.nodes[id];
    if (n.kind == NodeKind::Reduce) return vals[id] = reduce(o, n, vals, vars);
    std::vector<Value*> a;
    for (int x : n.args) a.push_back(node(o, x, vals, vars));
    Value* r = nullptr;
    switch (n.kind) {
      case NodeKind::Var: r = vars.at(static_cast<size_t>(n.var)); break;
      case NodeKind::Const: r = is_float(n.dtype) ? fconst(n.dtype, n.fval) : iconst(n.dtype, n.ival); break;
      case NodeKind::Load: {
        const LoopInput& in = nest_.inputs[n.input];
        Value* at = b_.CreateAdd(b_.CreateMul(vars[0], b_.getInt64(in.elems), "", true, true), a[0], "", true, true);
        r = b_.CreateLoad(mem_ty(in), b_.CreateGEP(mem_ty(in), in_ptr_[n.input], at));
        if (in.dtype == DType::Bool) r = b_.CreateICmpNE(r, b_.getInt8(0));
        if (in.bf16_storage) r = widen_bf16(r);
        break;
      }
      case NodeKind::Table: {
        llvm::GlobalVariable* g = tables_[n.table];
        Value* p = b_.CreateInBoundsGEP(g->getValueType(), g, {b_.getInt64(0), a[0]});
        r = b_.CreateLoad(mem_ty(n.dtype), p);
        if (n.dtype == DType::Bool) r = b_.CreateICmpNE(r, b_.getInt8(0));
        break;
      }
      case NodeKind::Index: r = index(n.index_op, a); break;
      case NodeKind::Op: r = op(n.op, n.arg_dtype, a); break;
      case NodeKind::Cast: r = cast(a[0], n.arg_dtype, n.dtype); break;
      case NodeKind::Select: r = b_.CreateSelect(a[0], a[1], a[2]); break;
      case NodeKind::Random:
        r = b_.CreateLoad(mem_ty(n.dtype), b_.CreateGEP(mem_ty(n.dtype), random_buf_[n.random], a[0]));
        break;
      case NodeKind::Reduce: break;  // handled above
    }
    vals[id] = r;
    return r;
  }

  Value* index(IndexOp op, const std::vector<Value*>& a) {
    switch (op) {
      case IndexOp::Add: return b_.CreateAdd(a[0], a[1]);
      case IndexOp::Sub: return b_.CreateSub(a[0], a[1]);
      case IndexOp::Mul: return b_.CreateMul(a[0], a[1]);
      case IndexOp::Div: return b_.CreateUDiv(a[0], a[1]);  // operands are non-negative
      case IndexOp::Mod: return b_.CreateURem(a[0], a[1]);
      case IndexOp::Min: return b_.CreateSelect(b_.CreateICmpSLT(a[0], a[1]), a[0], a[1]);
      case IndexOp::Max: return b_.CreateSelect(b_.CreateICmpSGT(a[0], a[1]), a[0], a[1]);
      case IndexOp::Lt: return b_.CreateZExt(b_.CreateICmpSLT(a[0], a[1]), b_.getInt64Ty());
      case IndexOp::Select: return b_.CreateSelect(b_.CreateICmpNE(a[0], b_.getInt64(0)), a[1], a[2]);
    }
    throw std::logic_error("codegen: unknown index op " + std::string(index_op_name(op)));
  }

  // Float -> integer with the interpreter's float_to_int: NaN -> 0, saturate, else truncate.
  template <class I, class F>
  Value* float_to_int(Value* x, DType fdt, DType idt) {
    constexpr F lo = static_cast<F>(std::numeric_limits<I>::min());
    constexpr F hi = static_cast<F>(std::numeric_limits<I>::max() / 2 + 1) * static_cast<F>(2);
    Value* t = is_signed(idt) ? b_.CreateFPToSI(x, ty(idt)) : b_.CreateFPToUI(x, ty(idt));
    t = b_.CreateFreeze(t);
    Value* r = b_.CreateSelect(b_.CreateFCmpOGT(x, fconst(fdt, static_cast<double>(lo - static_cast<F>(1)))), t,
                               iconst(idt, static_cast<int64_t>(std::numeric_limits<I>::min())));
    r = b_.CreateSelect(b_.CreateFCmpOGE(x, fconst(fdt, static_cast<double>(hi))),
                        iconst(idt, static_cast<int64_t>(std::numeric_limits<I>::max())), r);
    return b_.CreateSelect(b_.CreateFCmpUNO(x, x), iconst(idt, 0), r);
  }
  template <class F>
  Value* float_to(Value* x, DType fdt, DType to) {
    switch (to) {
      case DType::U8: return float_to_int<uint8_t, F>(x, fdt, to);
      case DType::I8: return float_to_int<int8_t, F>(x, fdt, to);
      case DType::U16: return float_to_int<uint16_t, F>(x, fdt, to);
      case DType::I16: return float_to_int<int16_t, F>(x, fdt, to);
      case DType::U32: return float_to_int<uint32_t, F>(x, fdt, to);
      case DType::I32: return float_to_int<int32_t, F>(x, fdt, to);
      case DType::U64: return float_to_int<uint64_t, F>(x, fdt, to);
      case DType::I64: return float_to_int<int64_t, F>(x, fdt, to);
      default: throw std::logic_error("codegen: bad float cast");
    }
  }

  Value* cast(Value* x, DType from, DType to) {
    if (from == to) return x;
    if (to == DType::BF16 || to == DType::F16 || from == DType::BF16 || from == DType::F16) {
      if (from == DType::F32) return to == DType::BF16 ? round_to_bf16(x) : round_to_f16(x);
      if (to == DType::F32) return x;  // carried as the f32 it represents
      throw std::logic_error("codegen: a 16-bit cast outside a rounding");
    }
    if (to == DType::Bool)
      return is_float(from) ? b_.CreateFCmpUNE(x, fconst(from, 0)) : b_.CreateICmpNE(x, iconst(from, 0));
    if (from == DType::Bool) return is_float(to) ? b_.CreateUIToFP(x, ty(to)) : b_.CreateZExt(x, ty(to));
    if (is_float(from) && is_float(to))
      return from == DType::F64 ? b_.CreateFPTrunc(x, ty(to)) : b_.CreateFPExt(x, ty(to));
    if (is_float(to)) return is_signed(from) ? b_.CreateSIToFP(x, ty(to)) : b_.CreateUIToFP(x, ty(to));
    if (is_float(from)) return from == DType::F32 ? float_to<float>(x, from, to) : float_to<double>(x, from, to);
    return is_signed(from) ? b_.CreateSExtOrTrunc(x, ty(to)) : b_.CreateZExtOrTrunc(x, ty(to));
  }

  // f32 -> bf16 -> f32 in integer arithmetic, bit for bit runtime/core/half.h's float_to_bf16_bits (and
  // runtime/train/math/round_16bit.cpp's vector loop): a NaN keeps its top 16 bits, made quiet; anything
  // else adds 0x7fff plus the lowest kept bit (to nearest, ties to even) and drops the low 16 bits. No
  // branch, so the loop around it still vectorizes.
  Value* round_to_bf16(Value* x) {
    llvm::Type* i32 = b_.getInt32Ty();
    Value* bits = b_.CreateBitCast(x, i32);
    Value* nan = b_.CreateICmpUGT(b_.CreateAnd(bits, b_.getInt32(0x7fffffffu)), b_.getInt32(0x7f800000u));
    Value* lowest_kept = b_.CreateAnd(b_.CreateLShr(bits, 16), b_.getInt32(1));
    Value* rounded =
        b_.CreateAnd(b_.CreateAdd(bits, b_.CreateAdd(lowest_kept, b_.getInt32(0x7fffu))), b_.getInt32(0xffff0000u));
    Value* quieted = b_.CreateOr(b_.CreateAnd(bits, b_.getInt32(0xffff0000u)), b_.getInt32(0x00400000u));
    return b_.CreateBitCast(b_.CreateSelect(nan, quieted, rounded), b_.getFloatTy());
  }
  // f32 -> f16 -> f32, bit for bit half.h's float_to_half_bits then half_bits_to_float, kept in f32:
  // in f16's normal range the same add-and-mask as bf16 on the low 13 bits (a carry moves into the
  // exponent, as in float_to_half_bits); from 65520 up infinity; a NaN keeps its top 10 significand bits,
  // made quiet; below 2^-14 (f16's subnormals) |x| + 0.5 - 0.5 in f32, which rounds |x| to a multiple of
  // 2^-24 to nearest even (the sum's ulp is 2^-24), with x's sign (zero keeps it).
  Value* round_to_f16(Value* x) {
    llvm::Type* i32 = b_.getInt32Ty();
    auto c = [&](uint32_t v) { return b_.getInt32(v); };
    Value* bits = b_.CreateBitCast(x, i32);
    Value* ax = b_.CreateAnd(bits, c(0x7fffffffu));
    Value* sign = b_.CreateAnd(bits, c(0x80000000u));
    Value* lowest_kept = b_.CreateAnd(b_.CreateLShr(bits, 13), c(1));
    Value* normal = b_.CreateAnd(b_.CreateAdd(bits, b_.CreateAdd(lowest_kept, c(0xfffu))), c(0xffffe000u));
    Value* infinity = b_.CreateOr(sign, c(0x7f800000u));
    Value* quiet_nan = b_.CreateOr(b_.CreateOr(sign, c(0x7fc00000u)), b_.CreateAnd(ax, c(0x007fe000u)));
    Value* fabs = b_.CreateBitCast(ax, b_.getFloatTy());
    Value* small = b_.CreateFSub(b_.CreateFAdd(fabs, fconst(DType::F32, 0.5)), fconst(DType::F32, 0.5));
    Value* subnormal = b_.CreateOr(b_.CreateBitCast(small, i32), sign);
    Value* r = b_.CreateSelect(b_.CreateICmpULT(ax, c(0x38800000u)), subnormal, normal);
    r = b_.CreateSelect(b_.CreateICmpUGE(ax, c(0x477ff000u)), infinity, r);
    r = b_.CreateSelect(b_.CreateICmpUGT(ax, c(0x7f800000u)), quiet_nan, r);
    return b_.CreateBitCast(r, b_.getFloatTy());
  }

  Value* fmod(DType t, Value* a, Value* b) { return call("fmodf", "fmod", t, {a, b}); }
  Value* copysign(DType t, Value* a, Value* b) { return intrinsic(llvm::Intrinsic::copysign, t, {a, b}); }

  // Integer floor division with the interpreter's edge cases (x // 0 = 0, MIN // -1 = MIN).
  Value* int_floordiv(DType t, Value* a, Value* b) {
    Value* zero = iconst(t, 0);
    Value* b0 = b_.CreateICmpEQ(b, zero);
    if (!is_signed(t)) return b_.CreateSelect(b0, zero, b_.CreateUDiv(a, b_.CreateSelect(b0, iconst(t, 1), b)));
    Value* bm1 = b_.CreateICmpEQ(b, iconst(t, -1));
    Value* safe = b_.CreateSelect(b_.CreateOr(b0, bm1), iconst(t, 1), b);
    Value* q = b_.CreateSDiv(a, safe);
    Value* rem = b_.CreateSRem(a, safe);
    Value* adjust = b_.CreateAnd(b_.CreateICmpNE(rem, zero),
                                 b_.CreateICmpNE(b_.CreateICmpSLT(rem, zero), b_.CreateICmpSLT(b, zero)));
    q = b_.CreateSelect(adjust, b_.CreateSub(q, iconst(t, 1)), q);
    q = b_.CreateSelect(bm1, b_.CreateSub(zero, a), q);
    return b_.CreateSelect(b0, zero, q);
  }
  Value* int_mod(DType t, Value* a, Value* b) {
    Value* zero = iconst(t, 0);
    Value* b0 = b_.CreateICmpEQ(b, zero);
    if (!is_signed(t)) return b_.CreateSelect(b0, zero, b_.CreateURem(a, b_.CreateSelect(b0, iconst(t, 1), b)));
    Value* bm1 = b_.CreateICmpEQ(b, iconst(t, -1));
    Value* safe = b_.CreateSelect(b_.CreateOr(b0, bm1), iconst(t, 1), b);
    Value* rem = b_.CreateSRem(a, safe);
    Value* adjust = b_.CreateAnd(b_.CreateICmpNE(rem, zero),
                                 b_.CreateICmpNE(b_.CreateICmpSLT(rem, zero), b_.CreateICmpSLT(b, zero)));
    rem = b_.CreateSelect(adjust, b_.CreateAdd(rem, b), rem);
    return b_.CreateSelect(b_.CreateOr(b0, bm1), zero, rem);
  }
  Value* float_mod(DType t, Value* a, Value* b) {
    Value* zero = fconst(t, 0);
    Value* m = fmod(t, a, b);
    Value* flip = b_.CreateICmpNE(b_.CreateFCmpOLT(b, zero), b_.CreateFCmpOLT(m, zero));
    Value* nonzero = b_.CreateSelect(flip, b_.CreateFAdd(m, b), m);
    Value* r = b_.CreateSelect(b_.CreateFCmpUNE(m, zero), nonzero, copysign(t, zero, b));
    return b_.CreateSelect(b_.CreateFCmpOEQ(b, zero), m, r);
  }
  Value* float_floordiv(DType t, Value* a, Value* b) {
    Value* zero = fconst(t, 0);
    Value* m = fmod(t, a, b);
    Value* div = b_.CreateFDiv(b_.CreateFSub(a, m), b);
    Value* flip =
        b_.CreateAnd(b_.CreateFCmpUNE(m, zero), b_.CreateICmpNE(b_.CreateFCmpOLT(b, zero), b_.CreateFCmpOLT(m, zero)));
    div = b_.CreateSelect(flip, b_.CreateFSub(div, fconst(t, 1)), div);
    Value* fl = intrinsic(llvm::Intrinsic::floor, t, {div});
    fl = b_.CreateSelect(b_.CreateFCmpOGT(b_.CreateFSub(div, fl), fconst(t, 0.5)), b_.CreateFAdd(fl, fconst(t, 1)), fl);
    Value* r = b_.CreateSelect(b_.CreateFCmpUNE(div, zero), fl, copysign(t, zero, b_.CreateFDiv(a, b)));
    return b_.CreateSelect(b_.CreateFCmpOEQ(b, zero), b_.CreateFDiv(a, b), r);
  }
  Value* int_pow(DType t, Value* a, Value* b) {
    const unsigned bits = ty(t)->getIntegerBitWidth();
    Value* result = iconst(t, 1);
    Value* base = a;
    for (unsigned k = 0; k < bits; ++k) {
      Value* bit = b_.CreateICmpNE(b_.CreateAnd(b, iconst(t, int64_t(1) << k)), iconst(t, 0));
      if (k + 1 == bits && bits == 64) bit = b_.CreateICmpSLT(b, iconst(t, 0));  // the top bit (1 << 63)
      result = b_.CreateSelect(bit, b_.CreateMul(result, base), result);
      base = b_.CreateMul(base, base);
    }
    if (!is_signed(t)) return result;
    // Negative exponents: 1 for a = 1, +-1 for a = -1, 0 otherwise.
    Value* odd = b_.CreateICmpNE(b_.CreateAnd(b, iconst(t, 1)), iconst(t, 0));
    Value* neg = b_.CreateSelect(b_.CreateICmpEQ(a, iconst(t, 1)), iconst(t, 1),
                                 b_.CreateSelect(b_.CreateICmpEQ(a, iconst(t, -1)),
                                                 b_.CreateSelect(odd, iconst(t, -1), iconst(t, 1)), iconst(t, 0)));
    return b_.CreateSelect(b_.CreateICmpSLT(b, iconst(t, 0)), neg, result);
  }

  Value* op(OpKind op, DType t, const std::vector<Value*>& a) {
    const bool f = is_float(t), s = is_signed(t);
    auto cmp = [&](llvm::CmpInst::Predicate fp, llvm::CmpInst::Predicate sp, llvm::CmpInst::Predicate up) {
      return b_.CreateCmp(f ? fp : s ? sp : up, a[0], a[1]);
    };
    using P = llvm::CmpInst;
    Value* x = a.empty() ? nullptr : a[0];
    // The element-wise ops (the only ones a NodeKind::Op carries); any other op is a loop-nest bug.
    switch (op) {
      case OpKind::Add: return f ? b_.CreateFAdd(a[0], a[1]) : b_.CreateAdd(a[0], a[1]);
      case OpKind::Sub: return f ? b_.CreateFSub(a[0], a[1]) : b_.CreateSub(a[0], a[1]);
      case OpKind::Mul: return f ? b_.CreateFMul(a[0], a[1]) : b_.CreateMul(a[0], a[1]);
      case OpKind::Div: return f ? b_.CreateFDiv(a[0], a[1]) : int_floordiv(t, a[0], a[1]);
      case OpKind::FloorDiv: return f ? float_floordiv(t, a[0], a[1]) : int_floordiv(t, a[0], a[1]);
      case OpKind::Mod: return f ? float_mod(t, a[0], a[1]) : int_mod(t, a[0], a[1]);
      case OpKind::Pow: return f ? call("powf", "pow", t, a) : int_pow(t, a[0], a[1]);
      case OpKind::Max:
      case OpKind::Min: {
        const bool mx = op == OpKind::Max;
        if (f) {
          Value* c = b_.CreateOr(mx ? b_.CreateFCmpOGT(a[0], a[1]) : b_.CreateFCmpOLT(a[0], a[1]),
                                 b_.CreateFCmpUNO(a[0], a[0]));
          return b_.CreateSelect(c, a[0], a[1]);
        }
        Value* c = mx ? cmp(P::FCMP_OGT, P::ICMP_SGT, P::ICMP_UGT) : cmp(P::FCMP_OLT, P::ICMP_SLT, P::ICMP_ULT);
        return b_.CreateSelect(c, a[0], a[1]);
      }
      case OpKind::Atan2: return call("atan2f", "atan2", t, a);
      case OpKind::BitAnd: return b_.CreateAnd(a[0], a[1]);
      case OpKind::BitOr: return b_.CreateOr(a[0], a[1]);
      case OpKind::BitXor: return b_.CreateXor(a[0], a[1]);
      case OpKind::Shl:
      case OpKind::Shr: {
        const int64_t bits = ty(t)->getIntegerBitWidth();
        Value* in_range =
            s ? b_.CreateAnd(b_.CreateICmpSGE(a[1], iconst(t, 0)), b_.CreateICmpSLT(a[1], iconst(t, bits)))
              : b_.CreateICmpULT(a[1], iconst(t, bits));
        Value* cnt = b_.CreateSelect(in_range, a[1], iconst(t, 0));
        if (op == OpKind::Shl) return b_.CreateSelect(in_range, b_.CreateShl(a[0], cnt), iconst(t, 0));
        Value* out =
            s ? b_.CreateSelect(b_.CreateICmpSLT(a[0], iconst(t, 0)), iconst(t, -1), iconst(t, 0)) : iconst(t, 0);
        return b_.CreateSelect(in_range, s ? b_.CreateAShr(a[0], cnt) : b_.CreateLShr(a[0], cnt), out);
      }
      case OpKind::Eq: return cmp(P::FCMP_OEQ, P::ICMP_EQ, P::ICMP_EQ);
      case OpKind::Ne: return cmp(P::FCMP_UNE, P::ICMP_NE, P::ICMP_NE);
      case OpKind::Lt: return cmp(P::FCMP_OLT, P::ICMP_SLT, P::ICMP_ULT);
      case OpKind::Le: return cmp(P::FCMP_OLE, P::ICMP_SLE, P::ICMP_ULE);
      case OpKind::Gt: return cmp(P::FCMP_OGT, P::ICMP_SGT, P::ICMP_UGT);
      case OpKind::Ge: return cmp(P::FCMP_OGE, P::ICMP_SGE, P::ICMP_UGE);
      case OpKind::And: return b_.CreateAnd(a[0], a[1]);
      case OpKind::Or: return b_.CreateOr(a[0], a[1]);
      case OpKind::Not: return b_.CreateNot(a[0]);
      case OpKind::Clip: {
        Value* v = b_.CreateSelect(f   ? b_.CreateFCmpOLT(a[0], a[1])
                                   : s ? b_.CreateICmpSLT(a[0], a[1])
                                       : b_.CreateICmpULT(a[0], a[1]),
                                   a[1], a[0]);
        return b_.CreateSelect(f   ? b_.CreateFCmpOGT(v, a[2])
                               : s ? b_.CreateICmpSGT(v, a[2])
                                   : b_.CreateICmpUGT(v, a[2]),
                               a[2], v);
      }
      case OpKind::Neg: return f ? b_.CreateFNeg(x) : b_.CreateSub(iconst(t, 0), x);
      case OpKind::BitNot: return b_.CreateNot(x);
      case OpKind::Abs:
        if (f) return intrinsic(llvm::Intrinsic::fabs, t, {x});
        return s ? b_.CreateSelect(b_.CreateICmpSLT(x, iconst(t, 0)), b_.CreateSub(iconst(t, 0), x), x) : x;
      case OpKind::Sign:
        if (f) {
          Value* r = b_.CreateSelect(b_.CreateFCmpOEQ(x, fconst(t, 0)), fconst(t, 0), x);
          r = b_.CreateSelect(b_.CreateFCmpOLT(x, fconst(t, 0)), fconst(t, -1), r);
          return b_.CreateSelect(b_.CreateFCmpOGT(x, fconst(t, 0)), fconst(t, 1), r);
        }
        if (s)
          return b_.CreateSub(b_.CreateZExt(b_.CreateICmpSGT(x, iconst(t, 0)), ty(t)),
                              b_.CreateZExt(b_.CreateICmpSLT(x, iconst(t, 0)), ty(t)));
        return b_.CreateZExt(b_.CreateICmpUGT(x, iconst(t, 0)), ty(t));
      case OpKind::Relu:
        if (f) return b_.CreateSelect(b_.CreateFCmpOLT(x, fconst(t, 0)), fconst(t, 0), x);
        return s ? b_.CreateSelect(b_.CreateICmpSLT(x, iconst(t, 0)), iconst(t, 0), x) : x;
      case OpKind::Square: return f ? b_.CreateFMul(x, x) : b_.CreateMul(x, x);
      case OpKind::Tanh: return call("tanhf", "tanh", t, {x});
      case OpKind::Exp: return call("expf", "exp", t, {x});
      case OpKind::Log: return call("logf", "log", t, {x});
      case OpKind::Log1p: return call("log1pf", "log1p", t, {x});
      case OpKind::Sin: return call("sinf", "sin", t, {x});
      case OpKind::Cos: return call("cosf", "cos", t, {x});
      case OpKind::Sqrt: return intrinsic(llvm::Intrinsic::sqrt, t, {x});
      case OpKind::Rsqrt: return b_.CreateFDiv(fconst(t, 1), intrinsic(llvm::Intrinsic::sqrt, t, {x}));
      case OpKind::Floor: return intrinsic(llvm::Intrinsic::floor, t, {x});
      case OpKind::Ceil: return intrinsic(llvm::Intrinsic::ceil, t, {x});
      case OpKind::Round: {
        Value* r = intrinsic(llvm::Intrinsic::floor, t, {x});
        Value* d = b_.CreateFSub(x, r);
        Value* odd = b_.CreateFCmpUNE(fmod(t, r, fconst(t, 2)), fconst(t, 0));
        Value* up =
            b_.CreateOr(b_.CreateFCmpOGT(d, fconst(t, 0.5)), b_.CreateAnd(b_.CreateFCmpOEQ(d, fconst(t, 0.5)), odd));
        r = b_.CreateSelect(up, b_.CreateFAdd(r, fconst(t, 1)), r);
        return b_.CreateSelect(b_.CreateFCmpOEQ(r, fconst(t, 0)), copysign(t, fconst(t, 0), x), r);
      }
      case OpKind::Sigmoid: {
        Value* pos =
            b_.CreateFDiv(fconst(t, 1), b_.CreateFAdd(fconst(t, 1), call("expf", "exp", t, {b_.CreateFNeg(x)})));
        Value* e = call("expf", "exp", t, {x});
        Value* neg = b_.CreateFDiv(e, b_.CreateFAdd(fconst(t, 1), e));
        return b_.CreateSelect(b_.CreateFCmpOGE(x, fconst(t, 0)), pos, neg);
      }
      default: break;  // not element-wise: the loop nests lower it to other nodes
    }
    throw std::logic_error("codegen: no element-wise code for op " + std::string(op_name(op)));
  }

  const LoopNest& nest_;
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  IRBuilder<> b_;
  std::vector<Value*> in_ptr_;
  std::vector<llvm::GlobalVariable*> tables_;
  Value* rows_ = nullptr;
  Value* first_index_ = nullptr;
  Value* epoch_ = nullptr;
  Value* run_seed_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  std::vector<Value*> random_buf_;
};

}  // namespace

llvm::Function* emit_kernel_entry(llvm::Module& module, const std::string& symbol, llvm::Function* body,
                                  const std::function<std::vector<llvm::Value*>(const KernelEntryArgs&)>& body_args) {
  llvm::LLVMContext& ctx = module.getContext();
  IRBuilder<> b(ctx);
  auto* i64 = b.getInt64Ty();
  auto* i8p = b.getInt8PtrTy();
  auto* i8pp = i8p->getPointerTo();
  // PipecKernelArgs {inputs, outputs, rows, first_index, epoch, seed}.
  auto* args_ty = llvm::StructType::get(ctx, {i8pp, i8pp, i64, i64, i64, i64});
  auto* fn_ty = llvm::FunctionType::get(b.getInt32Ty(), {args_ty->getPointerTo()}, false);
  auto* fn = llvm::Function::Create(fn_ty, llvm::Function::ExternalLinkage, symbol, module);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", fn));
  Value* a = fn->getArg(0);
  auto field = [&](unsigned k, llvm::Type* t) { return b.CreateLoad(t, b.CreateStructGEP(args_ty, a, k)); };
  Value* ins = field(0, i8pp);
  Value* outs = field(1, i8pp);
  KernelEntryArgs args;
  args.input = [&](int i) { return b.CreateLoad(i8p, b.CreateConstGEP1_64(i8p, ins, static_cast<uint64_t>(i))); };
  args.output = [&](int i) { return b.CreateLoad(i8p, b.CreateConstGEP1_64(i8p, outs, static_cast<uint64_t>(i))); };
  args.rows = field(2, i64);
  args.first_index = field(3, i64);
  args.epoch = field(4, i64);
  args.seed = field(5, i64);
  Value* result = b.CreateCall(body, body_args(args));
  b.CreateRet(body->getReturnType()->isVoidTy() ? b.getInt32(0) : result);
  return fn;
}

llvm::Function* emit_kernel(const LoopNest& nest, llvm::Module& module, const std::string& symbol) {
  return KernelEmitter(nest, module).emit(symbol);
}

std::vector<std::pair<std::string, void*>> kernel_runtime_symbols() {
  using F1 = float (*)(float);
  using D1 = double (*)(double);
  using F2 = float (*)(float, float);
  using D2 = double (*)(double, double);
  return {
      {"tanhf", reinterpret_cast<void*>(static_cast<F1>(::tanhf))},
      {"tanh", reinterpret_cast<void*>(static_cast<D1>(::tanh))},
      {"expf", reinterpret_cast<void*>(static_cast<F1>(::expf))},
      {"exp", reinterpret_cast<void*>(static_cast<D1>(::exp))},
      {"logf", reinterpret_cast<void*>(static_cast<F1>(::logf))},
      {"log", reinterpret_cast<void*>(static_cast<D1>(::log))},
      {"log1pf", reinterpret_cast<void*>(static_cast<F1>(::log1pf))},
      {"log1p", reinterpret_cast<void*>(static_cast<D1>(::log1p))},
      {"sinf", reinterpret_cast<void*>(static_cast<F1>(::sinf))},
      {"sin", reinterpret_cast<void*>(static_cast<D1>(::sin))},
      {"cosf", reinterpret_cast<void*>(static_cast<F1>(::cosf))},
      {"cos", reinterpret_cast<void*>(static_cast<D1>(::cos))},
      {"floorf", reinterpret_cast<void*>(static_cast<F1>(::floorf))},
      {"floor", reinterpret_cast<void*>(static_cast<D1>(::floor))},
      {"ceilf", reinterpret_cast<void*>(static_cast<F1>(::ceilf))},
      {"ceil", reinterpret_cast<void*>(static_cast<D1>(::ceil))},
      {"sqrtf", reinterpret_cast<void*>(static_cast<F1>(::sqrtf))},
      {"sqrt", reinterpret_cast<void*>(static_cast<D1>(::sqrt))},
      {"atan2f", reinterpret_cast<void*>(static_cast<F2>(::atan2f))},
      {"atan2", reinterpret_cast<void*>(static_cast<D2>(::atan2))},
      {"powf", reinterpret_cast<void*>(static_cast<F2>(::powf))},
      {"pow", reinterpret_cast<void*>(static_cast<D2>(::pow))},
      {"fmodf", reinterpret_cast<void*>(static_cast<F2>(::fmodf))},
      {"fmod", reinterpret_cast<void*>(static_cast<D2>(::fmod))},
      {"memset", reinterpret_cast<void*>(&::memset)},
      {"memcpy", reinterpret_cast<void*>(&::memcpy)},
      {"memmove", reinterpret_cast<void*>(&::memmove)},
      {"pipec_random_fill", reinterpret_cast<void*>(&pipec_random_fill)},
  };
}

}  // namespace pipec::codegen
