// pack: first-fit rows with their segment_ids and positions on small inputs, rows_open and truncate,
// its run-time errors, the same rows whatever the threads and chunk sizes, resuming from a checkpoint
// after every row continuing exactly as the run that never stopped, and its packing efficiency in the
// run summary. (The conformance fixtures pack_* pin more cases against make_pack_fixtures.py's model.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/unit/cli_util.h"
#include "tests/unit/stage_run_util.h"

namespace pipec {
namespace {

using testing::Elements;

Elements run(const std::string& pipeline) { return testing::run_plan_text(testing::optimized_plan(pipeline), 3); }

// Examples 0, 1, ... of the given lengths; example i's tokens are i * 10, i * 10 + 1, ...
std::string examples(const std::string& lengths, int n) {
  return "range(" + std::to_string(n) + ") | map(r => { t: ([0, 1, 2, 3, 4, 5, 6, 7] + r.value * 10)[0:[" + lengths +
         "][r.value]] })";
}

TEST(Pack, FirstFitRowsWithSegmentIdsAndPositions) {
  // 3 + 2 fill the first row, which goes out at once; 4 + 1 the second; 2 is left open and padded.
  EXPECT_EQ(run(examples("3, 2, 4, 1, 2", 5) + " | pack(length = 5, fields = [\"t\"], rows_open = 2)"),
            (Elements{"t=[0,1,2,10,11] segment_ids=[1,1,1,2,2] positions=[0,1,2,0,1]",
                      "t=[20,21,22,23,30] segment_ids=[1,1,1,1,2] positions=[0,1,2,3,0]",
                      "t=[40,41,0,0,0] segment_ids=[1,1,0,0,0] positions=[0,1,0,0,0]"}));
  // Two open rows: the third example fills the older one, which goes out before the newer.
  EXPECT_EQ(run(examples("3, 3, 2", 3) + " | pack(length = 5, fields = [\"t\"], rows_open = 2)"),
            (Elements{"t=[0,1,2,20,21] segment_ids=[1,1,1,2,2] positions=[0,1,2,0,1]",
                      "t=[10,11,12,0,0] segment_ids=[1,1,1,0,0] positions=[0,1,2,0,0]"}));
  // One open row: the second example does not fit, so the first row goes out half empty.
  EXPECT_EQ(run(examples("3, 3, 2", 3) + " | pack(length = 5, fields = [\"t\"], rows_open = 1)"),
            (Elements{"t=[0,1,2,0,0] segment_ids=[1,1,1,0,0] positions=[0,1,2,0,0]",
                      "t=[10,11,12,20,21] segment_ids=[1,1,1,2,2] positions=[0,1,2,0,1]"}));
  // An example of exactly a row goes out at once without pushing the open row out; empty ones are skipped.
  EXPECT_EQ(run(examples("2, 0, 4, 1", 4) + " | pack(length = 4, fields = [\"t\"], rows_open = 1)"),
            (Elements{"t=[20,21,22,23] segment_ids=[1,1,1,1] positions=[0,1,2,3]",
                      "t=[0,1,30,0] segment_ids=[1,1,2,0] positions=[0,1,0,0]"}));
  EXPECT_TRUE(run(examples("1", 0) + " | pack(length = 4, fields = [\"t\"])").empty());
}

TEST(Pack, PacksSeveralFieldsSideBySideAndTruncates) {
  EXPECT_EQ(run(examples("2, 6, 1", 3) + " | map(r => { t: r.t, w: f32(r.t) * 0.5 }) | pack(length = 4, fields = "
                                         "[\"w\", \"t\"], truncate = true)"),
            (Elements{"t=[10,11,12,13] w=[5,5.5,6,6.5] segment_ids=[1,1,1,1] positions=[0,1,2,3]",
                      "t=[0,1,20,0] w=[0,0.5,10,0] segment_ids=[1,1,2,0] positions=[0,1,0,0]"}));
  // Bools pack like numbers, padded with false.
  EXPECT_EQ(run(examples("2, 3", 2) + " | map(r => { t: r.t, m: r.t > 10 }) | pack(length = 4, fields = [\"t\", "
                                      "\"m\"]) | map(r => { m: i64(r.m) })"),
            (Elements{"m=[0,0,0,0]", "m=[0,1,1,0]"}));
}

void expect_stage_error(const std::string& pipeline, const std::string& message) {
  try {
    run(pipeline);
    FAIL() << "no error";
  } catch (const StageError& e) {
    EXPECT_EQ(e.stage_op(), "pack");
    EXPECT_EQ(e.spec_location().rfind("test.pipe:1:", 0), 0u) << e.spec_location();
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(Pack, AnExampleLongerThanARowOrFieldsOfTwoLengthsAreErrorsNamingTheStage) {
  expect_stage_error(examples("2, 6, 1", 3) + " | pack(length = 5, fields = [\"t\"])",
                     "element 1 is 6 tokens long, longer than a row of 5 (truncate = true keeps its first 5 tokens)");
  expect_stage_error(
      "range(3) | map(r => { a: [1, 2, 3][0:r.value], b: [1, 2, 3][0:2] }) | pack(length = 5, fields "
      "= [\"a\", \"b\"])",
      "element 0: field `b` has 2 tokens but `a` has 0; the fields packed together must be equally "
      "long");
}

TEST(Pack, ThreadsAndChunkSizesDoNotChangeTheRows) {
  const Plan plan = testing::optimized_plan(
      "range(300) | map(r => { t: ([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19] + r.value * "
      "100)[0:i64(random_uniform([], seed = 5) * 20.0)] }) | pack(length = 32, fields = [\"t\"], rows_open = 4) | "
      "map(r => { t: r.t, segment_ids: r.segment_ids, u: random_uniform([]) })");
  const Elements want = testing::run_plan_text(plan, 1, 1);
  ASSERT_GT(want.size(), 50u);
  EXPECT_EQ(testing::run_plan_text(plan, 7, 4), want);
  EXPECT_EQ(testing::run_plan_text(plan, 1000, 2), want);
}

TEST(Pack, ResumeAfterEveryRowContinuesExactly) {
  const std::vector<std::string> cases = {
      examples("3, 5, 2, 6, 1, 4, 4, 2, 7, 1, 3", 11) + " | pack(length = 8, fields = [\"t\"], rows_open = 3)",
      examples("3, 5, 2, 6, 1, 4, 4, 2", 8) +
          " | repeat(3) | pack(length = 7, fields = [\"t\"], rows_open = 2) | "
          "map(r => { t: r.t, positions: r.positions, u: random_uniform([]) })",
      examples("8, 1, 8, 2, 2, 8", 6) +
          " | map(r => { t: r.t, w: f32(r.t) }) | pack(length = 6, fields = [\"t\", "
          "\"w\"], rows_open = 1, truncate = true)",
  };
  for (const std::string& pipeline : cases) {
    SCOPED_TRACE(pipeline);
    testing::expect_resumes_after_every_element(testing::optimized_plan(pipeline));
  }
}

TEST(Pack, TheRunSummaryGivesThePackingEfficiency) {
  testing::ScratchDir d;
  // Rows of 5: [3 + 2], [4 + 1], [2]: 12 tokens in 15 slots.
  testing::write_file(d / "p.pipe",
                      "pipeline p = " + examples("3, 2, 4, 1, 2", 5) + " | pack(length = 5, fields = [\"t\"])\n");
  auto r = testing::run_pipec({"run", (d / "p.pipe").string(), "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("packing     #2 pack: 80.0% of 15 token slots hold tokens (3 rows of 5)"), std::string::npos)
      << r.err;
  const auto json = nlohmann::json::parse(testing::read_all(d / "s.json"));
  const auto& pack = json.at("stages").at(2);
  ASSERT_EQ(pack.at("op"), "pack");
  EXPECT_EQ(pack.at("packing").at("tokens"), 12);
  EXPECT_EQ(pack.at("packing").at("slots"), 15);
  EXPECT_DOUBLE_EQ(pack.at("packing").at("efficiency").get<double>(), 0.8);
  EXPECT_FALSE(json.at("stages").at(1).contains("packing"));
}

}  // namespace
}  // namespace pipec
