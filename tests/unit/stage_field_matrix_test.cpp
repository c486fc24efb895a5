// Every stage on every kind of field: what `pipec check` accepts must run. For each cell of the matrix
// (a stage after a dataset whose element is one kind of field: fixed numeric, ragged numeric, a byte
// string, bytes[N], batched strings with and without a `?` dimension, bool, ...) the spec is checked;
// the cells the checker refuses are exactly those expected_refusal() names (with the diagnostic kind
// that says why), and every other cell runs to its end unoptimized and optimized, with the same
// elements both ways; the few that fail on the data, as tf.data does, fail alike with the same message.
// The optimized plan also runs with its maps compiled by the JIT, as `pipec run` runs it.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <iostream>
#include <set>

#include "compiler/codegen/llvm/jit.h"
#include "compiler/lower/lower.h"
#include "compiler/passes/pass_pipeline.h"
#include "compiler/sema/program.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/io/example_writer.h"
#include "runtime/io/tfrecord_writer.h"
#include "tests/unit/cli_util.h"

namespace pipec {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

// 11 records: a scalar int, a fixed float list, 4 packed bytes, a var-len int list (0 to 3 values)
// and a byte string (some empty, of different lengths).
void write_records(const fs::path& path) {
  TFRecordWriter w(path.string(), TFRecordWriterOptions{});
  for (int i = 0; i < 11; ++i) {
    ExampleWriter ex;
    int64_t a = i * 7 - 20;
    std::vector<float> f = {static_cast<float>(i), 0.5f * static_cast<float>(i), -1.0f};
    std::string d = {static_cast<char>(i), 'b', 'c', static_cast<char>(200 + i)};
    std::vector<int64_t> ids(static_cast<size_t>(i % 4), a);
    std::string name = i % 3 == 1 ? "" : std::string(static_cast<size_t>(i), 'a' + static_cast<char>(i));
    std::string_view dv = d, nv = name;
    ex.add_int64("a", std::span<const int64_t>(&a, 1));
    ex.add_float("f", std::span<const float>(f));
    ex.add_bytes("d", std::span<const std::string_view>(&dv, 1));
    ex.add_int64("ids", std::span<const int64_t>(ids));
    ex.add_bytes("name", std::span<const std::string_view>(&nv, 1));
    w.write(ex.serialize());
  }
  w.close();
}

const std::string kSources =
    "source s_a = tfrecord(\"m.tfrecord\") { a: i64 }\n"
    "source s_f = tfrecord(\"m.tfrecord\") { f: f32[3] }\n"
    "source s_d = tfrecord(\"m.tfrecord\") { d: bytes[4] }\n"
    "source s_ids = tfrecord(\"m.tfrecord\") { ids: i64[?] }\n"
    "source s_name = tfrecord(\"m.tfrecord\") { name: bytes }\n"
    "source s_all = tfrecord(\"m.tfrecord\") { a: i64\n f: f32[3]\n d: bytes[4]\n ids: i64[?]\n name: bytes }\n";

struct Kind {
  std::string name;
  std::string dataset;  // a dataset expression whose element has this kind of field
  std::string fields;   // its field names, comma-separated
  bool from_source;     // a tfrecord source's own element (interleave may follow)
  bool leading_dim;     // every field has a dimension (unbatch may follow)
  bool ragged;          // a field has a `?` dimension other than a batch's (batch refuses it)
  bool batched;         // the element is a batch (zip with an unbatched range refuses it)
  bool short_batch;     // batches of 2 from 11 records: the last is shorter, so batching them again fails
  bool one_string;      // a single byte-string field (what write(files(...)) writes)
};

const std::vector<Kind> kKinds = {
    {"i64", "s_a", "a", true, false, false, false, false, false},
    {"f32[3]", "s_f", "f", true, true, false, false, false, false},
    {"bytes[4]", "s_d", "d", true, true, false, false, false, false},
    {"i64[?]", "s_ids", "ids", true, true, true, false, false, false},
    {"bytes", "s_name", "name", true, false, false, false, false, true},
    {"bool", "s_a | map(r => { b: r.a % 2 == 0 })", "b", false, false, false, false, false, false},
    {"f64 i32 u8", "s_a | map(r => { x: f64(r.a) / 3.0, y: i32(r.a), z: u8(r.a) })", "x, y, z", false, false, false,
     false, false, false},
    {"bytes[2] batched", "s_name | batch(2, drop_remainder = true)", "name", false, true, false, true, false, false},
    {"bytes[?] batched", "s_name | batch(2)", "name", false, true, false, true, true, false},
    {"f32[?, 3] batched", "s_f | batch(2)", "f", false, true, false, true, true, false},
    {"i64[?, ?] padded", "s_ids | padded_batch(2)", "ids", false, true, true, true, true, false},
    {"every source kind", "s_all", "a, f, d, ids, name", true, false, true, false, false, false},
};

struct StageCase {
  std::string name;
  std::string text;  // what follows the dataset: `| stage`; {out} is a folder of its own, {random_map} a map
                     // that keeps every field and adds a random draw (so no pass can drop it)
};

const std::vector<StageCase> kStages = {
    {"map", "| map(r => r)"},
    {"random map", "| {random_map}"},
    {"map parallel", "| map(r => r, parallel = 3)"},
    {"filter", "| filter(r => random_uniform([], seed = 1) < 0.7)"},
    {"map then filter", "| map(r => r) | filter(r => random_uniform([], seed = 2) < 0.6)"},
    {"batch", "| batch(3)"},
    {"batch drop", "| batch(3, drop_remainder = true)"},
    {"map then batch", "| repeat(2) | {random_map} | batch(3)"},
    {"padded_batch", "| padded_batch(3)"},
    {"padded_batch -1 drop", "| padded_batch(3, padding_value = -1, drop_remainder = true)"},
    {"unbatch", "| unbatch()"},
    {"shuffle", "| shuffle(4, seed = 1)"},
    {"shuffle repeat", "| shuffle(4, seed = 1) | repeat(2)"},
    {"repeat", "| repeat(2)"},
    {"take", "| take(5)"},
    {"skip", "| skip(2)"},
    {"shard", "| shard(2, 1)"},
    {"cache", "| cache() | repeat(2)"},
    {"cache file", "| cache(\"{out}/cache\") | repeat(2)"},
    {"prefetch", "| prefetch(2)"},
    {"ignore_errors", "| ignore_errors()"},
    {"interleave", "| interleave(cycle_length = 2)"},
    {"to cpu", "| to(cpu)"},
    {"to gpu", "| to(gpu) | map(r => r)"},
    {"zip", "zip"},  // zip(dataset, range(100)): built below
    {"write tfrecord", "| write(tfrecord(\"{out}/o.tfrecord\"))"},
    {"write files", "| write(files(\"{out}/{{field}}/{{index}}.bin\"))"},
};

// The diagnostic kind the checker refuses a cell with, or "" when it must accept it.
std::string expected_refusal(const Kind& k, const StageCase& s) {
  const bool batches = s.name == "batch" || s.name == "batch drop" || s.name == "map then batch";
  if (batches && k.ragged) return "ragged_batch";
  // The map's scalar draw does not lead with the batch dimension, so the element is no longer a batch
  // and the `?` of a short last batch is a variable length like any other.
  if (s.name == "map then batch" && k.short_batch) return "ragged_batch";
  if (s.name == "unbatch" && !k.leading_dim) return "shape_mismatch";
  if (s.name == "interleave" && !k.from_source) return "interleave_input";
  if (s.name == "zip" && k.batched) return "shape_mismatch";  // zipped with an unbatched range
  if (s.name == "write files" && !k.one_string) return "type_mismatch";
  return "";
}

// A run-time failure that depends on the data, as in tf.data ("Cannot batch tensors with different
// shapes"): batches of 2 from 11 records end with a batch of 1, which cannot be stacked with full ones.
std::string expected_data_error(const Kind& k, const StageCase& s) {
  const bool batches = s.name == "batch" || s.name == "batch drop";
  if (batches && k.short_batch) return "the elements of a batch have different shapes";
  return "";
}

using Element = std::vector<Tensor>;

std::vector<Element> run_plan(const Plan& plan, const fs::path& dir, int threads) {
  RunOptions o;
  o.seed = 3;
  o.threads = threads;
  o.spec_dir = dir.string();
  o.device = DevicePolicy::Cpu;
  PipelineRun run(plan, o);
  std::vector<Element> out;
  Chunk c;
  while (run.next(c))
    for (int64_t r = 0; r < c.rows; ++r) {
      Element e;
      for (const Column& col : c.columns) e.push_back(column_row(col, r));
      out.push_back(std::move(e));
    }
  return out;
}

std::string cell_spec(const Kind& k, const StageCase& s, const std::string& out) {
  std::string body;
  if (s.name == "zip") body = "zip(" + k.dataset + ", range(100))";
  std::string random_map = "map(r => { ";
  for (size_t at = 0; at < k.fields.size();) {
    size_t end = std::min(k.fields.find(", ", at), k.fields.size());
    std::string f = k.fields.substr(at, end - at);
    random_map += f + ": r." + f + ", ";
    at = end + 2;
  }
  random_map += "u: random_uniform([], seed = 4) })";
  if (s.name == "zip") body = "zip(" + k.dataset + ", range(100))";
  else
    body =
        k.dataset + " " + fmt::format(fmt::runtime(s.text), fmt::arg("out", out), fmt::arg("random_map", random_map));
  return kSources + "pipeline p = " + body + "\n";
}

// One cell: refused as expected_refusal() says, or run to its end at -O0 and optimized with the same
// elements (or the same data error).
void check_cell(const fs::path& dir, const Kind& k, const StageCase& s, const std::string& out,
                std::set<std::string>& ops, int& kernels) {
  std::string spec = cell_spec(k, s, out);
  auto program = check_text((dir / "p.pipe").string(), spec);
  const Diagnostic* error = nullptr;
  for (const auto& d : program->diags.all())
    if (d.severity == Severity::Error && !error) error = &d;
  const std::string refusal = expected_refusal(k, s);
  if (error) {
    std::string kind(diag_kind_info(error->kind).name);
    if (refusal.empty()) ADD_FAILURE() << "the checker refuses it: " << kind << ": " << error->message;
    else EXPECT_EQ(kind, refusal) << error->message;
    return;
  }
  if (!refusal.empty()) {
    ADD_FAILURE() << "the checker accepts it, but it should refuse it with " << refusal;
    return;
  }
  const Decl* decl = nullptr;
  for (const auto& d : program->main().decls)
    if (d->kind == DeclKind::Pipeline && d->name == "p") decl = d.get();
  ASSERT_NE(decl, nullptr);
  Plan plan = lower_pipeline(*program, *decl);
  Plan optimized = plan;
  run_passes(optimized, PassOptions{});
  for (const Stage& st : optimized.stages) ops.insert(std::string(stage_name(st.kind)));
  Plan compiled = optimized;
  codegen::JitReport report = codegen::attach_native_kernels(compiled);
  kernels += report.compiled + report.cached;
  const std::string data_error = expected_data_error(k, s);
  std::vector<Element> want, got, jit;
  const Plan* plans[] = {&plan, &optimized, &compiled};
  std::vector<Element>* outputs[] = {&want, &got, &jit};
  for (int pass = 0; pass < 3; ++pass) {
    std::string what = pass == 0 ? "at -O0" : pass == 1 ? "optimized" : "with compiled kernels";
    try {
      fs::remove_all(dir / out);
      *outputs[pass] = run_plan(*plans[pass], dir, pass == 0 ? 1 : 3);
      if (!data_error.empty())
        ADD_FAILURE() << what << ": ran to its end; expected the data error `" << data_error << "`";
    } catch (const std::exception& e) {
      if (data_error.empty()) ADD_FAILURE() << what << ": checked, but failed at run time: " << e.what();
      else EXPECT_NE(std::string(e.what()).find(data_error), std::string::npos) << what << ": " << e.what();
    }
  }
  ASSERT_EQ(got.size(), want.size()) << "the optimized run has another number of elements";
  for (size_t e = 0; e < want.size(); ++e)
    for (size_t f = 0; f < want[e].size(); ++f)
      ASSERT_TRUE(got[e][f].equals(want[e][f])) << "the optimized run differs at element " << e << " field " << f;
  // Compiled float math may differ in the last bits (difftest bounds it); everything else is exact.
  ASSERT_EQ(jit.size(), want.size()) << "the run with compiled kernels has another number of elements";
  for (size_t e = 0; e < want.size(); ++e)
    for (size_t f = 0; f < want[e].size(); ++f) {
      const Tensor& a = jit[e][f];
      const Tensor& b = want[e][f];
      ASSERT_EQ(a.dtype(), b.dtype()) << "element " << e << " field " << f;
      ASSERT_EQ(a.shape(), b.shape()) << "element " << e << " field " << f;
      if (!is_float(a.dtype())) {
        ASSERT_TRUE(a.equals(b)) << "compiled kernels differ at element " << e << " field " << f;
      }
    }
}

TEST(StageFieldMatrix, WhatTheCheckerAcceptsRuns) {
  ScratchDir dir;
  write_records(dir / "m.tfrecord");
  int cell = 0;
  std::set<std::string> ops;  // of the optimized plans that ran
  int kernels = 0;            // compiled maps and filters among them
  for (const Kind& k : kKinds) {
    for (const StageCase& s : kStages) {
      std::string out = fmt::format("out{}", cell++);
      SCOPED_TRACE(fmt::format("{} | {}:\n{}", k.name, s.name, cell_spec(k, s, out)));
      check_cell(dir.path(), k, s, out, ops, kernels);
    }
  }
  // The stages as they run, fused forms included: a matrix that lost one would not say so otherwise.
  for (const char* op : {"map",      "filter",         "map_filter", "map_batch", "batch", "padded_batch", "unbatch",
                         "shuffle",  "shuffle_repeat", "repeat",     "take",      "skip",  "shard",        "cache",
                         "prefetch", "ignore_errors",  "interleave", "to",        "zip",   "write"})
    EXPECT_TRUE(ops.count(op)) << "no cell runs a `" << op << "` stage";
  EXPECT_GT(kernels, 50) << "the JIT compiled (almost) none of the cells' maps";
  std::cout << "[ kernels ] " << kernels << " maps and filters ran compiled\n";
}

}  // namespace
}  // namespace pipec
