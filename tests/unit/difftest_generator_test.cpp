// The difftest generator draws indices and slice bounds computed at run time (tests/difftest/
// expr_generator.cpp, shape ops 11 and 12), and mixes of bools and numbers (weak literals meeting bools,
// comparisons of comparisons, twin fields folded and computed), and the specs holding them pass the
// checker, so the difftest compares them across every variant (interpreter, JIT, built library,
// chunkings) and the CUDA tests run them on the same seeds.
#include <gtest/gtest.h>

#include <iostream>
#include <regex>

#include "compiler/codegen/stage_kernel.h"
#include "compiler/compile/compile.h"
#include "compiler/front/ast_query.h"
#include "tests/difftest/compare_outputs.h"
#include "tests/difftest/spec_generator.h"

namespace pipec {
namespace {

// A generated case through the checker, as `pipec check` sees it.
CompileResult check_case(const std::string& spec) {
  CompileRequest req;
  req.path = "case.pipe";
  req.text = spec;
  req.target = CompileTarget::CheckOnly;
  return compile(req);
}

TEST(DifftestGenerator, DrawsRunTimeIndicesAndSlicesThatTheCheckerAccepts) {
  // x[..., i64((i64(r.s) % 6) - 3)] and x[((i64(r.s) % 13) - 6):...] as the generator writes them.
  const std::regex run_time_index(R"(\[(:, )*(i64|i32|i8|u8|u64)\(\(?i64\()");
  const std::regex run_time_slice(R"((\[|:)-?\(\(?i64\()");
  int indices = 0, slices = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const difftest::GeneratedCase c = difftest::generate_case(seed);
    const bool index = std::regex_search(c.spec, run_time_index), slice = std::regex_search(c.spec, run_time_slice);
    if (!index && !slice) continue;
    indices += index;
    slices += slice;
    CompileResult r = check_case(c.spec);
    std::ostringstream diags;
    r.program->diags.print(diags, false);
    EXPECT_FALSE(r.program->diags.has_errors()) << "seed " << seed << ":\n" << c.spec << diags.str();
  }
  EXPECT_GE(indices, 10);
  EXPECT_GE(slices, 10);
}

// The joining and file sources, enumerate, window, scan, rebatch, bucket_by_length, group_by_window,
// rejection_resample and pack are drawn,
// and the checker accepts every case that has one (the difftest then runs them through every variant).
TEST(DifftestGenerator, DrawsTheJoiningSourcesAndTheStructureStages) {
  int concatenate = 0, choose_from = 0, sample_from = 0, enumerate = 0, window = 0, scan = 0, rebatch = 0;
  int text_lines = 0, fixed_length = 0, buckets = 0, groups = 0, packs = 0, resamples = 0, flat_maps = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const difftest::GeneratedCase c = difftest::generate_case(seed);
    const bool a = c.spec.find("concatenate(") != std::string::npos;
    const bool b = c.spec.find("choose_from(") != std::string::npos;
    const bool e = c.spec.find("enumerate(") != std::string::npos;
    const bool s = c.spec.find("sample_from(") != std::string::npos;
    const bool w = c.spec.find("| window(") != std::string::npos;  // not group_by_window
    const bool sc = c.spec.find("scan(") != std::string::npos;
    const bool rb = c.spec.find("rebatch(") != std::string::npos;
    const bool tl = c.spec.find("text_lines(") != std::string::npos;
    const bool fl = c.spec.find("fixed_length_records(") != std::string::npos;
    const bool bl = c.spec.find("bucket_by_length(") != std::string::npos;
    const bool gw = c.spec.find("group_by_window(") != std::string::npos;
    const bool pk = c.spec.find("| pack(") != std::string::npos;
    const bool rr = c.spec.find("rejection_resample(") != std::string::npos;
    const bool fm =
        c.spec.find("flat_map(r =>") != std::string::npos || c.spec.find("interleave(r =>") != std::string::npos;
    if (!a && !b && !e && !s && !w && !sc && !rb && !tl && !fl && !bl && !gw && !pk && !rr && !fm) continue;
    resamples += rr;
    flat_maps += fm;
    packs += pk;
    buckets += bl;
    groups += gw;
    text_lines += tl;
    fixed_length += fl;
    sample_from += s;
    window += w;
    scan += sc;
    rebatch += rb;
    concatenate += a;
    choose_from += b;
    enumerate += e;
    CompileResult r = check_case(c.spec);
    std::ostringstream diags;
    r.program->diags.print(diags, false);
    EXPECT_FALSE(r.program->diags.has_errors()) << "seed " << seed << ":\n" << c.spec << diags.str();
  }
  EXPECT_GE(concatenate, 10);
  EXPECT_GE(buckets, 10);
  EXPECT_GE(groups, 10);
  EXPECT_GE(packs, 10);
  EXPECT_GE(resamples, 10);
  EXPECT_GE(choose_from, 10);
  EXPECT_GE(enumerate, 10);
  EXPECT_GE(sample_from, 10);
  EXPECT_GE(window, 10);
  EXPECT_GE(scan, 10);
  EXPECT_GE(rebatch, 10);
  EXPECT_GE(text_lines, 10);
  EXPECT_GE(fixed_length, 10);
  EXPECT_GE(flat_maps, 10);
}

bool is_literal(const Expr& e) {
  return e.kind == ExprKind::IntLit || e.kind == ExprKind::FloatLit || e.kind == ExprKind::BoolLit ||
         (e.kind == ExprKind::Unary && is_literal(*e.as<UnaryExpr>()->operand));
}

TEST(DifftestGenerator, DrawsMixesOfBoolsAndNumbersButNoChainedComparisons) {
  struct Counts {
    int twins = 0, weak_with_bool = 0, bool_with_number = 0, comparison_of_comparison = 0;
  } n;
  const std::string folded = std::string(difftest::kFoldedSuffix) + ": ";
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const difftest::GeneratedCase c = difftest::generate_case(seed);
    for (size_t at = c.spec.find(folded); at != std::string::npos; at = c.spec.find(folded, at + 1)) ++n.twins;
    CompileResult r = check_case(c.spec);
    std::ostringstream diags;
    r.program->diags.print(diags, false);
    // A chain of comparisons would be `chained_comparison`: the generator parenthesizes every operator.
    ASSERT_FALSE(r.program->diags.has_errors()) << "seed " << seed << ":\n" << c.spec << diags.str();
    for (const auto& d : r.program->main().decls)
      walk_exprs(*d, [&](const Expr& e) {
        if (e.kind != ExprKind::Binary) return;
        const auto& b = *e.as<BinaryExpr>();
        const Type &lt = b.lhs->type, &rt = b.rhs->type;
        if (!lt.is_tensor() || !rt.is_tensor()) return;
        const bool lb = lt.dtype == DType::Bool, rb = rt.dtype == DType::Bool;
        if (lb != rb && lt.dtype != DType::Bytes && rt.dtype != DType::Bytes) ++n.bool_with_number;
        if ((lb && !is_literal(*b.lhs) && is_literal(*b.rhs)) || (rb && !is_literal(*b.rhs) && is_literal(*b.lhs)))
          ++n.weak_with_bool;
        auto comparison = [](const Expr& x) {
          return x.kind == ExprKind::Binary && is_comparison(x.as<BinaryExpr>()->op);
        };
        if (is_comparison(b.op) && (comparison(*b.lhs) || comparison(*b.rhs))) ++n.comparison_of_comparison;
      });
  }
  EXPECT_GE(n.twins, 150);
  EXPECT_GE(n.weak_with_bool, 100);
  EXPECT_GE(n.bool_with_number, 200);
  EXPECT_GE(n.comparison_of_comparison, 25);
  std::cout << "[ counts ] over 200 seeds: " << n.twins << " twin pairs, " << n.weak_with_bool
            << " literals beside a bool, " << n.bool_with_number << " bools beside a number, "
            << n.comparison_of_comparison << " comparisons of comparisons\n";
}

// A map with a filter right after it is drawn often enough that the optimizer fuses many of them into
// map_filter stages whose functions lower to loop nests: the difftest then compares their JIT kernels
// (and `pipec build`'s) with the interpreter's map and filter.
TEST(DifftestGenerator, DrawsMapsWithAFilterAfterThemThatFuseAndCompile) {
  int fused = 0, compilable = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const difftest::GeneratedCase c = difftest::generate_case(seed);
    CompileRequest req;
    req.path = "case.pipe";
    req.text = c.spec;
    req.target = CompileTarget::EveryPipeline;
    req.options.passes.opt_level = 1;
    req.options.cpu_kernels = CpuKernels::None;
    CompileResult r = compile(req);
    ASSERT_TRUE(r.ok()) << "seed " << seed << ":\n" << c.spec << r.error;
    for (const CompiledPipeline& p : r.pipelines)
      for (size_t i = 0; i < p.plan.stages.size(); ++i) {
        if (p.plan.stages[i].kind != StageKind::MapFilter) continue;
        ++fused;
        codegen::LoopNest nest;
        std::string why;
        compilable += codegen::stage_loop_nest(p.plan, static_cast<int>(i), nest, why) ? 1 : 0;
      }
  }
  EXPECT_GE(fused, 40);
  EXPECT_GE(compilable, 20);
  std::cout << "[ counts ] over 200 seeds: " << fused << " map_filter stages, " << compilable << " compilable\n";
}

}  // namespace
}  // namespace pipec
