// The op table (runtime/plan/ops.def) against everything that claims to know the ops:
//  - every op builtin the checker accepts lowers to an op of the table, and every op but param has an
//    interpreter kernel of the kind its flags give;
//  - every op the table says the LLVM back end compiles lowers to loop nests and, compiled, computes
//    what the interpreter does; every other op is refused with a reason that names it;
//  - the same for the CUDA emitter (the source it writes; running it needs a GPU, tests/gpu).
// Each op has a small sample function below: an op added to the table without one fails to compile
// (-Wswitch) and fails here.
#include <gtest/gtest.h>

#include <set>

#include "compiler/codegen/cuda/cuda_emitter.h"
#include "compiler/codegen/loop_nest.h"
#include "compiler/lower/lower.h"
#include "compiler/sema/builtins.h"
#include "runtime/ops/kernel.h"
#include "runtime/ops/slice_bounds.h"
#include "tests/unit/codegen_util.h"

namespace pipec {
namespace {

using testing::FnBuilder;
using testing::int_list;

using Attrs = std::map<std::string, Value>;

Value f32_list(std::vector<double> v) {
  Value l;
  l.kind = Value::List;
  for (double x : v) l.items.push_back(Value::make_float(x));
  return l;
}

// A function whose one live per-row instruction (besides its params and constants) is `op`, with
// operands and attributes as lowering gives them. `runs` is false for the samples whose inputs random
// data cannot be (file paths, encoded images): those are not run, only compiled or refused.
struct Sample {
  FnBuilder b;
  bool runs = true;
};

Sample sample_of(OpKind op) {
  Sample s;
  FnBuilder& b = s.b;
  const std::string name(op_name(op));
  const OpInfo& info = op_info(op);
  auto unary = [&](DType in, DType out, std::vector<int64_t> shape = {4}) {
    b.result("y", b.op(name, {b.param("x", in, shape)}, out, shape));
  };
  auto binary = [&](DType in, DType out) {
    int x = b.param("x", in, {4}), y = b.param("y", in, {4});
    b.result("z", b.op(name, {x, y}, out, {4}));
  };
  auto image = [&](DType in, std::vector<int64_t> in_shape, DType out, std::vector<int64_t> out_shape,
                   Attrs attrs = {}) {
    b.result("y", b.op(name, {b.param("img", in, in_shape)}, out, out_shape, std::move(attrs)));
  };
  // Integer ops sample i32, bool logic bool, the rest f32.
  const DType num = info.has(OpFlag::IntegerOnly) || info.has(OpFlag::Bitwise) ? DType::I32 : DType::F32;
  switch (op) {
    case OpKind::Param: b.result("x", b.param("x", DType::F32, {4})); break;
    case OpKind::Const:
      b.result("x", b.param("x", DType::F32, {4}));
      b.result("c", b.constant(f32_list({1, 2, 3, 4}), DType::F32, {4}));
      break;
    case OpKind::Cast:
      b.result("y",
               b.op(name, {b.param("x", DType::F32, {4})}, DType::I32, {4}, {{"dtype", Value::make_symbol("i32")}}));
      break;
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::FloorDiv:
    case OpKind::Mod:
    case OpKind::Pow:
    case OpKind::Max:
    case OpKind::Min:
    case OpKind::Atan2:
    case OpKind::BitAnd:
    case OpKind::BitOr:
    case OpKind::BitXor:
    case OpKind::Shl:
    case OpKind::Shr: binary(num, num); break;
    case OpKind::Eq:
    case OpKind::Ne:
    case OpKind::Lt:
    case OpKind::Le:
    case OpKind::Gt:
    case OpKind::Ge: binary(DType::F32, DType::Bool); break;
    case OpKind::And:
    case OpKind::Or: binary(DType::Bool, DType::Bool); break;
    case OpKind::Not: unary(DType::Bool, DType::Bool); break;
    case OpKind::Neg:
    case OpKind::BitNot:
    case OpKind::Abs:
    case OpKind::Sign:
    case OpKind::Relu:
    case OpKind::Square:
    case OpKind::Tanh:
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Log1p:
    case OpKind::Sqrt:
    case OpKind::Rsqrt:
    case OpKind::Sin:
    case OpKind::Cos:
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Round:
    case OpKind::Sigmoid: unary(num, num); break;
    case OpKind::Where: {
      int c = b.param("c", DType::Bool, {4}), x = b.param("x", DType::F32, {4}), y = b.param("y", DType::F32, {4});
      b.result("z", b.op(name, {c, x, y}, DType::F32, {4}));
      break;
    }
    case OpKind::Clip: {
      int x = b.param("x", DType::F32, {4}), lo = b.param("lo", DType::F32, {4}), hi = b.param("hi", DType::F32, {4});
      b.result("z", b.op(name, {x, lo, hi}, DType::F32, {4}));
      break;
    }
    case OpKind::Slice:
      b.result("y", b.op(name, {b.param("x", DType::F32, {4})}, DType::F32, {2},
                         {{"starts", int_list({1})}, {"stops", int_list({3})}, {"steps", int_list({1})}}));
      break;
    case OpKind::Gather:
      b.result("y", b.op(name, {b.param("x", DType::F32, {4})}, DType::F32, {2},
                         {{"axis", Value::make_int(0)}, {"indices", int_list({3, 0})}}));
      break;
    case OpKind::DynamicIndex: {
      // An i8 index into 128 values is always in range (negatives count from the end), so random rows
      // compare values; out-of-range rows are tested in codegen_dynamic_index_test.cpp.
      int x = b.param("x", DType::F32, {128}), i = b.param("i", DType::I8, {});
      b.result("y", b.op(name, {x, i}, DType::F32, {}, {{"axis", Value::make_int(0)}}));
      break;
    }
    case OpKind::DynamicSlice: {
      int x = b.param("x", DType::F32, {4}), start = b.param("start", DType::I64, {});
      b.result(
          "y",
          b.op(name, {x, start}, DType::F32, {kUnknownDim},
               {{"axis", Value::make_int(0)}, {"stop", Value::make_int(kSliceNone)}, {"step", Value::make_int(1)}}));
      break;
    }
    case OpKind::Reshape: image(DType::F32, {4}, DType::F32, {2, 2}, {{"shape", int_list({2, 2})}}); break;
    case OpKind::ExpandDims: image(DType::F32, {4}, DType::F32, {1, 4}, {{"axis", Value::make_int(0)}}); break;
    case OpKind::Squeeze: image(DType::F32, {1, 4}, DType::F32, {4}, {{"axis", Value::make_int(0)}}); break;
    case OpKind::Transpose: image(DType::F32, {2, 3}, DType::F32, {3, 2}, {{"perm", int_list({1, 0})}}); break;
    case OpKind::Stack:
    case OpKind::Concat: {
      int x = b.param("x", DType::F32, {4}), y = b.param("y", DType::F32, {4});
      const bool stack = op == OpKind::Stack;
      b.result("z", b.op(name, {x, y}, DType::F32, stack ? std::vector<int64_t>{2, 4} : std::vector<int64_t>{8},
                         {{"axis", Value::make_int(0)}}));
      break;
    }
    case OpKind::UnpackBits: image(DType::U8, {2}, DType::U8, {16}); break;
    case OpKind::PackBits: image(DType::U8, {16}, DType::U8, {2}); break;
    case OpKind::OneHot: image(DType::I64, {3}, DType::F32, {3, 4}, {{"depth", Value::make_int(4)}}); break;
    case OpKind::Sum:
    case OpKind::Prod:
    case OpKind::Mean:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin: image(DType::F32, {2, 3}, DType::F32, {2}, {{"axis", int_list({1})}}); break;
    case OpKind::Argmax: image(DType::F32, {2, 3}, DType::I64, {2}, {{"axis", Value::make_int(1)}}); break;
    case OpKind::Size: image(DType::F32, {4}, DType::I64, {}); break;
    case OpKind::RandomUniform:
    case OpKind::RandomNormal:
    case OpKind::RandomInt: {
      // Lowering gives the bounds as operands (constants here) and the call site an op_id.
      const bool ints = op == OpKind::RandomInt;
      const DType dt = ints ? DType::I64 : DType::F32;
      b.result("x", b.param("x", DType::F32, {4}));
      int lo = b.constant(ints ? Value::make_int(-5) : Value::make_float(0.5), dt, {});
      int hi = b.constant(ints ? Value::make_int(5) : Value::make_float(2.0), dt, {});
      b.result("r", b.op(name, {lo, hi}, dt, {4},
                         {{"shape", int_list({4})}, {"op_id", Value::make_int(0)}, {"seed", Value::make_int(3)}}));
      break;
    }
    case OpKind::ReadFile:
      s.runs = false;
      image(DType::Bytes, {}, DType::Bytes, {});
      break;
    case OpKind::DecodeJpeg:
    case OpKind::DecodePng:
    case OpKind::DecodeImage:
      s.runs = false;
      image(DType::Bytes, {}, DType::U8, {kUnknownDim, kUnknownDim, 3}, {{"channels", Value::make_int(3)}});
      break;
    case OpKind::EncodePng:
    case OpKind::EncodeJpeg: image(DType::U8, {4, 4, 3}, DType::Bytes, {}); break;
    case OpKind::RandomCrop:
      image(DType::U8, {8, 8, 3}, DType::U8, {4, 4, 3},
            {{"height", Value::make_int(4)}, {"width", Value::make_int(4)}, {"op_id", Value::make_int(0)}});
      break;
    case OpKind::CentralCrop:
      image(DType::U8, {8, 8, 3}, DType::U8, {4, 4, 3}, {{"fraction", Value::make_float(0.5)}});
      break;
    case OpKind::CropOrPad:
      image(DType::U8, {8, 8, 3}, DType::U8, {4, 4, 3},
            {{"height", Value::make_int(4)}, {"width", Value::make_int(4)}});
      break;
    case OpKind::Resize:
      image(DType::F32, {8, 8, 3}, DType::F32, {4, 4, 3},
            {{"height", Value::make_int(4)}, {"width", Value::make_int(4)}});
      break;
    case OpKind::FlipLeftRight:
    case OpKind::FlipUpDown: image(DType::U8, {4, 4, 3}, DType::U8, {4, 4, 3}); break;
    case OpKind::RandomFlipLeftRight:
    case OpKind::RandomFlipUpDown:
      image(DType::U8, {4, 4, 3}, DType::U8, {4, 4, 3}, {{"op_id", Value::make_int(0)}});
      break;
    case OpKind::ConvertImageDtype: image(DType::U8, {4, 4, 3}, DType::F32, {4, 4, 3}); break;
    case OpKind::Normalize: {
      int img = b.param("img", DType::U8, {4, 4, 3});
      int mean = b.constant(f32_list({1, 2, 3}), DType::F32, {3}),
          sd = b.constant(f32_list({2, 2, 2}), DType::F32, {3});
      b.result("y", b.op(name, {img, mean, sd}, DType::F32, {4, 4, 3}));
      break;
    }
    case OpKind::RgbToGrayscale: image(DType::U8, {4, 4, 3}, DType::U8, {4, 4, 1}); break;
    case OpKind::DistanceTransform: image(DType::U8, {4, 4, 1}, DType::F32, {4, 4, 1}); break;
    case OpKind::OneHotColors: {
      Value colors;
      colors.kind = Value::List;
      colors.items = {int_list({0, 0, 0}), int_list({255, 255, 255})};
      image(DType::U8, {4, 4, 3}, DType::F32, {4, 4, 2}, {{"colors", colors}});
      break;
    }
    case OpKind::ConvertNormalize:
    case OpKind::RandomFlipConvertNormalize: {
      int img = b.param("img", DType::U8, {4, 4, 3});
      int mean = b.constant(f32_list({1, 2, 3}), DType::F32, {3}),
          sd = b.constant(f32_list({2, 2, 2}), DType::F32, {3});
      Attrs attrs{{"flip", Value::make_symbol("left_right")}};
      if (op == OpKind::RandomFlipConvertNormalize) attrs["op_id"] = Value::make_int(0);
      b.result("y", b.op(name, {img, mean, sd}, DType::F32, {4, 4, 3}, std::move(attrs)));
      break;
    }
    case OpKind::Strip: image(DType::Bytes, {3}, DType::Bytes, {3}); break;
    case OpKind::Split: image(DType::Bytes, {}, DType::Bytes, {kUnknownDim}, {{"sep", Value::make_string(",")}}); break;
    case OpKind::ToNumber: image(DType::Bytes, {3}, DType::I64, {3}); break;
  }
  return s;
}

// The instruction of `op` in its sample (the last one that is not a param or a constant).
const Instr& instr_of(const ExprFunction& fn, OpKind op) {
  for (size_t i = fn.body.size(); i-- > 0;)
    if (fn.body[i].op == op) return fn.body[i];
  throw std::logic_error("sample without its op");
}

// A refusal names the op, or, in a sample holding byte strings (which no back end compiles), says so.
::testing::AssertionResult names_why(const Sample& s, OpKind op, const std::string& why) {
  if (why.find(std::string(op_name(op))) != std::string::npos) return ::testing::AssertionSuccess();
  bool bytes = false;
  for (const Instr& in : s.b.fn.body) bytes = bytes || in.type.dtype == DType::Bytes;
  if (bytes && why.find("bytes") != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the refusal does not say why: " << why;
}

std::vector<std::string> fields_of(const FnBuilder& b) {
  std::vector<std::string> names;
  for (const auto& [name, t] : b.fields) names.push_back(name);
  return names;
}

TEST(OpTable, NamesRoundTripAndAreUnique) {
  std::set<std::string_view> names;
  for (OpKind k : all_op_kinds) {
    EXPECT_TRUE(names.insert(op_name(k)).second) << op_name(k);
    ASSERT_TRUE(op_from_name(op_name(k)).has_value()) << op_name(k);
    EXPECT_EQ(*op_from_name(op_name(k)), k);
    const OpInfo& info = op_info(k);
    EXPECT_GE(info.min_operands, 0) << op_name(k);
    EXPECT_TRUE(info.max_operands == kVariadic || info.max_operands >= info.min_operands) << op_name(k);
  }
  EXPECT_EQ(names.size(), kNumOpKinds);
  EXPECT_FALSE(op_from_name("no_such_op").has_value());
}

TEST(OpTable, EveryOpButParamHasAKernelOfTheKindItsFlagsGive) {
  for (OpKind k : all_op_kinds) {
    const KernelInfo* kernel = find_kernel(k);
    if (op_has(k, OpFlag::Input)) {
      EXPECT_EQ(kernel, nullptr) << op_name(k) << ": the interpreter binds inputs itself";
      continue;
    }
    ASSERT_NE(kernel, nullptr) << "op `" << op_name(k) << "` is in runtime/plan/ops.def but has no interpreter kernel";
    EXPECT_EQ(kernel->kind, kernel_kind(k)) << op_name(k);
  }
}

// What the checker accepts: every builtin of kind Op lowers (op_of_builtin, as lowering calls it) to an
// op of the table that the interpreter runs.
TEST(OpTable, EveryOpBuiltinLowersToAnOpWithAKernel) {
  size_t ops = 0;
  for (const Builtin& b : all_builtins()) {
    if (b.kind != BuiltinKind::Op) {
      EXPECT_FALSE(op_of_builtin(b).has_value()) << b.name;
      continue;
    }
    ++ops;
    std::optional<OpKind> k = op_of_builtin(b);
    ASSERT_TRUE(k.has_value()) << "builtin `" << b.name << "` has no op in runtime/plan/ops.def";
    EXPECT_EQ(op_name(*k), b.name);
    EXPECT_NE(find_kernel(*k), nullptr) << "the checker accepts `" << b.name
                                        << "` but the interpreter has no kernel for it";
    EXPECT_FALSE(op_has(*k, OpFlag::Input) || op_has(*k, OpFlag::Constant)) << b.name;
  }
  EXPECT_GT(ops, 60u);  // a broken registry walk must not pass
}

TEST(OpTable, EverySampleVerifiesAndUsesItsOp) {
  for (OpKind k : all_op_kinds) {
    Sample s = sample_of(k);
    EXPECT_TRUE(verify_function(s.b.fn).empty()) << op_name(k) << ": " << verify_function(s.b.fn).front();
    EXPECT_NO_THROW(instr_of(s.b.fn, k)) << op_name(k);
  }
}

TEST(OpTable, TheVerifierChecksOperandCounts) {
  FnBuilder b;
  int x = b.param("x", DType::F32, {4});
  b.result("y", b.op("add", {x}, DType::F32, {4}));
  auto errs = verify_function(b.fn);
  ASSERT_FALSE(errs.empty());
  EXPECT_NE(errs[0].find("add: takes 2 operands, not 1"), std::string::npos) << errs[0];
  FnBuilder c;
  c.result("y", c.op("stack", {}, DType::F32, {0}, {{"axis", Value::make_int(0)}}));
  errs = verify_function(c.fn);
  ASSERT_FALSE(errs.empty());
  EXPECT_NE(errs[0].find("takes at least 1 operands, not 0"), std::string::npos) << errs[0];
}

// The LLVM back end compiles exactly the ops whose row names it: each sample lowers to loop nests and,
// JIT-compiled, gives the interpreter's bits; the other samples are refused with the op's name.
TEST(OpTable, LlvmCompilesTheOpsItClaimsAndRefusesTheOthers) {
  int claimed = 0, refused = 0;
  for (OpKind k : all_op_kinds) {
    SCOPED_TRACE(std::string(op_name(k)));
    Sample s = sample_of(k);
    codegen::LoopNest nest;
    std::string why;
    const bool lowered = codegen::lower_to_loop_nest(s.b.fn, fields_of(s.b), nest, why);
    if (op_info(k).compiled_by(OpBackend::Llvm)) {
      ++claimed;
      ASSERT_TRUE(lowered) << "the table says the LLVM back end compiles `" << op_name(k) << "`, but: " << why;
      if (s.runs) testing::expect_jit_matches(s.b, 9, static_cast<uint64_t>(k) + 1);
    } else {
      ++refused;
      EXPECT_FALSE(lowered) << "`" << op_name(k)
                            << "` compiles: name the Llvm back end in its row of runtime/plan/ops.def";
      EXPECT_TRUE(names_why(s, k, why));
    }
  }
  EXPECT_GT(claimed, 50);
  EXPECT_GT(refused, 10);
}

// The CUDA emitter writes a kernel for the ops whose row names it, and refuses the others by name.
TEST(OpTable, CudaEmitsTheOpsItClaimsAndRefusesTheOthers) {
  for (OpKind k : all_op_kinds) {
    SCOPED_TRACE(std::string(op_name(k)));
    Sample s = sample_of(k);
    cuda_codegen::CudaEmitResult r = cuda_codegen::emit_cuda_map(s.b.fn, fields_of(s.b), "sample_kernel");
    if (op_info(k).compiled_by(OpBackend::Cuda)) {
      EXPECT_TRUE(r.kernel) << "the table says the CUDA emitter compiles `" << op_name(k) << "`, but: " << r.error;
    } else {
      EXPECT_FALSE(r.kernel) << "`" << op_name(k)
                             << "` is emitted: name the Cuda back end in its row of runtime/plan/ops.def";
      EXPECT_TRUE(names_why(s, k, r.error));
    }
  }
}

}  // namespace
}  // namespace pipec
