// Completion offers what the checker would accept at the cursor, in each place a name can be written:
// ops, fns and casts on a tensor, stages on a dataset, sources at the head of a pipeline, layers (before
// ops) in a model, train entries and what each takes, option words, names in scope. Hover and go to
// definition read the same decisions (the builtin the checker chose, the types of a misspelt stage's
// function literal).
#include <gtest/gtest.h>

#include <set>

#include "compiler/sema/builtins.h"
#include "runtime/core/dtype.h"
#include "tests/unit/lsp_test_client.h"

namespace pipec::lsp {
namespace {

using namespace test_client;
using Labels = std::vector<std::string>;
using LabelSet = std::set<std::string>;

/// The completion labels at (line, character) of `text`, in the order offered.
Labels complete(const std::string& text, int line, int character) {
  Client c;
  c.initialize();
  c.open(text);
  return labels(c.request("textDocument/completion", at(line, character)));
}

LabelSet set_of(const Labels& l) { return LabelSet(l.begin(), l.end()); }

LabelSet registry(std::initializer_list<BuiltinKind> kinds) {
  std::vector<std::string> names = builtin_names(kinds);
  return LabelSet(names.begin(), names.end());
}

/// Every cast a numeric tensor accepts (bytes converts only to bytes).
LabelSet numeric_casts() {
  LabelSet out;
#define PIPEC_DTYPE_WORD(name, text, size) \
  if (DType::name != DType::Bytes) out.insert(text);
  PIPEC_DTYPES(PIPEC_DTYPE_WORD)
#undef PIPEC_DTYPE_WORD
  return out;
}

LabelSet operator+(LabelSet a, const LabelSet& b) {
  a.insert(b.begin(), b.end());
  return a;
}

// The report: completion right after `| ` on a tensor in a map body offered the stages.
const char* kTensorPipe =
    "source s = range(10)\n"                    // 0
    "\n"                                        // 1
    "pipeline p = s\n"                          // 2
    "  | map(r => { t = f32(r.value) | tanh\n"  // 3: `tanh` starts at 34
    "    { t } })\n";                           // 4

TEST(LspCompletion, OpsAndCastsOnATensorInAMapBody) {
  LabelSet want = registry({BuiltinKind::Op}) + numeric_casts();
  EXPECT_EQ(set_of(complete(kTensorPipe, 3, 34)), want);  // just after `| `
  EXPECT_EQ(set_of(complete(kTensorPipe, 3, 35)), want);  // inside the word
  // Typing the stage right after `| ` with nothing after it yet (the block is unfinished).
  std::string typing = "source s = range(10)\n\npipeline p = s\n  | map(r => { t = f32(r.value) | \n";
  EXPECT_EQ(set_of(complete(typing, 3, 34)), want);
}

TEST(LspCompletion, FnsWhoseFirstParameterTakesThePipedTensor) {
  const char* text =
      "fn f(x: f32) -> f32 = x | tanh\n"    // 0: `tanh` at 26
      "fn g(v: f32) -> f32 = v\n"           // 1: takes f32
      "fn h(v: f32[3]) -> f32 = v[0]\n"     // 2: takes f32[3], not a scalar
      "fn k() -> f32 = 1.0\n"               // 3: takes no input
      "fn m(v: f64, w: f64) -> f64 = v\n"   // 4: takes f64 (an f32 does not convert by itself)
      "fn n(v: f32, w: f32) -> f32 = v\n";  // 5: takes f32 first
  Labels l = complete(text, 0, 26);
  // Not `f` itself (recursive), nor h, k, m; the ops and casts.
  EXPECT_EQ(set_of(l), registry({BuiltinKind::Op}) + numeric_casts() + LabelSet({"g", "n"}));
  // fns first: they are what the spec itself defines.
  EXPECT_EQ(LabelSet(l.begin(), l.begin() + 2), (LabelSet{"g", "n"}));
}

TEST(LspCompletion, StagesAndSinksOnADataset) {
  // The imported fn `combined_score` takes tensors: not offered after `|` on a dataset.
  const char* text =
      "import chess_score\n"          // 0
      "source s = range(10)\n"        // 1
      "pipeline p = s | batch(2)\n";  // 2: `batch` at 17
  Labels l = complete(text, 2, 17);
  EXPECT_EQ(set_of(l), registry({BuiltinKind::Stage, BuiltinKind::Sink}));
  EXPECT_FALSE(has(l, "combined_score"));
  // A new line starting with `| ` after a pipeline.
  EXPECT_EQ(set_of(complete("source s = range(10)\npipeline p = s\n  | \n", 2, 4)),
            registry({BuiltinKind::Stage, BuiltinKind::Sink}));
}

TEST(LspCompletion, SourcesAtTheHeadOfAPipeline) {
  const char* text =
      "source s = range(10)\n"        // 0
      "source t = range(5)\n"         // 1
      "pipeline p = s\n"              // 2
      "pipeline q = s | batch(2)\n";  // 3: the head `s` at 13
  // The source builtins and the datasets declared, but not q itself.
  EXPECT_EQ(set_of(complete(text, 3, 13)), registry({BuiltinKind::Source}) + LabelSet({"s", "t", "p"}));
  // A source's head too.
  EXPECT_EQ(set_of(complete(text, 1, 11)), registry({BuiltinKind::Source}) + LabelSet({"s", "p", "q"}));
  // Inside a stage's arguments: values (consts, ops), not the stages.
  Labels arg = complete("const N = 4\nsource s = range(10)\npipeline p = s | batch(N)\n", 2, 23);
  EXPECT_TRUE(has(arg, "N") && has(arg, "max")) << ::testing::PrintToString(arg);
  EXPECT_FALSE(has(arg, "batch") || has(arg, "map") || has(arg, "dense")) << ::testing::PrintToString(arg);
}

TEST(LspCompletion, LayersComeFirstInAModel) {
  const char* text =
      "model net(x: f32[8]) -> f32[4] {\n"  // 0
      "  y = x | dense(4)\n"                // 1: `x` at 6
      "  y | relu\n"                        // 2: `relu` at 6
      "}\n";                                // 3
  Client c;
  c.initialize();
  c.open(text);
  JsonView reply = c.request("textDocument/completion", at(2, 6));
  Labels l = labels(reply);
  EXPECT_EQ(set_of(l), registry({BuiltinKind::Layer, BuiltinKind::Op}) + numeric_casts());
  // Every layer before the first op that is not also a layer; `relu` is the layer (its signature).
  LabelSet layers = registry({BuiltinKind::Layer});
  size_t last_layer = 0, first_op = l.size();
  for (size_t i = 0; i < l.size(); ++i) {
    if (layers.count(l[i])) last_layer = i;
    else if (first_op == l.size()) first_op = i;
  }
  EXPECT_LT(last_layer, first_op) << ::testing::PrintToString(l);
  for (JsonView item : reply["result"]["items"].elements()) {
    if (item["label"].as_string() == "relu") {
      EXPECT_EQ(item["detail"].as_string(), find_builtin("relu", {BuiltinKind::Layer})->signature());
    }
  }
  // sortText keeps that order in editors that sort.
  JsonView items = reply["result"]["items"];
  EXPECT_LT(items[size_t(0)]["sortText"].as_string(), items[size_t(1)]["sortText"].as_string());
  // A value in the model body: the parameter first, then layers and ops; no stages.
  Labels value = complete(text, 1, 6);
  ASSERT_FALSE(value.empty());
  EXPECT_EQ(value[0], "x");
  EXPECT_TRUE(has(value, "dense") && has(value, "reshape"));
  EXPECT_FALSE(has(value, "map") || has(value, "batch") || has(value, "net"));
}

const char* kTrain =
    "source s = range(10)\n"                                                                       // 0
    "pipeline p = s | map(r => { x: f32(r.value) | reshape([1]), y: f32(r.value) }) | batch(2)\n"  // 1
    "model net(x: f32[1]) -> f32[1] {\n"                                                           // 2
    "  x | dense(1)\n"                                                                             // 3
    "}\n"                                                                                          // 4
    "train t = {\n"                                                                                // 5
    "  data = p,\n"                                                                                // 6: `p` at 9
    "  model = net(x),\n"       // 7: `net` at 10, `x` at 14
    "  loss = mse(y),\n"        // 8: `mse` at 9
    "  optimizer = adam(),\n"   // 9: `adam` at 14
    "  \n"                      // 10: a new entry at 2
    "  precision = fp32,\n"     // 11: `fp32` at 14
    "  strategy = single(),\n"  // 12: `single` at 13
    "}\n";                      // 13

TEST(LspCompletion, TrainEntriesAndWhatEachTakes) {
  Client c;
  c.initialize();
  c.open(kTrain);
  EXPECT_EQ(c.diagnostics(), Json::array());
  auto at_ = [&](int line, int ch) { return set_of(labels(c.request("textDocument/completion", at(line, ch)))); };
  // A new entry: the keys not given yet.
  EXPECT_EQ(at_(10, 2), (LabelSet{"steps", "epochs", "validation", "eval_every", "metrics"}));
  EXPECT_EQ(at_(6, 9), (LabelSet{"p", "s"}));  // data: a dataset
  EXPECT_EQ(at_(7, 10), (LabelSet{"net"}));    // model: a model
  EXPECT_EQ(at_(8, 9), registry({BuiltinKind::Loss}));
  EXPECT_EQ(at_(9, 14), registry({BuiltinKind::Optimizer}));
  EXPECT_EQ(at_(12, 13), registry({BuiltinKind::Strategy}));
  EXPECT_EQ(at_(11, 14), (LabelSet{"fp32", "mixed_fp16", "mixed_bf16"}));
  // The model's arguments are fields of the data (first), and casts of them.
  Labels args = labels(c.request("textDocument/completion", at(7, 14)));
  ASSERT_GE(args.size(), 2u);
  EXPECT_EQ(LabelSet(args.begin(), args.begin() + 2), (LabelSet{"x", "y"}));
  EXPECT_FALSE(has(args, "mse") || has(args, "adam") || has(args, "p"));
  // An empty block offers every entry.
  EXPECT_EQ(set_of(complete("train t = {\n  \n}\n", 1, 2)),
            (LabelSet{"data", "model", "loss", "optimizer", "precision", "strategy", "steps", "epochs", "validation",
                      "eval_every", "metrics"}));
  // metrics = [...]: the metric words.
  std::string with_metrics = std::string(kTrain).replace(std::string(kTrain).find("  \n"), 3, "  metrics = [mae],\n");
  EXPECT_EQ(set_of(complete(with_metrics, 10, 13)), (LabelSet{"accuracy", "mae", "mse"}));
}

// In a model, after `|` on a tensor: the models whose first input takes it (blocks), not the model
// itself (a use would be recursive), nor one whose input has another shape.
TEST(LspCompletion, BlocksAfterAPipeInAModel) {
  const char* text =
      "model res(x: f32[8]) -> f32[8] { x + (x | dense(8)) }\n"  // 0
      "model wide(x: f32[16]) -> f32[16] { x }\n"                // 1
      "model net(x: f32[8]) -> f32[8] {\n"                       // 2
      "  x | res\n"                                              // 3: `res` at 6
      "}\n";
  Labels l = complete(text, 3, 6);
  EXPECT_TRUE(has(l, "res")) << ::testing::PrintToString(l);
  EXPECT_FALSE(has(l, "wide") || has(l, "net")) << ::testing::PrintToString(l);
  EXPECT_TRUE(has(l, "dense"));
}

TEST(LspCompletion, OptionWordsOfAnArgument) {
  const char* text =
      "model net(x: f32[8, 8, 3]) -> f32[8, 8, 4] {\n"  // 0
      "  x | conv2d(4, 3, padding = same)\n"            // 1: `same` at 30
      "}\n"
      "source s = range(4)\n"
      "pipeline p = s | map(r => { v: f32(r.value) }) | write(tfrecord(\"o\", compression = gzip))\n";  // 4
  EXPECT_EQ(set_of(complete(text, 1, 30)), (LabelSet{"same", "valid"}));
  size_t gzip =
      std::string("pipeline p = s | map(r => { v: f32(r.value) }) | write(tfrecord(\"o\", compression = ").size();
  EXPECT_EQ(set_of(complete(text, 4, static_cast<int>(gzip))), (LabelSet{"none", "gzip", "zlib"}));
  // write's argument is an output format, not a source.
  size_t fmt = std::string("pipeline p = s | map(r => { v: f32(r.value) }) | write(").size();
  EXPECT_EQ(set_of(complete(text, 4, static_cast<int>(fmt))), registry({BuiltinKind::Format}));
}

TEST(LspCompletion, NamesInScopeInAMapBody) {
  const char* text =
      "const SCALE = 2.0\n"     // 0
      "source s = range(10)\n"  // 1
      "pipeline p = s\n"        // 2
      "  | map(r => {\n"        // 3
      "    t = f32(r.value)\n"  // 4
      "    { x: t * SCALE }\n"  // 5: `SCALE` at 13
      "  })\n";                 // 6
  Labels l = complete(text, 5, 13);
  ASSERT_GE(l.size(), 2u);
  EXPECT_EQ(LabelSet(l.begin(), l.begin() + 2), (LabelSet{"t", "r"}));  // in scope, first
  EXPECT_TRUE(has(l, "SCALE") && has(l, "tanh") && has(l, "f32"));
  for (const char* no : {"p", "s", "map", "batch", "range", "dense", "mse"}) EXPECT_FALSE(has(l, no)) << no;
  // Before `t` is bound, it is not in scope.
  Labels before = complete(text, 4, 12);  // `r` in f32(r.value)
  EXPECT_TRUE(has(before, "r"));
  EXPECT_FALSE(has(before, "t"));
}

TEST(LspCompletion, ConstsTakeConstantsOnly) {
  const char* text =
      "const C = 2.0\n"      // 0
      "const D = C * 3.0\n"  // 1: `C` at 10
      "fn f(x: f32) -> f32 = x\n";
  Labels l = complete(text, 1, 10);
  EXPECT_TRUE(has(l, "C") && has(l, "tanh"));
  EXPECT_FALSE(has(l, "D"));  // itself
  EXPECT_FALSE(has(l, "f"));  // a fn call is not a constant
}

TEST(LspCompletion, KeywordsAtTheStartOfATopLevelLine) {
  Labels l = complete("source s = range(10)\n\n", 1, 0);
  EXPECT_EQ(set_of(l), (LabelSet{"import", "const", "fn", "source", "pipeline", "model", "train"}));
}

// While a stage name is misspelt, its function literal is still typed: hover on `r.d` shows the field's
// type, and go to definition finds the field and the parameter.
TEST(LspCompletion, HoverAndDefinitionInsideAMisspeltStage) {
  const char* text =
      "source s = range(10)\n"               // 0
      "pipeline p = s\n"                     // 1
      "  | map(r => { d: f32(r.value) })\n"  // 2: the field `d` at 15
      "  | filtr(r => r.d > 0.0)\n";         // 3: `r` at 10 and 15, `d` at 17
  Client c;
  c.initialize();
  c.open(text);
  JsonView diags = c.diagnostics();
  ASSERT_EQ(diags.size(), 1u) << diags;
  EXPECT_EQ(diags[size_t(0)]["code"].as_string(), "unknown_stage");
  JsonView h = c.request("textDocument/hover", at(3, 17));
  EXPECT_NE(h["result"]["contents"]["value"].as_string().find("d: f32"), std::string::npos) << h;
  h = c.request("textDocument/hover", at(3, 10));
  EXPECT_NE(h["result"]["contents"]["value"].as_string().find("r: {d: f32}"), std::string::npos) << h;
  EXPECT_EQ(c.request("textDocument/definition", at(3, 17))["result"][size_t(0)]["range"], range(2, 15, 2, 16));
  EXPECT_EQ(c.request("textDocument/definition", at(3, 15))["result"][size_t(0)]["range"], range(3, 10, 3, 11));
  // The field after `r.` completes too.
  Labels l = complete(replace(text, "r.d > 0.0", "r. > 0.0"), 3, 17);
  EXPECT_EQ(l, (Labels{"d"}));
  // A type the checker does not know is not shown as `<error>`.
  JsonView unknown = c.request("textDocument/hover", at(3, 5));  // the misspelt stage
  EXPECT_EQ(unknown["result"]["contents"]["value"].as_string().find("<error>"), std::string::npos) << unknown;
}

// Hover names the builtin the checker chose: inside write(...) `tfrecord` is the output format.
TEST(LspCompletion, HoverShowsTheBuiltinOfTheContext) {
  const char* text =
      "source s = tfrecord(\"in/*.tfrecord\") { v: f32 }\n"                     // 0: `tfrecord` at 11
      "pipeline p = s | map(r => { v: relu(r.v) }) | write(tfrecord(\"o\"))\n"  // 1: relu 31, tfrecord 52
      "model net(x: f32[4]) -> f32[4] { x | relu }\n";                          // 2: relu 37
  Client c;
  c.initialize();
  c.open(text);
  auto hover = [&](int line, int ch) {
    return c.request("textDocument/hover", at(line, ch))["result"]["contents"]["value"].as_string();
  };
  EXPECT_NE(hover(0, 11).find(find_builtin("tfrecord", {BuiltinKind::Source})->signature()), std::string::npos);
  EXPECT_NE(hover(1, 52).find(find_builtin("tfrecord", {BuiltinKind::Format})->signature()), std::string::npos)
      << hover(1, 52);
  EXPECT_NE(hover(1, 52).find("*format*"), std::string::npos) << hover(1, 52);
  EXPECT_NE(hover(1, 31).find("*op*"), std::string::npos) << hover(1, 31);
  EXPECT_NE(hover(2, 37).find("*layer*"), std::string::npos) << hover(2, 37);
}

// In a train block a bare name is a field of the training data: hover shows its (batched) type and go to
// definition the record field the pipeline's map makes.
TEST(LspCompletion, TrainFieldsHoverAndDefinition) {
  Client c;
  c.initialize();
  c.open(kTrain);
  JsonView h = c.request("textDocument/hover", at(7, 14));  // `x` in net(x)
  EXPECT_NE(h["result"]["contents"]["value"].as_string().find("x: f32[?, 1]"), std::string::npos) << h;
  EXPECT_NE(h["result"]["contents"]["value"].as_string().find("field of the training data"), std::string::npos) << h;
  // line 1: `x:` of the map's record at 28, `y:` at 60
  EXPECT_EQ(c.request("textDocument/definition", at(7, 14))["result"][size_t(0)]["range"], range(1, 28, 1, 29));
  EXPECT_EQ(c.request("textDocument/definition", at(8, 13))["result"][size_t(0)]["range"], range(1, 60, 1, 61));
  // An option word stays an option.
  h = c.request("textDocument/hover", at(11, 14));  // fp32
  EXPECT_NE(h["result"]["contents"]["value"].as_string().find("option fp32"), std::string::npos) << h;
}

}  // namespace
}  // namespace pipec::lsp
