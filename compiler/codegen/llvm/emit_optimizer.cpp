#include "compiler/codegen/llvm/emit_optimizer.h"

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include "compiler/codegen/llvm/emit_kernel.h"

namespace pipec::codegen {

llvm::Function* emit_optimizer_kernel(const OptimizerConfig& c, llvm::Module& module, const std::string& symbol) {
  llvm::LLVMContext& ctx = module.getContext();
  llvm::IRBuilder<> b(ctx);
  using llvm::Value;
  auto* f32 = b.getFloatTy();
  auto* f32p = f32->getPointerTo();
  auto* i64 = b.getInt64Ty();
  auto* i8p = b.getInt8PtrTy();
  const bool adam = c.kind != OptimizerKind::Sgd;
  const bool momentum = c.kind == OptimizerKind::Sgd && c.momentum != 0;
  const bool decay = c.weight_decay > 0;
  const bool clip = c.global_clipnorm > 0;

  // The body: (w, m, v, g, scalars, rows), the buffers noalias (each is a different flat buffer).
  auto* body_ty = llvm::FunctionType::get(b.getVoidTy(), {i8p, i8p, i8p, i8p, i8p, i64}, false);
  auto* body = llvm::Function::Create(body_ty, llvm::Function::InternalLinkage, symbol + ".body", module);
  body->addFnAttr(llvm::Attribute::NoInline);
  body->addFnAttr(llvm::Attribute::NoUnwind);
  for (unsigned i = 0; i < 5; ++i) body->addParamAttr(i, llvm::Attribute::NoAlias);
  for (unsigned i = 3; i < 5; ++i) body->addParamAttr(i, llvm::Attribute::ReadOnly);

  auto* entry = llvm::BasicBlock::Create(ctx, "entry", body);
  auto* head = llvm::BasicBlock::Create(ctx, "head", body);
  auto* loop = llvm::BasicBlock::Create(ctx, "loop", body);
  auto* done = llvm::BasicBlock::Create(ctx, "done", body);
  b.SetInsertPoint(entry);
  auto floats = [&](unsigned k) { return b.CreateBitCast(body->getArg(k), f32p); };
  Value *w = floats(0), *m = floats(1), *v = floats(2), *g = floats(3), *scalars = floats(4), *rows = body->getArg(5);
  auto scalar = [&](int k) { return b.CreateLoad(f32, b.CreateConstGEP1_64(f32, scalars, k)); };
  Value* rate = scalar(0);          // adam: lr * sqrt(1 - beta2^t) / (1 - beta1^t); sgd: lr
  Value* decay_factor = scalar(1);  // lr * weight_decay
  Value* clip_scale = scalar(2);    // clipnorm / norm when the norm is above it, else 1
  auto k = [&](double x) { return llvm::ConstantFP::get(f32, static_cast<float>(x)); };
  b.CreateBr(head);

  b.SetInsertPoint(head);
  llvm::PHINode* i = b.CreatePHI(i64, 2);
  i->addIncoming(b.getInt64(0), entry);
  b.CreateCondBr(b.CreateICmpSLT(i, rows), loop, done);

  // The element: as runtime/train/math/optimizer.cpp writes it, operation for operation.
  b.SetInsertPoint(loop);
  auto at = [&](Value* p) { return b.CreateGEP(f32, p, i); };
  Value* gi = b.CreateLoad(f32, at(g));
  if (clip) gi = b.CreateFMul(gi, clip_scale);
  Value* wi = b.CreateLoad(f32, at(w));
  if (decay) wi = b.CreateFSub(wi, b.CreateFMul(wi, decay_factor));
  if (adam) {
    Value* mi = b.CreateLoad(f32, at(m));
    Value* vi = b.CreateLoad(f32, at(v));
    mi = b.CreateFAdd(mi, b.CreateFMul(b.CreateFSub(gi, mi), k(1 - c.beta1)));
    vi = b.CreateFAdd(vi, b.CreateFMul(b.CreateFSub(b.CreateFMul(gi, gi), vi), k(1 - c.beta2)));
    Value* root = b.CreateCall(llvm::Intrinsic::getDeclaration(&module, llvm::Intrinsic::sqrt, {f32}), {vi});
    wi = b.CreateFSub(wi, b.CreateFDiv(b.CreateFMul(mi, rate), b.CreateFAdd(root, k(c.eps))));
    b.CreateStore(mi, at(m));
    b.CreateStore(vi, at(v));
  } else if (momentum) {
    Value* mi = b.CreateLoad(f32, at(m));
    mi = b.CreateFSub(b.CreateFMul(mi, k(c.momentum)), b.CreateFMul(gi, rate));
    wi = b.CreateFAdd(wi, mi);
    b.CreateStore(mi, at(m));
  } else {
    wi = b.CreateFSub(wi, b.CreateFMul(gi, rate));
  }
  b.CreateStore(wi, at(w));
  Value* next = b.CreateAdd(i, b.getInt64(1));
  i->addIncoming(next, loop);
  b.CreateBr(head);
  b.SetInsertPoint(done);
  b.CreateRetVoid();

  // The entry point: inputs {g, scalars}, outputs {w, m, v}, rows.
  return emit_kernel_entry(module, symbol, body, [](const KernelEntryArgs& a) {
    return std::vector<Value*>{a.output(0), a.output(1), a.output(2), a.input(0), a.input(1), a.rows};
  });
}

}  // namespace pipec::codegen
