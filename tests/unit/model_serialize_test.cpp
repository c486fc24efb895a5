// Model graph serialization (what a model library embeds): every train block's step, evaluation and
// inference graphs in the examples and golden tests survive encode -> decode, and damaged blobs are
// refused with a message, never a crash or a graph that does not verify.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "compiler/compile/compile.h"
#include "runtime/model/model_serialize.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;

// Every graph the train blocks of the specs under `dir` compile to (recursively, skipping fail_*).
std::vector<std::pair<std::string, ModelGraph>> graphs_under(const fs::path& dir) {
  std::vector<std::pair<std::string, ModelGraph>> out;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".pipe" && e.path().filename().string().rfind("fail_", 0) != 0)
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    CompileResult r = compile(check_request(f.string()));
    for (CompiledTrain& t : r.trains) {
      const std::string what = f.string() + ":" + t.program.name;
      out.emplace_back(what + " step", t.program.step);
      out.emplace_back(what + " inference", t.program.inference);
      if (t.program.eval) out.emplace_back(what + " evaluation", t.program.eval->graph);
    }
  }
  return out;
}

TEST(ModelSerialize, RoundTripsEveryExampleAndGoldenGraph) {
  size_t n = 0;
  for (const char* dir : {"examples", "tests/lang"}) {
    for (const auto& [what, g] : graphs_under(fs::path(PIPEC_SOURCE_DIR) / dir)) {
      const std::string blob = encode_model_graph(g);
      ModelGraph back = decode_model_graph(blob, what);
      EXPECT_EQ(print_model_graph(back), print_model_graph(g)) << what;
      // The printer leaves out some fields (flat-buffer offsets, fans, links); the encodings cover all.
      EXPECT_EQ(encode_model_graph(back), blob) << what;
      ++n;
    }
  }
  // chess, segmentation and deblur alone give 9 graphs (step, inference, evaluation each).
  EXPECT_GE(n, 9u);
}

ModelGraph chess_inference() {
  CompileResult r = compile(check_request(std::string(PIPEC_SOURCE_DIR) + "/examples/chess/chess.pipe"));
  EXPECT_EQ(r.trains.size(), 1u);
  return r.trains.at(0).program.inference;
}

std::string decode_error(const std::string& blob) {
  try {
    decode_model_graph(blob, "lib.so");
  } catch (const BlobDecodeError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelSerialize, RefusesDamagedBlobs) {
  const std::string blob = encode_model_graph(chess_inference());
  EXPECT_NE(decode_error("hello").find("lib.so: not a pipec model"), std::string::npos);
  EXPECT_NE(decode_error(blob.substr(0, blob.size() / 2)).find("truncated model"), std::string::npos);
  std::string flipped = blob;
  flipped[blob.size() / 2] ^= 0x40;
  EXPECT_NE(decode_error(flipped).find("CRC32 mismatch"), std::string::npos);
  std::string version = blob;
  version[8] = 9;
  EXPECT_NE(decode_error(version).find("model format version 9 is not supported"), std::string::npos);
}

// The string `s` as the payload writes it: its u64 length, then its bytes.
std::string written(const std::string& s) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((s.size() >> (8 * i)) & 0xff));
  return out + s;
}

// Payload edits with the frame made valid again: the first string `from` becomes `to` (same length).
std::string reframed(const std::string& blob, const std::string& from, const std::string& to) {
  std::string payload = blob.substr(20, blob.size() - 24);
  const size_t at = payload.find(written(from));
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) payload.replace(at, from.size() + 8, written(to));
  const char magic[8] = {'P', 'I', 'P', 'E', 'M', 'O', 'D', 'L'};
  return frame_blob(magic, kModelFormatVersion, payload);
}

TEST(ModelSerialize, UnknownKindsAndSpellingsAreNamed) {
  const std::string blob = encode_model_graph(chess_inference());
  EXPECT_NE(decode_error(reframed(blob, "conv2d", "convxd")).find("unknown node kind `convxd`"), std::string::npos);
  EXPECT_NE(decode_error(reframed(blob, "same", "sane")).find("attribute `padding` has the unknown value `sane`"),
            std::string::npos);
  EXPECT_NE(decode_error(reframed(blob, "Conv2dAttrs", "Conv2dAttrz")).find("holds Conv2dAttrz, not Conv2dAttrs"),
            std::string::npos);
  EXPECT_EQ(decode_error(reframed(blob, "relu", "relu")), "");
}

// Corruption that keeps a valid frame gives an error or a graph that verifies, never a crash.
TEST(ModelSerialize, MutatedPayloadsFailCleanly) {
  const std::string blob = encode_model_graph(chess_inference());
  const char magic[8] = {'P', 'I', 'P', 'E', 'M', 'O', 'D', 'L'};
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto rnd = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int refused = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string payload = blob.substr(20, blob.size() - 24);
    const size_t at = rnd() % payload.size();
    const int nbytes = 1 + static_cast<int>(rnd() % 3);
    for (int k = 0; k < nbytes && at + k < payload.size(); ++k) payload[at + k] = static_cast<char>(rnd());
    try {
      ModelGraph g = decode_model_graph(frame_blob(magic, kModelFormatVersion, payload), "mutated");
      EXPECT_TRUE(verify_model_graph(g).empty());
    } catch (const BlobDecodeError&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 1000);
}

}  // namespace
}  // namespace pipec
