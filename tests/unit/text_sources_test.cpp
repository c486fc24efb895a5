// text_lines and fixed_length_records: lines across the stream's buffer, compressed files, errors
// naming the file, and resuming from a checkpoint after every element (in a file, at a file's end, in
// the next, compressed or not) continuing exactly. (tf.data's output for the same files is pinned by
// the conformance fixtures text_lines_* and fixed_length_records_*.)
#include <gtest/gtest.h>

#include "runtime/io/output_stream.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/stage_run_util.h"

namespace pipec {
namespace {

using testing::Elements;
using testing::ScratchDir;
using testing::write_file;

void write_compressed(const std::filesystem::path& p, const std::string& data, Compression c) {
  auto out = create_compressing_stream(create_file_stream(p.string()), c);
  out->write(data.data(), data.size());
  out->finish(false);
}

Elements run(const std::string& pipeline) { return testing::run_plan_text(testing::optimized_plan(pipeline), 3); }

std::string quoted(const std::filesystem::path& p) { return "\"" + p.string() + "\""; }

TEST(TextLines, LinesLongerThanTheStreamsBufferAndCompressedFiles) {
  ScratchDir d;
  // A line of 600 KB crosses the 256 KB read buffer twice.
  const std::string long_line(600 << 10, 'x');
  write_file(d / "a.txt", "first\n" + long_line + "\r\nlast");
  write_compressed(d / "b.txt", "gz 1\ngz 2\n", Compression::Gzip);
  const Elements plain = run("text_lines(" + quoted(d / "a.txt") + ") | map(r => { n: size(r.line) })");
  EXPECT_EQ(plain, (Elements{"n=5", "n=614400", "n=4"}));  // a byte string's size is its length
  EXPECT_EQ(run("text_lines(" + quoted(d / "b.txt") + ", compression = gzip)"),
            (Elements{"line=\"gz 1\"", "line=\"gz 2\""}));
  // The long line arrives whole, without its "\r".
  Plan plan = testing::optimized_plan("text_lines(" + quoted(d / "a.txt") + ")");
  PipelineRun r(plan, testing::run_options(8));
  Chunk c;
  ASSERT_TRUE(r.next(c));
  ASSERT_EQ(c.rows, 3);
  EXPECT_EQ(column_row(c.columns[0], 1).str(0), long_line);
  EXPECT_EQ(column_row(c.columns[0], 2).str(0), "last");
}

TEST(TextLines, AMissingPatternNamesIt) {
  try {
    run("text_lines(\"/nonexistent-dir/*.txt\")");
    FAIL() << "no error";
  } catch (const StageError& e) {
    EXPECT_EQ(e.stage_op(), "text_lines");
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/*.txt"), std::string::npos) << e.what();
  }
}

TEST(FixedLengthRecords, RecordsAreBytesBetweenHeaderAndFooter) {
  ScratchDir d;
  write_file(d / "a.bin", std::string("HH\x01\x02\x03\xff\x00\x07"
                                      "F",
                                      9));
  EXPECT_EQ(run("fixed_length_records(" + quoted(d / "a.bin") +
                ", record_bytes = 3, header_bytes = 2, footer_bytes = 1) | map(r => { v: i64(r.record) })"),
            (Elements{"v=[1,2,3]", "v=[255,0,7]"}));
  // A file shorter than its header and footer, and a body that is not whole records.
  write_file(d / "short.bin", "HH");
  write_file(d / "odd.bin", "HHabcdF");
  for (const char* file : {"short.bin", "odd.bin"}) {
    SCOPED_TRACE(file);
    try {
      run("fixed_length_records(" + quoted(d / file) + ", record_bytes = 3, header_bytes = 2, footer_bytes = 1)");
      FAIL() << "no error";
    } catch (const StageError& e) {
      EXPECT_EQ(e.stage_op(), "fixed_length_records");
      EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
    }
  }
}

TEST(TextSources, ResumeAfterEveryElementContinuesExactly) {
  ScratchDir d;
  write_file(d / "a.txt", "one\ntwo\r\n\nthree");
  write_file(d / "b.txt", "");
  write_compressed(d / "c.txt", "four\nfive\n", Compression::Zlib);
  write_file(d / "r1.bin", "HH" + std::string("abcdefgh") + "F");
  write_compressed(d / "r2.bin", "HH" + std::string("ijklmnopqrst") + "F", Compression::Gzip);
  const std::vector<std::string> cases = {
      "text_lines(" + quoted(d / "[ab].txt") + ")",
      "text_lines(" + quoted(d / "c.txt") + ", compression = zlib) | repeat(2)",
      "fixed_length_records(" + quoted(d / "r1.bin") + ", record_bytes = 4, header_bytes = 2, footer_bytes = 1)",
      "fixed_length_records(" + quoted(d / "r2.bin") +
          ", record_bytes = 4, header_bytes = 2, footer_bytes = 1, compression = gzip) | repeat(2)",
  };
  for (const std::string& pipeline : cases) {
    SCOPED_TRACE(pipeline);
    testing::expect_resumes_after_every_element(testing::optimized_plan(pipeline));
  }
}

}  // namespace
}  // namespace pipec
