// The optimizer passes one by one: what each rewrites and, as important, what it must leave alone.
#include <gtest/gtest.h>

#include "compiler/passes/algebraic_simplification.h"
#include "compiler/passes/common_subexpression_elimination.h"
#include "compiler/passes/constant_folding.h"
#include "compiler/passes/dead_code_elimination.h"
#include "compiler/passes/map_batch_fusion.h"
#include "compiler/passes/map_filter_fusion.h"
#include "compiler/passes/map_fusion.h"
#include "compiler/passes/noop_elimination.h"
#include "compiler/passes/pass_pipeline.h"
#include "compiler/passes/prefetch_injection.h"
#include "compiler/passes/projection_pushdown.h"
#include "compiler/passes/shuffle_repeat_fusion.h"
#include "compiler/passes/vectorize_map_after_batch.h"
#include "runtime/ops/interpreter.h"
#include "tests/unit/passes_test_util.h"

namespace pipec {
namespace {

using testing::body_ops;
using testing::ops_of;
using testing::plan_of;

// ---- hand-built functions for the expression passes ----------------------------------------------

Instr param(const std::string& field, DType dt, std::vector<int64_t> shape = {}) {
  return Instr{OpKind::Param, {}, {{"field", Value::make_string(field)}}, Type::tensor(dt, std::move(shape)), {}};
}
Instr konst(Value v, DType dt, std::vector<int64_t> shape = {}) {
  return Instr{OpKind::Const, {}, {{"value", v}}, Type::tensor(dt, std::move(shape)), {}};
}
Instr op(const std::string& name, std::vector<int> operands, DType dt, std::vector<int64_t> shape = {}) {
  return Instr{op_from_name(name).value(), std::move(operands), {}, Type::tensor(dt, std::move(shape)), {}};
}

// range(5) | map(fn): the map's element is its results' types.
Plan range_then(std::shared_ptr<ExprFunction> fn) {
  Plan p = plan_of("pipeline p = range(5)\n");
  Stage m;
  m.kind = StageKind::Map;
  m.inputs = {0};
  m.fn = fn;
  for (const auto& [name, id] : fn->results)
    m.element.fields.push_back(Field{name, std::make_shared<const Type>(fn->body[static_cast<size_t>(id)].type)});
  p.stages.push_back(m);
  EXPECT_TRUE(verify_plan(p).empty());
  return p;
}

// Runs a function over the rows 0..4 of `value` with the interpreter.
std::vector<Column> eval(const ExprFunction& fn) {
  Chunk c;
  c.rows = 5;
  Tensor t = Tensor::empty(DType::I64, {5});
  for (int i = 0; i < 5; ++i) t.data<int64_t>()[i] = i - 2;
  c.columns.push_back(Column{false, t, {}});
  return run_function(fn, {"value"}, c, EvalContext{});
}

TEST(ConstantFolding, FoldsConstantArithmeticWithTheKernels) {
  auto fn = std::make_shared<ExprFunction>();
  fn->name = "f";
  int v = fn->add(param("value", DType::I64));
  int two = fn->add(konst(Value::make_int(2), DType::I64));
  int three = fn->add(konst(Value::make_int(3), DType::I64));
  int six = fn->add(op("mul", {two, three}, DType::I64));
  int x = fn->add(op("add", {v, six}, DType::I64));
  int h = fn->add(konst(Value::make_float(0.1, DType::F32), DType::F32));
  int q = fn->add(op("div", {h, h}, DType::F32));
  int tq = fn->add(op("tanh", {h}, DType::F32));
  fn->results = {{"x", x}, {"q", q}, {"t", tq}};
  Plan p = range_then(fn);
  auto before = eval(*p.stages[1].fn);
  ASSERT_TRUE(constant_folding(p));
  const ExprFunction& f = *p.stages[1].fn;
  EXPECT_EQ(f.body[six].op, OpKind::Const);
  EXPECT_EQ(f.body[six].attrs.at("value").i, 6);
  EXPECT_EQ(f.body[x].op, OpKind::Add);  // reads a parameter: not constant
  EXPECT_EQ(f.body[tq].op, OpKind::Const);
  auto after = eval(f);
  for (size_t k = 0; k < before.size(); ++k) EXPECT_TRUE(before[k].dense.equals(after[k].dense)) << k;
  EXPECT_FALSE(constant_folding(p));
}

TEST(ConstantFolding, LeavesRandomOpsAndFailingKernels) {
  auto fn = std::make_shared<ExprFunction>();
  fn->name = "f";
  Instr r = op("random_uniform", {}, DType::F32, {2});
  r.attrs = {{"shape", Value{Value::List, DType::I64, 0, 0, false, "", {Value::make_int(2)}}},
             {"op_id", Value::make_int(0)}};
  int rid = fn->add(r);
  int src = fn->add(konst(Value{Value::List, DType::I64, 0, 0, false, "", {Value::make_int(1), Value::make_int(2)}},
                          DType::I64, {2}));
  Instr g = op("gather", {src}, DType::I64, {1});
  g.attrs = {{"axis", Value::make_int(0)},
             {"indices", Value{Value::List, DType::I64, 0, 0, false, "", {Value::make_int(7)}}}};
  int gid = fn->add(g);
  fn->results = {{"r", rid}, {"g", gid}};
  Plan p = range_then(fn);
  EXPECT_FALSE(constant_folding(p));
}

TEST(AlgebraicSimplification, RemovesExactIdentitiesOnly) {
  auto fn = std::make_shared<ExprFunction>();
  fn->name = "f";
  int v = fn->add(param("value", DType::I64));
  int fv = fn->add(op("cast", {v}, DType::F32));
  fn->body[fv].attrs["dtype"] = Value::make_symbol("f32");
  int one = fn->add(konst(Value::make_float(1.0, DType::F32), DType::F32));
  int zero = fn->add(konst(Value::make_float(0.0, DType::F32), DType::F32));
  int izero = fn->add(konst(Value::make_int(0), DType::I64));
  int m = fn->add(op("mul", {fv, one}, DType::F32));    // x * 1 -> x
  int s = fn->add(op("sub", {m, zero}, DType::F32));    // x - 0 -> x
  int a = fn->add(op("add", {s, zero}, DType::F32));    // float x + 0: -0.0 + 0.0 is +0.0, stays
  int ia = fn->add(op("add", {izero, v}, DType::I64));  // integer 0 + x -> x
  int c = fn->add(op("cast", {ia}, DType::I64));        // cast to its own type -> x
  fn->body[c].attrs["dtype"] = Value::make_symbol("i64");
  int n1 = fn->add(op("neg", {c}, DType::I64));
  int n2 = fn->add(op("neg", {n1}, DType::I64));  // neg(neg x) -> x
  int wide = fn->add(konst(Value::make_float(1.0, DType::F32), DType::F32, {3}));
  int b = fn->add(op("mul", {fv, wide}, DType::F32, {3}));  // broadcasts x: not x itself, stays
  fn->results = {{"a", a}, {"n", n2}, {"b", b}};
  Plan p = range_then(fn);
  ASSERT_TRUE(algebraic_simplification(p));
  const ExprFunction& f = *p.stages[1].fn;
  EXPECT_EQ(f.body[a].operands[0], fv);
  EXPECT_EQ(f.results[0].second, a);
  EXPECT_EQ(f.results[1].second, v);
  EXPECT_EQ(f.results[2].second, b);
}

TEST(CommonSubexpressionElimination, MergesEqualValuesButNotRandomOps) {
  auto fn = std::make_shared<ExprFunction>();
  fn->name = "f";
  int v = fn->add(param("value", DType::I64));
  int k1 = fn->add(konst(Value::make_int(3), DType::I64));
  int k2 = fn->add(konst(Value::make_int(3), DType::I64));
  int a1 = fn->add(op("add", {v, k1}, DType::I64));
  int a2 = fn->add(op("add", {v, k2}, DType::I64));
  int z1 = fn->add(konst(Value::make_float(0.0, DType::F32), DType::F32));
  int z2 = fn->add(konst(Value::make_float(-0.0, DType::F32), DType::F32));
  Instr r = op("random_uniform", {}, DType::F32);
  r.attrs = {{"shape", Value{Value::List, DType::I64, 0, 0, false, "", {}}}, {"op_id", Value::make_int(0)}};
  int r1 = fn->add(r);
  int r2 = fn->add(r);
  fn->results = {{"a", a1}, {"b", a2}, {"z", z1}, {"w", z2}, {"r", r1}, {"s", r2}};
  Plan p = range_then(fn);
  ASSERT_TRUE(common_subexpression_elimination(p));
  const ExprFunction& f = *p.stages[1].fn;
  EXPECT_EQ(f.results[1].second, a1);
  EXPECT_EQ(f.results[3].second, z2);  // -0.0 is not 0.0
  EXPECT_EQ(f.results[5].second, r2);
  ASSERT_TRUE(dead_code_elimination(p));
  EXPECT_EQ(body_ops(*p.stages[1].fn), "const add const const random_uniform random_uniform");
}

TEST(DeadCodeElimination, RemovesWhatNoResultNeeds) {
  Plan p = plan_of("pipeline p = range(5) | map(r => { a = r.value * 2\n b = r.value + 1\n { b } })\n");
  EXPECT_EQ(body_ops(*p.stages[1].fn), "const mul const add");
  ASSERT_TRUE(dead_code_elimination(p));
  EXPECT_EQ(body_ops(*p.stages[1].fn), "const add");
  EXPECT_TRUE(verify_plan(p).empty());
  EXPECT_FALSE(dead_code_elimination(p));
}

TEST(NoopElimination, RemovesStagesThatChangeNothing) {
  Plan p = plan_of(
      "pipeline p = range(10) | repeat(1) | skip(0) | take(-1) | shard(1, 0) | map(r => { value: r.value })"
      " | filter(r => true) | prefetch(2) | prefetch(auto)\n");
  ASSERT_TRUE(noop_elimination(p));
  EXPECT_EQ(ops_of(p), "range prefetch");
  EXPECT_EQ(p.stages[1].arg("size")->s, "auto");
}

TEST(NoopElimination, KeepsStagesThatDoSomething) {
  Plan p = plan_of(
      "pipeline p = range(10) | repeat(2) | skip(1) | take(3) | shard(2, 0) | map(r => { value: r.value + 1 })"
      " | filter(r => r.value > 1) | map(r => { other: r.value })\n");
  EXPECT_FALSE(noop_elimination(p));
  EXPECT_EQ(ops_of(p), "range repeat skip take shard map filter map");
}

TEST(NoopElimination, KeepsStagesBeforeAShuffleWhoseKeyIsItsIndex) {
  Plan p = plan_of("pipeline p = range(10) | repeat(1) | shuffle(8, seed = 1) | repeat(1)\n");
  ASSERT_TRUE(noop_elimination(p));
  EXPECT_EQ(ops_of(p), "range repeat shuffle");
}

TEST(MapFusion, FusesConsecutiveMaps) {
  Plan p = plan_of(
      "pipeline p = range(10) | map(r => { a: r.value * 2, b: r.value }) | map(r => { c: r.a + r.b }) | map(x => { d: "
      "x.c - 1 })\n");
  ASSERT_TRUE(map_fusion(p));
  EXPECT_EQ(ops_of(p), "range map");
  EXPECT_EQ(p.stages[1].element.fields.size(), 1u);
  EXPECT_EQ(p.stages[1].element.fields[0].name, "d");
  EXPECT_TRUE(verify_plan(p).empty());
  EXPECT_EQ(p.stages[1].fn->name, "map@1+map@2+map@3");
}

TEST(MapFusion, RefusesBeforeIgnoreErrorsAndAcrossOtherStages) {
  Plan p = plan_of("pipeline p = range(10) | map(r => { a: r.value }) | map(r => { b: r.a }) | ignore_errors\n");
  EXPECT_FALSE(map_fusion(p));
  Plan q = plan_of("pipeline p = range(10) | map(r => { a: r.value }) | shuffle(4, seed = 1) | map(r => { b: r.a })\n");
  EXPECT_FALSE(map_fusion(q));
  // A shuffle later in the plan keys its stream by its index, which fusing would shift.
  Plan s = plan_of("pipeline p = range(10) | map(r => { a: r.value }) | map(r => { b: r.a }) | shuffle(4, seed = 1)\n");
  EXPECT_FALSE(map_fusion(s));
}

TEST(MapFilterFusion, FusesAMapWithTheFilterAfterIt) {
  Plan p = plan_of("pipeline p = range(10) | map(r => { a: r.value * 3 }) | filter(r => r.a % 2 == 0) | batch(2)\n");
  ASSERT_TRUE(map_filter_fusion(p));
  EXPECT_EQ(ops_of(p), "range map_filter batch");
  const ExprFunction& f = *p.stages[1].fn;
  ASSERT_EQ(f.results.size(), 2u);
  EXPECT_EQ(f.results[0].first, "a");
  EXPECT_EQ(f.results[1].first, "keep");
  EXPECT_TRUE(verify_plan(p).empty());
}

TEST(MapFilterFusion, LeavesAFilterBeforeAMap) {
  Plan p = plan_of("pipeline p = range(10) | filter(r => r.value > 2) | map(r => { a: random_uniform([2]) })\n");
  EXPECT_FALSE(map_filter_fusion(p));
}

TEST(ShuffleRepeatFusion, FusesAShuffleWithTheRepeatAfterIt) {
  Plan p = plan_of("pipeline p = range(10) | shuffle(4, seed = 1) | repeat(3) | batch(2)\n");
  ASSERT_TRUE(shuffle_repeat_fusion(p));
  EXPECT_EQ(ops_of(p), "range shuffle_repeat batch");
  EXPECT_EQ(p.stages[1].arg("buffer")->i, 4);
  EXPECT_EQ(p.stages[1].arg("seed")->i, 1);
  EXPECT_EQ(p.stages[1].arg("count")->i, 3);
  EXPECT_EQ(p.stages[2].inputs, std::vector<int>{1});
  EXPECT_TRUE(verify_plan(p).empty());
  // repeat() forever: no count argument.
  Plan q = plan_of("pipeline p = range(10) | shuffle(4) | repeat()\n");
  ASSERT_TRUE(shuffle_repeat_fusion(q));
  EXPECT_EQ(ops_of(q), "range shuffle_repeat");
  EXPECT_EQ(q.stages[1].arg("count"), nullptr);
}

TEST(ShuffleRepeatFusion, RefusesWhenAnotherStageComesBetweenOrALaterShuffleWouldMove) {
  Plan between = plan_of("pipeline p = range(10) | shuffle(4, seed = 1) | batch(2) | repeat(3)\n");
  EXPECT_FALSE(shuffle_repeat_fusion(between));
  Plan no_shuffle = plan_of("pipeline p = range(10) | repeat(3) | shuffle(4, seed = 1)\n");
  EXPECT_FALSE(shuffle_repeat_fusion(no_shuffle));
  // The second shuffle keys its stream by its stage index, which removing the repeat would shift.
  Plan later = plan_of("pipeline p = range(10) | shuffle(4, seed = 1) | repeat(2) | shuffle(3, seed = 2)\n");
  EXPECT_FALSE(shuffle_repeat_fusion(later));
}

TEST(MapBatchFusion, FusesTheMapThatCouldNotMoveAfterItsBatch) {
  Plan p = plan_of(
      "pipeline p = range(10) | repeat(2) | map(r => { v: f32(r.value), n: random_uniform([3]) }) | batch(4)\n");
  EXPECT_FALSE(vectorize_map_after_batch(p));
  ASSERT_TRUE(map_batch_fusion(p));
  EXPECT_EQ(ops_of(p), "range repeat map_batch");
  const Stage& s = p.stages[2];
  EXPECT_EQ(s.inputs, std::vector<int>{1});
  EXPECT_EQ(s.arg("size")->i, 4);
  ASSERT_TRUE(s.fn);
  EXPECT_EQ(s.fn->results.size(), 2u);
  EXPECT_EQ(element_to_string(s.element), "{v: f32[?], n: f32[?, 3]} batched(1)");
  EXPECT_TRUE(verify_plan(p).empty()) << verify_plan(p)[0];
}

TEST(MapBatchFusion, RefusesPaddedBytesTolerantAndMovedShuffles) {
  Plan padded = plan_of("pipeline p = range(10) | repeat(2) | map(r => { v: r.value }) | padded_batch(4)\n");
  EXPECT_FALSE(map_batch_fusion(padded));
  Plan bytes = plan_of(
      "source s = tfrecord(\"x.tfrecord\") { name: bytes }\n"
      "pipeline p = s | repeat(2) | map(r => { name: r.name }) | batch(4)\n");
  EXPECT_FALSE(map_batch_fusion(bytes));
  Plan tolerant = plan_of("pipeline p = range(10) | repeat(2) | map(r => { v: r.value }) | batch(4) | ignore_errors\n");
  EXPECT_FALSE(map_batch_fusion(tolerant));
  Plan shuffled =
      plan_of("pipeline p = range(10) | repeat(2) | map(r => { v: r.value }) | batch(4) | shuffle(3, seed = 1)\n");
  EXPECT_FALSE(map_batch_fusion(shuffled));
}

TEST(VectorizeMapAfterBatch, MovesAFixedShapeMapAfterItsBatch) {
  Plan p = plan_of("pipeline p = range(10) | map(r => { a: f32(r.value) * 2.0, n: random_uniform([3]) }) | batch(4)\n");
  ASSERT_TRUE(vectorize_map_after_batch(p));
  EXPECT_EQ(ops_of(p), "range batch map");
  EXPECT_EQ(p.stages[2].arg("per_row")->i, 4);
  EXPECT_EQ(element_to_string(p.stages[1].element), "{value: i64[?]} batched(1)");
  EXPECT_EQ(element_to_string(p.stages[2].element), "{a: f32[?], n: f32[?, 3]} batched(1)");
  EXPECT_TRUE(verify_plan(p).empty()) << verify_plan(p)[0];
}

TEST(VectorizeMapAfterBatch, MovesAMapWithoutRandomOpsAfterARepeat) {
  // Nothing in the map reads the epoch, so a batch spanning two epochs computes the same values.
  Plan p =
      plan_of("pipeline p = range(10) | shuffle(4, seed = 1) | repeat(2) | map(r => { v: r.value * 3 }) | batch(4)\n");
  ASSERT_TRUE(vectorize_map_after_batch(p));
  EXPECT_EQ(ops_of(p), "range shuffle repeat batch map");
  EXPECT_TRUE(verify_plan(p).empty());
}

TEST(VectorizeMapAfterBatch, RefusesRaggedRepeatedAndTolerantMaps) {
  // A variable-length feature cannot be batched densely before the map has reduced it.
  Plan ragged = plan_of(
      "source s = tfrecord(\"x.tfrecord\") { ids: i64[?] }\n"
      "pipeline p = s | map(r => { n: sum(r.ids) }) | batch(4)\n");
  EXPECT_FALSE(vectorize_map_after_batch(ragged));
  Plan ragged_out = plan_of("pipeline p = range(10) | map(r => { v: r.value }) | padded_batch(4)\n");
  EXPECT_FALSE(vectorize_map_after_batch(ragged_out));
  // After a repeat one batch can hold two epochs, and random draws are keyed by epoch.
  Plan repeated = plan_of("pipeline p = range(10) | repeat(2) | map(r => { v: random_uniform([]) }) | batch(4)\n");
  EXPECT_FALSE(vectorize_map_after_batch(repeated));
  Plan shuffled = plan_of(
      "pipeline p = range(10) | shuffle(4) | repeat(2) | map(r => { v: f32(r.value) + random_normal([]) }) | "
      "batch(4)\n");
  EXPECT_FALSE(vectorize_map_after_batch(shuffled));
  Plan tolerant = plan_of("pipeline p = range(10) | map(r => { v: r.value }) | batch(4) | ignore_errors\n");
  EXPECT_FALSE(vectorize_map_after_batch(tolerant));
  // A filter in between changes which elements form a batch.
  Plan filtered = plan_of("pipeline p = range(10) | map(r => { v: r.value }) | filter(r => r.v > 1) | batch(4)\n");
  EXPECT_FALSE(vectorize_map_after_batch(filtered));
}

TEST(ProjectionPushdown, SourcesParseOnlyWhatIsRead) {
  Plan p = plan_of(
      "source s = tfrecord(\"x.tfrecord\") { a: i64\n b: f32[3]\n c: bytes }\n"
      "pipeline p = s | shuffle(8, seed = 1) | filter(r => r.b[0] > 0.0) | map(r => { x: r.a * 2, y: r.a }) | map(r => "
      "{ z: r.x })\n");
  ASSERT_TRUE(projection_pushdown(p));
  ASSERT_EQ(p.stages[0].schema.size(), 2u);
  EXPECT_EQ(p.stages[0].schema[0].name, "a");
  EXPECT_EQ(p.stages[0].schema[1].name, "b");
  EXPECT_EQ(element_to_string(p.stages[1].element), "{a: i64, b: f32[3]}");
  // The first map's `y` is read by nobody.
  ASSERT_EQ(p.stages[3].fn->results.size(), 1u);
  EXPECT_EQ(p.stages[3].fn->results[0].first, "x");
  EXPECT_TRUE(verify_plan(p).empty());
}

TEST(ProjectionPushdown, TheOutputKeepsEveryField) {
  Plan p = plan_of("source s = tfrecord(\"x.tfrecord\") { a: i64\n b: f32[3] }\npipeline p = s | batch(2)\n");
  EXPECT_FALSE(projection_pushdown(p));
  Plan q = plan_of(
      "source s = tfrecord(\"x.tfrecord\") { a: i64\n b: f32[3] }\npipeline p = s | map(r => { a: r.a, b: r.b })\n");
  EXPECT_FALSE(projection_pushdown(q));
  Plan t = plan_of(
      "source s = tfrecord(\"x.tfrecord\") { a: i64\n b: f32[3] }\npipeline p = s | map(r => { a: r.a }) | "
      "ignore_errors\n");
  EXPECT_FALSE(projection_pushdown(t));  // a bad `b` must still drop its record
}

TEST(PrefetchInjection, EndsThePipelineWithOnePrefetch) {
  Plan p = plan_of("pipeline p = range(10) | batch(2)\n");
  ASSERT_TRUE(prefetch_injection(p));
  EXPECT_EQ(ops_of(p), "range batch prefetch");
  EXPECT_EQ(p.stages[2].inputs, std::vector<int>{1});
  EXPECT_FALSE(prefetch_injection(p));
}

TEST(PassPipeline, OptLevelZeroAndDisabledPasses) {
  const std::string spec = "pipeline p = range(10) | map(r => { a: r.value }) | map(r => { b: r.a }) | batch(2)\n";
  Plan p = plan_of(spec);
  PassOptions o0;
  o0.opt_level = 0;
  run_passes(p, o0);
  EXPECT_EQ(ops_of(p), "range map map batch");
  PassOptions some;
  some.disabled = {"map_fusion", "vectorize_map_after_batch"};
  std::vector<std::string> ran;
  some.log = [&](const std::string& name, bool, const Plan&) { ran.push_back(name); };
  run_passes(p, some);
  // Not vectorized, the second map fuses with its batch instead.
  EXPECT_EQ(ops_of(p), "range map map_batch prefetch");
  EXPECT_EQ(ran.size(), pass_list().size() - 2);
  for (const auto& name : ran) EXPECT_TRUE(is_pass_name(name));
  Plan all = plan_of(spec);
  run_passes(all, PassOptions{});
  EXPECT_EQ(ops_of(all), "range batch map prefetch");
}

TEST(PassPipeline, LeavesPlansSharingItsFunctionsAlone) {
  Plan p = plan_of("pipeline p = range(10) | map(r => { a = r.value * 2\n b = r.value\n { b } })\n");
  Plan copy = p;
  run_passes(copy, PassOptions{});
  EXPECT_EQ(body_ops(*p.stages[1].fn), "const mul");
  EXPECT_EQ(body_ops(*copy.stages[1].fn), "");
}

TEST(PassPipeline, AnInvalidPlanIsAnInternalErrorNamingThePass) {
  Plan p = plan_of("pipeline p = range(10) | map(r => { a: r.value })\n");
  p.stages[1].element.fields[0].name = "wrong";
  try {
    run_passes(p, PassOptions{});
    FAIL() << "no error";
  } catch (const PassError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("after pass `noop_elimination`"), std::string::npos) << what;
    EXPECT_NE(what.find("pipeline p"), std::string::npos) << what;
  }
}

TEST(PassPipeline, NamesAreUniqueAndStable) {
  std::set<std::string> names;
  for (const PassInfo& p : pass_list()) EXPECT_TRUE(names.insert(p.name).second) << p.name;
  for (const char* n :
       {"vectorize_map_after_batch", "map_fusion", "map_filter_fusion", "noop_elimination", "prefetch_injection",
        "projection_pushdown", "constant_folding", "common_subexpression_elimination", "dead_code_elimination",
        "algebraic_simplification", "shuffle_repeat_fusion", "map_batch_fusion"})
    EXPECT_TRUE(is_pass_name(n)) << n;
}

}  // namespace
}  // namespace pipec
