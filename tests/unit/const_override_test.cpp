// `-D NAME=VALUE` in the checker (CheckOptions::const_overrides): the value replaces the const's before
// anything reads it, is checked against the const's type, and every mistake is a diagnostic that
// points into the `<command line>` text.
#include <gtest/gtest.h>

#include <sstream>

#include "compiler/sema/program.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/compile_util.h"

namespace pipec {
namespace {

std::unique_ptr<Program> check_with(const std::string& text, std::vector<ConstOverride> overrides,
                                    const std::string& path = "spec.pipe") {
  CheckOptions o;
  o.const_overrides = std::move(overrides);
  return check_text(path, text, o);
}

std::string diagnostics(const Program& p) {
  std::ostringstream out;
  p.diags.print(out, false);
  return out.str();
}

const Value& const_value(const Program& p, const std::string& name) { return *p.global(name)->value->constant; }

TEST(ConstOverride, ReplacesTheValueAndWhatIsComputedFromIt) {
  auto p = check_with(
      "const BATCH = 512\nconst HALF = BATCH // 2\nconst LR = 0.5\nconst NAME = \"a\"\n"
      "pipeline q = range(HALF) | batch(BATCH) | map(r => { v: f32(r.value) * LR, n: NAME })\n",
      {{"BATCH", "8 * 8"}, {"LR", "2"}, {"NAME", "\"b\\\"c\""}});
  ASSERT_FALSE(p->diags.has_errors()) << diagnostics(*p);
  EXPECT_EQ(const_value(*p, "BATCH").i, 64);
  EXPECT_EQ(const_value(*p, "HALF").i, 32);
  // An untyped integer given to a float const becomes a float of the const's dtype.
  EXPECT_EQ(const_value(*p, "LR").kind, Value::Float);
  EXPECT_EQ(const_value(*p, "LR").f, 2.0);
  EXPECT_EQ(const_value(*p, "NAME").s, "b\"c");
}

TEST(ConstOverride, ShapesFollowTheNewValue) {
  const std::string spec =
      "const N = 3\nconst BATCH = 4\n"
      "fn pad(x: f32[N]) -> f32[N] = x + 1.0\n"
      "pipeline p = range(100) | map(r => { x: pad(f32([1, 2, 3, 4, 5][0:N]) * f32(r.value)) })\n"
      "  | batch(BATCH, drop_remainder = true)\n";
  CompileOptions o = testing::lowered_only();
  o.check.const_overrides = {{"N", "5"}, {"BATCH", "10"}};
  Plan plan = testing::compiled_plan(spec, "p", o);
  ASSERT_FALSE(plan.stages.empty());
  EXPECT_EQ(type_to_string(*plan.stages.back().element.fields.at(0).type), "f32[10, 5]");
  Plan plain = testing::compiled_plan(spec, "p");
  EXPECT_EQ(type_to_string(*plain.stages.back().element.fields.at(0).type), "f32[4, 3]");
}

TEST(ConstOverride, TheSpecsOwnValueIsStillChecked) {
  auto p = check_with("const A = 1 // 0\npipeline q = range(A)\n", {{"A", "3"}});
  EXPECT_TRUE(p->diags.has_errors());
  EXPECT_NE(diagnostics(*p).find("spec.pipe:1:16: error[division_by_zero]"), std::string::npos) << diagnostics(*p);
}

TEST(ConstOverride, AValueOfAnotherTypeIsATypeMismatchAtTheCommandLine) {
  auto p = check_with("const N: i32 = 8\npipeline q = range(N)\n", {{"N", "i64(9)"}});
  std::string d = diagnostics(*p);
  EXPECT_NE(
      d.find("<command line>:1:6: error[type_mismatch]: const `N` is i32, but `-D N` gives it a value of type i64"),
      std::string::npos)
      << d;
  EXPECT_NE(d.find("spec.pipe:1:10: note: the type of `N` comes from here"), std::string::npos) << d;
  auto ok = check_with("const N: i32 = 8\npipeline q = range(N)\n", {{"N", "i32(9)"}});
  EXPECT_FALSE(ok->diags.has_errors()) << diagnostics(*ok);
  EXPECT_EQ(const_value(*ok, "N").i, 9);
}

TEST(ConstOverride, ValuesThatAreNotConstantsOrRefersToItself) {
  auto random =
      check_with("const N = [1.0, 2.0]\npipeline q = range(3) | map(r => { x: N })\n", {{"N", "random_uniform([2])"}});
  EXPECT_NE(diagnostics(*random).find("error[not_constant]: the value of `-D N` is not known at compile time"),
            std::string::npos)
      << diagnostics(*random);
  auto self = check_with("const N = 3\npipeline q = range(N)\n", {{"N", "N + 1"}});
  EXPECT_NE(diagnostics(*self).find("<command line>:1:6: error[recursive_definition]: const `N` refers to itself"),
            std::string::npos)
      << diagnostics(*self);
  // Other consts are fine.
  auto other = check_with("const M = 5\nconst N = 3\npipeline q = range(N)\n", {{"N", "M * 2"}});
  EXPECT_FALSE(other->diags.has_errors()) << diagnostics(*other);
  EXPECT_EQ(const_value(*other, "N").i, 10);
}

TEST(ConstOverride, OnlyTheConstsOfTheSpecItselfCanBeSet) {
  testing::ScratchDir d;
  testing::write_file(d / "lib.pipe", "const DEPTH = 4\n");
  auto p = check_with("import \"lib.pipe\"\npipeline q = range(DEPTH)\n", {{"DEPTH", "2"}}, (d / "spec.pipe").string());
  std::string text = diagnostics(*p);
  EXPECT_NE(text.find("error[unknown_const_override]: the spec declares no const `DEPTH`"), std::string::npos) << text;
  EXPECT_NE(text.find("note: `DEPTH` is declared in an imported file"), std::string::npos) << text;
}

TEST(ConstOverride, WithoutOverridesNothingChanges) {
  auto p = check_with("const BATCH = 512\npipeline q = range(10) | batch(BATCH)\n", {});
  EXPECT_FALSE(p->diags.has_errors());
  EXPECT_EQ(const_value(*p, "BATCH").i, 512);
  EXPECT_TRUE(p->const_overrides.empty());
}

}  // namespace
}  // namespace pipec
