// `pipec run` on a model with an embedding, end to end: integer ids from the pipeline train a table
// that fits a function of the ids, the saved weights carry Keras' names and layout, `--init` reads them
// back, and an id outside the table stops the run naming the layer, the example and the id.
#include <gtest/gtest.h>

#include <regex>

#include "runtime/train/persist/safetensors.h"
#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

using testing::read_all;
using testing::run_pipec;
using testing::ScratchDir;
using testing::write_file;
namespace fs = std::filesystem;

// y depends on each of three ids, drawn from [0, hi): a table of 7 rows fits it exactly (through the
// dense layer), so the loss falls to almost nothing. The ids reach the model as i32, a cast to i64 in
// the step graph.
std::string spec(int hi) {
  return "pipeline data = range(2048)\n"
         "  | map(r => {\n"
         "      ids = random_int([3], 0, " +
         std::to_string(hi) +
         ", seed = 1)\n"
         "      { ids: i32(ids), y: [0.5 * f32(ids[0]) - f32(ids[1] % 3) + f32(ids[2] * ids[2]) * 0.1] }\n"
         "    })\n"
         "  | batch(32, drop_remainder = true)\n"
         "model net(ids: i32[3]) -> f32[1] { ids | embedding(7, 4) | flatten | dense(1) }\n"
         "train fit = { data = data, model = net(ids), loss = mse(y), optimizer = adam(lr = 0.05), epochs = 4 }\n";
}

std::vector<double> losses_of(const fs::path& json) {
  const std::string text = read_all(json);
  std::smatch m;
  EXPECT_TRUE(std::regex_search(text, m, std::regex(R"("losses": \[([^\]]*)\])"))) << text;
  std::vector<double> out;
  const std::string body = m[1];
  const std::regex number(R"([-0-9.eE+]+|nan|inf)");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), number); it != std::sregex_iterator(); ++it)
    out.push_back(std::stod(it->str()));
  return out;
}

TEST(TrainEmbeddingRun, LearnsAFunctionOfTheIdsAndSavesKerasNames) {
  ScratchDir d;
  write_file(d / "e.pipe", spec(7));
  for (const char* executor : {"fast", "reference"}) {
    SCOPED_TRACE(executor);
    const fs::path json = d / (std::string(executor) + ".json"), weights = d / (std::string(executor) + ".st");
    auto r = run_pipec({"run", (d / "e.pipe").string(), "--executor", executor, "--stats-json", json.string(), "--save",
                        weights.string(), "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<double> losses = losses_of(json);
    ASSERT_EQ(losses.size(), 256u);  // 64 batches an epoch, 4 epochs
    double last = 0;
    for (size_t i = losses.size() - 16; i < losses.size(); ++i) last += losses[i] / 16;
    EXPECT_GT(losses.front(), 0.3);
    EXPECT_LT(last, 0.01 * losses.front()) << "first " << losses.front() << ", mean of the last 16 " << last;
    // The table as Keras names and lays it out: `embedding/embeddings` [input_dim, output_dim].
    SafetensorsFile f = read_safetensors(weights.string());
    ASSERT_TRUE(f.tensors.count("embedding/embeddings")) << "saved: " << f.tensors.size() << " tensors";
    EXPECT_EQ(f.tensors.at("embedding/embeddings").shape, (Shape{7, 4}));
    EXPECT_EQ(f.tensors.at("dense/kernel").shape, (Shape{12, 1}));
  }
  // The saved table starts a new run where the first ended.
  auto again = run_pipec({"run", (d / "e.pipe").string(), "--steps", "5", "--init", (d / "fast.st").string(),
                          "--stats-json", (d / "again.json").string(), "-q"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_LT(losses_of(d / "again.json").front(), 0.05 * losses_of(d / "fast.json").front());
}

// An id the table has no row for (7 with input_dim = 7) stops the run at its step, naming the layer.
TEST(TrainEmbeddingRun, AnIdOutsideTheTableStopsNamingTheLayer) {
  ScratchDir d;
  write_file(d / "e.pipe", spec(8));
  for (const char* executor : {"fast", "reference"}) {
    SCOPED_TRACE(executor);
    auto r = run_pipec({"run", (d / "e.pipe").string(), "--executor", executor, "-q"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(step 1: embedding layer `embedding`: example \d+ of the batch )"
                                                    R"(has id 7 \(position \d of the example\), not one of 0\.\.6 )"
                                                    R"(\(input_dim = 7\))")))
        << r.err;
  }
}

}  // namespace
}  // namespace pipec
