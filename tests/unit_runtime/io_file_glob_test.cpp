#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "runtime/io/errors.h"
#include "runtime/io/file_glob.h"
#include "tests/unit_runtime/io_test_util.h"

namespace pipec {
namespace {

using testing::ScratchDir;

TEST(IoFileGlob, SortedMatchesWithoutDirectories) {
  ScratchDir dir;
  for (const char* f : {"b.rec", "a.rec", "c.txt", "B.rec", "a10.rec", "a2.rec"}) testing::write_file(dir.file(f), "x");
  std::filesystem::create_directory(dir.file("d.rec"));
  EXPECT_EQ(expand_glob(dir.file("*.rec")),
            (std::vector<std::string>{dir.file("B.rec"), dir.file("a.rec"), dir.file("a10.rec"), dir.file("a2.rec"),
                                      dir.file("b.rec")}));  // bytewise order
  EXPECT_EQ(expand_glob(dir.file("?.txt")), std::vector<std::string>{dir.file("c.txt")});
  EXPECT_EQ(expand_glob(dir.file("[ab].rec")), (std::vector<std::string>{dir.file("a.rec"), dir.file("b.rec")}));
}

TEST(IoFileGlob, NoMatchIsNotFoundNamingThePattern) {
  ScratchDir dir;
  std::string pattern = dir.file("*.tfrecord");
  try {
    expand_glob(pattern);
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(e.kind(), DataError::Kind::NotFound);
    EXPECT_EQ(std::string(e.what()), pattern + ": no file matches the pattern");
  }
  // A pattern matching only a directory matches no file.
  std::filesystem::create_directory(dir.file("only_dir.tfrecord"));
  EXPECT_THROW(expand_glob(pattern), DataError);
}

TEST(IoFileGlob, PlainPaths) {
  ScratchDir dir;
  testing::write_file(dir.file("plain.rec"), "x");
  EXPECT_EQ(expand_glob(dir.file("plain.rec")), std::vector<std::string>{dir.file("plain.rec")});
  try {
    expand_glob(dir.file("missing.rec"));
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(e.kind(), DataError::Kind::NotFound);
    EXPECT_NE(std::string(e.what()).find(dir.file("missing.rec")), std::string::npos) << e.what();
  }
  try {
    expand_glob(dir.path());
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(e.kind(), DataError::Kind::InvalidArgument);
  }
  EXPECT_THROW(expand_glob(""), DataError);
}

TEST(IoFileGlob, LiteralPathWithGlobCharacters) {
  ScratchDir dir;
  testing::write_file(dir.file("data[1].rec"), "x");
  EXPECT_EQ(expand_glob(dir.file("data[1].rec")), std::vector<std::string>{dir.file("data[1].rec")});
}

TEST(IoFileGlob, SharedTestData) {
  std::vector<std::string> gz = expand_glob(std::string(PIPEC_SHARED_DIR) + "/testdata/external/tfrecord/*.gz");
  ASSERT_EQ(gz.size(), 3u);
  EXPECT_NE(gz[0].find("tfx_next_page"), std::string::npos);
  EXPECT_NE(gz[2].find("tfx_taxi_eval_00000"), std::string::npos);
}

TEST(IoFileGlob, ExpandGlobsKeepsPatternOrder) {
  ScratchDir dir;
  for (const char* f : {"x1", "x2", "y1"}) testing::write_file(dir.file(f), "");
  EXPECT_EQ(expand_globs({dir.file("y*"), dir.file("x*")}),
            (std::vector<std::string>{dir.file("y1"), dir.file("x1"), dir.file("x2")}));
  EXPECT_THROW(expand_globs({dir.file("x*"), dir.file("z*")}), DataError);
}

}  // namespace
}  // namespace pipec
