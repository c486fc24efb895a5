// A tfrecord source parses its chunks of records on the pool (runtime/exec/sources/source_tfrecord.cpp):
// the records, their order and every error must be what parsing them on the source's own thread gives
// (RunOptions::parse_records_on_pool = false), at any thread count and chunk size, and a checkpoint
// taken while chunks are being parsed must resume exactly.
#include <gtest/gtest.h>

#include <fstream>

#include <fmt/format.h>

#include "runtime/exec/autotune_model.h"
#include "runtime/exec/pipeline_run.h"
#include "runtime/io/example_writer.h"
#include "runtime/io/tfrecord_writer.h"
#include "tests/unit/cli_util.h"
#include "tests/unit/compile_util.h"
#include "tests/unit/position_records.h"

namespace pipec {
namespace {

using testing::ScratchDir;
namespace fs = std::filesystem;

using testing::write_positions;

// Every record is as long as every other (ids below 2^31 take the same varint bytes): the size of one.
int64_t record_bytes(const fs::path& dir) {
  write_positions(dir / "one.bin", 1000, 1);
  return static_cast<int64_t>(fs::file_size(dir / "one.bin"));
}

void corrupt_data_of_record(const fs::path& file, int64_t record, int64_t record_size) {
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  io.seekg(record * record_size + 40);
  char c = 0;
  io.get(c);
  io.seekp(record * record_size + 40);
  io.put(static_cast<char>(c ^ 0x5a));
}

void write_spec(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

struct Outcome {
  std::vector<std::string> rows;  // "s:d" per element
  std::string error;              // from the spec file's name on ("" when the run ended cleanly)
  bool operator==(const Outcome&) const = default;
};

RunOptions options(const fs::path& spec, int threads, int64_t chunk_rows, bool on_pool, int64_t files_read_ahead = -1,
                   DataCrcChecks crcs = DataCrcChecks::Adaptive) {
  RunOptions o;
  o.data_crc_checks = crcs;
  if (files_read_ahead >= 0) o.auto_values = {{KnobKind::ReadAhead, files_read_ahead}};
  o.threads = threads;
  o.chunk_rows = chunk_rows;
  o.spec_dir = spec.parent_path().string();
  o.parse_records_on_pool = on_pool;
  return o;
}

void collect(PipelineRun& run, Outcome& out) {
  Chunk chunk;
  try {
    while (run.next(chunk)) {
      const Tensor& d = chunk.columns.at(0).dense;
      const Tensor& s = chunk.columns.at(1).dense;
      const int64_t width = d.num_elements() / std::max<int64_t>(1, s.num_elements());
      for (int64_t i = 0; i < s.num_elements(); ++i)
        out.rows.push_back(fmt::format("{}:{}", s.data<int64_t>()[i],
                                       std::string_view(reinterpret_cast<const char*>(d.data<uint8_t>()) + i * width,
                                                        static_cast<size_t>(width))));
    }
  } catch (const std::exception& e) {
    out.error = e.what();
  }
}

// files_read_ahead >= 0 fixes how many files are read on threads of their own (else tuned).
Outcome run_spec(const fs::path& spec, int threads, int64_t chunk_rows, bool on_pool, int64_t files_read_ahead = -1,
                 DataCrcChecks crcs = DataCrcChecks::Adaptive) {
  std::vector<Plan> plans = testing::compiled_plans_of_file(spec.string());
  Outcome out;
  PipelineRun run(plans.back(), options(spec, threads, chunk_rows, on_pool, files_read_ahead, crcs));
  collect(run, out);
  return out;
}

const char* kSpec =
    "source s = tfrecord(\"pos-*.tfrecord\") {\n  d: bytes[194]\n  s: i64\n}\n"
    "pipeline p = s | interleave(cycle_length = 2, block_length = 3) | batch(5) | prefetch(2)\n";

TEST(ParseOnPool, TheSameRecordsInTheSameOrderAtAnyThreadCountAndChunkSize) {
  ScratchDir d;
  const int lengths[] = {300, 7, 1100, 64};
  for (int f = 0; f < 4; ++f) write_positions(d / fmt::format("pos-{}.tfrecord", f), f * 10000, lengths[f]);
  write_spec(d / "p.pipe", kSpec);
  const Outcome want = run_spec(d / "p.pipe", 1, 1024, false);
  ASSERT_EQ(want.error, "");
  ASSERT_EQ(want.rows.size(), 300u + 7 + 1100 + 64);
  for (int threads = 1; threads <= 4; ++threads)
    for (int64_t rows : {1, 5, 64, 1024}) {
      EXPECT_EQ(run_spec(d / "p.pipe", threads, rows, true), want) << threads << " threads, chunks of " << rows;
      EXPECT_EQ(run_spec(d / "p.pipe", threads, rows, false), want) << threads << " threads, chunks of " << rows;
    }
}

// Records are framed where their reader read them (the chunk holds the read buffer, nothing is copied)
// and parsed later on a worker, while the reader reads on: with files of several read buffers each,
// plain and gzip, read here or ahead, every record must still be the one in the file.
TEST(ParseOnPool, RecordsLeftInTheReadBuffersStayIntactUntilParsed) {
  ScratchDir d;
  const int lengths[] = {5000, 3, 4200};  // ~230 bytes each: up to 1.1 MB, several 256 KB buffers a file
  for (int f = 0; f < 3; ++f) {
    write_positions(d / fmt::format("pos-{}.tfrecord", f), f * 10000, lengths[f]);
    write_positions(d / fmt::format("gz-{}.tfrecord.gz", f), f * 10000, lengths[f], -1, Compression::Gzip);
  }
  write_spec(d / "p.pipe", kSpec);
  write_spec(d / "gz.pipe",
             "source s = tfrecord(\"gz-*.tfrecord.gz\", compression = gzip) {\n  d: bytes[194]\n  s: i64\n}\n"
             "pipeline p = s | interleave(cycle_length = 2, block_length = 3) | batch(5) | prefetch(2)\n");
  for (const char* spec : {"p.pipe", "gz.pipe"}) {
    const Outcome want = run_spec(d / spec, 1, 1024, false, 0);
    ASSERT_EQ(want.error, "") << spec;
    ASSERT_EQ(want.rows.size(), 5000u + 3 + 4200) << spec;
    for (int threads : {1, 3})
      for (int64_t rows : {7, 1024, 4096})
        for (int64_t ahead : {0, 1})
          EXPECT_EQ(run_spec(d / spec, threads, rows, true, ahead), want)
              << spec << ", " << threads << " threads, chunks of " << rows << ", files read ahead " << ahead;
  }
}

// Inline, a chunk's records are all framed (a data CRC error thrown then) before any is parsed. So a
// record that does not parse stops the run before a damaged record in a later chunk, and a damaged
// record stops it before one that does not parse earlier in the same chunk.
TEST(ParseOnPool, ErrorsComeWhereAndAsTheyDoWhenParsingInline) {
  ScratchDir d;
  const int64_t size = record_bytes(d.path());
  write_positions(d / "pos-0.tfrecord", 0, 400);
  write_positions(d / "pos-1.tfrecord", 10000, 400, /*short_d=*/100);
  corrupt_data_of_record(d / "pos-1.tfrecord", 300, size);
  write_spec(d / "p.pipe", kSpec);
  // Chunks of 64 records: record 100 of file 1 is in chunk 3 of the interleave, record 300 in chunk 9.
  const Outcome parse_first = run_spec(d / "p.pipe", 1, 64, false);
  EXPECT_NE(parse_first.error.find("pos-1.tfrecord: record 100"), std::string::npos) << parse_first.error;
  EXPECT_EQ(parse_first.error.find("CRC"), std::string::npos) << parse_first.error;
  // Chunks of 1024: both in the first chunk, which fails to frame.
  const Outcome crc_first = run_spec(d / "p.pipe", 1, 1024, false);
  EXPECT_NE(crc_first.error.find("pos-1.tfrecord: record 300"), std::string::npos) << crc_first.error;
  EXPECT_NE(crc_first.error.find("CRC"), std::string::npos) << crc_first.error;
  EXPECT_TRUE(crc_first.rows.empty());
  for (int threads = 1; threads <= 4; ++threads) {
    EXPECT_EQ(run_spec(d / "p.pipe", threads, 64, true), parse_first) << threads << " threads";
    EXPECT_EQ(run_spec(d / "p.pipe", threads, 1024, true), crc_first) << threads << " threads";
    for (int64_t rows : {1, 7, 200})
      EXPECT_EQ(run_spec(d / "p.pipe", threads, rows, true), run_spec(d / "p.pipe", 1, rows, false))
          << threads << " threads, chunks of " << rows;
  }
}

// Records read on the source's thread have their data CRCs checked by the workers that parse them or
// by the reader (always one, always the other, or as the adaptive choice falls; a file read ahead has
// them checked on its reader's thread): whichever checks, a damaged record is the reader's own error,
// at its record and byte offset, after exactly the records that come before its chunk, at any thread
// count and chunk size.
TEST(ParseOnPool, TheWorkersCheckTheDataCrcsAsTheReaderDoes) {
  ScratchDir d;
  const int64_t size = record_bytes(d.path());
  write_positions(d / "pos-0.tfrecord", 1000, 500);  // ids of two varint bytes each, as record_bytes's
  corrupt_data_of_record(d / "pos-0.tfrecord", 300, size);
  write_spec(d / "p.pipe",
             "source s = tfrecord(\"pos-*.tfrecord\") {\n  d: bytes[194]\n  s: i64\n}\n"
             "pipeline p = s | batch(5) | prefetch(2)\n");
  const std::string where = fmt::format("pos-0.tfrecord: record 300 at byte offset {}: data CRC mismatch", 300 * size);
  for (int64_t rows : {1, 7, 64, 1024}) {
    const Outcome inline_parse = run_spec(d / "p.pipe", 1, rows, false);
    ASSERT_NE(inline_parse.error.find(where), std::string::npos) << inline_parse.error << " / " << where;
    EXPECT_EQ(inline_parse.rows.size(), static_cast<size_t>(300 / rows * rows / 5 * 5)) << "chunks of " << rows;
    for (int threads : {1, 2, 4})
      for (int64_t ahead : {0, 1})
        for (DataCrcChecks crcs : {DataCrcChecks::OnWorkers, DataCrcChecks::ByReader, DataCrcChecks::Adaptive})
          EXPECT_EQ(run_spec(d / "p.pipe", threads, rows, true, ahead, crcs), inline_parse)
              << threads << " threads, chunks of " << rows << ", files read ahead " << ahead << ", CRCs checked "
              << static_cast<int>(crcs);
  }
}

TEST(ParseOnPool, ACheckpointTakenWhileChunksAreParsedResumesExactly) {
  ScratchDir d;
  for (int f = 0; f < 3; ++f) write_positions(d / fmt::format("pos-{}.tfrecord", f), f * 10000, 250 + 31 * f);
  write_spec(d / "p.pipe", kSpec);
  const fs::path spec = d / "p.pipe";
  const Plan plan = testing::compiled_plans_of_file(spec.string()).back();
  const Outcome want = run_spec(spec, 2, 16, true);
  ASSERT_EQ(want.error, "");
  for (int stop : {0, 3, 40, 100}) {
    Outcome got;
    {
      PipelineRun first(plan, options(spec, 2, 16, true));
      Chunk chunk;
      for (int i = 0; i < stop; ++i) {
        ASSERT_TRUE(first.next(chunk));
        const Tensor& dd = chunk.columns.at(0).dense;
        const Tensor& s = chunk.columns.at(1).dense;
        for (int64_t k = 0; k < s.num_elements(); ++k)
          got.rows.push_back(
              fmt::format("{}:{}", s.data<int64_t>()[k],
                          std::string_view(reinterpret_cast<const char*>(dd.data<uint8_t>()) + k * 194, 194)));
      }
      first.save_checkpoint(d / "state.ckpt");
    }
    PipelineRun resumed(plan, options(spec, 3, 16, true));
    resumed.restore_checkpoint(d / "state.ckpt");
    collect(resumed, got);
    EXPECT_EQ(got, want) << "saved after " << stop << " batches";
  }
}

}  // namespace
}  // namespace pipec
