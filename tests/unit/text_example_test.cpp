// examples/text: its two pipelines run on the committed corpora and their summaries give the padding
// bucket_by_length saves against padded_batch and pack's packing efficiency. The figures are what
// TensorFlow computes for the same pipeline (sample_from_datasets with the seed, the tf.strings ops,
// bucket_by_sequence_length and padded_batch: 17,084 tokens; 22,480 slots bucketed, 74,260 padded).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

const std::string kSpec = std::string(PIPEC_SOURCE_DIR) + "/examples/text/text.pipe";

TEST(TextExample, BucketsSaveThePaddingOfPaddedBatch) {
  testing::ScratchDir d;
  auto r = testing::run_pipec({"run", kSpec, "--pipeline", "buckets", "--stats-json", (d / "s.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 800 lines, one of them empty and filtered out.
  EXPECT_NE(r.err.find("pipeline buckets: 52 batches (799 examples)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("padding     #4 bucket_by_length: 24.0% of 22,480 token slots are padding; padded_batch(16) "
                       "would pad 77.0% of 74,260: 51,780 padding slots saved (90.6%)"),
            std::string::npos)
      << r.err;
  const auto json = nlohmann::json::parse(testing::read_all(d / "s.json"));
  const auto& padding = json.at("stages").at(4).at("padding");
  EXPECT_EQ(padding.at("tokens"), 17084);
  EXPECT_EQ(padding.at("slots"), 22480);
  EXPECT_EQ(padding.at("padded_batch_slots"), 74260);
  EXPECT_EQ(padding.at("slots_saved"), 51780);
}

TEST(TextExample, PackFillsItsRowsAlmostEntirely) {
  auto r = testing::run_pipec({"run", kSpec, "--pipeline", "packed"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("pipeline packed: 9 batches (136 examples)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("packing     #4 pack: 98.1% of 17,408 token slots hold tokens (136 rows of 128)"),
            std::string::npos)
      << r.err;
}

// A line that is not token ids stops the run, naming the map, the op, the element and the text.
TEST(TextExample, ALineThatIsNotTokenIdsIsAnErrorNamingIt) {
  testing::ScratchDir d;
  std::string spec = testing::read_all(kSpec);
  testing::write_file(d / "text.pipe", spec);
  std::filesystem::create_directories(d / "corpus");
  testing::write_file(d / "corpus/chat.txt", "1 2 3\n4 five 6\n");
  testing::write_file(d / "corpus/docs.txt", "");
  auto r = testing::run_pipec({"run", (d / "text.pipe").string(), "--pipeline", "buckets"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("to_number: element 1: string [1] \"five\" is not a number of type i64"), std::string::npos)
      << r.err;
  // map and filter run as one fused stage.
  EXPECT_NE(r.err.find("text.pipe:17:5: map_filter: " + (d / "text.pipe").string() + ":17:21: to_number"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace pipec
