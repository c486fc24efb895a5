// The hand-written C++ reference for the chess benchmark (seed 002): the work of
//
//   TFRecordDataset(files) -> shuffle(10000) -> parse {d: 194 bytes, s: int64} -> batch(512, drop_remainder)
//   -> repeat -> unpack 1552 bits, board [512, 8, 8, 24] f32 with the planes reordered and signed,
//      flags [512, 10] f32, combined score [512] f32 (computed in f64, as the seed does)
//
// written directly: pipec's TFRecord reader (framing and both CRCs, as TensorFlow checks them), then a
// hand-rolled walk of the tf.Example protobuf that picks out `d` and `s`, a tf.data-style shuffle buffer
// of parsed positions, and a straight loop that fills the batch tensors. No pipec plan, no interpreter:
// it is the speed a careful programmer gets by hand, the reference pipec is measured against.
//
//   chess_handwritten DATA BATCHES [--threads N] [--warmup N] [--batch-size N] [--shuffle-buffer N]
//                     [--no-shuffle] [--seed S] [--output DIR] [--kernel table|select]
//
// DATA is a folder (its chess-*.tfrecord files are read) or a glob. Prints examples/s over BATCHES batches
// after the warm-up on stdout (one number; details on stderr), like bench/chess/tfdata_peer.py.
// With --threads N > 1 the main thread reads, parses and shuffles and N worker threads fill the batches.
// --kernel picks how the board is filled: `select` (default: a per-plane shift and select that the
// compiler vectorizes; ~25% less CPU time here) or `table` (8-byte copies from an 8 KiB table).
// stderr also shows the process CPU time of the timed part, which stays meaningful on a loaded machine.
// --output DIR writes the first BATCHES batches as DIR/NNNNNN/{board,flags,score}.npy, the layout of
// `pipec run --output`; with --no-shuffle --batch-size 8 on tests/conformance/fixtures/chess_seed002/data
// they must equal that fixture's expected/ files byte for byte (see tests/conformance/README.md).
//
// Build (from the repository root, after building pipec_runtime in build/):
//   mkdir -p build/bench && g++ -std=c++20 -O3 -march=native -DNDEBUG -I. bench/chess/handwritten.cpp
//       build/runtime/libpipec_runtime.a -lfmt -lz -lpthread -ldl -o build/bench/chess_handwritten
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <time.h>

#include "runtime/core/tensor.h"
#include "runtime/io/errors.h"
#include "runtime/io/file_glob.h"
#include "runtime/io/npy.h"
#include "runtime/io/tfrecord_reader.h"

namespace {

constexpr int kPackedBytes = 194;  // 1552 bits
constexpr int kBoardValues = 8 * 8 * 24;
constexpr int kFlags = 10;
constexpr double kA = 0.5, kK = 400.0, kB = 10.0;  // the seed's VALUE_A, VALUE_K, VALUE_B

struct Position {
  uint8_t d[kPackedBytes];
  int64_t s;
};

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "chess_handwritten: %s\n", msg.c_str());
  std::exit(1);
}

// ---- tf.Example, just enough of it: Example{1: Features{1: map<string, Feature>}}, Feature{1: BytesList,
// 3: Int64List}, lists {1: values} (int64 packed or not).

bool read_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    uint8_t b = *p++;
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// Reads one field's tag and, for length-delimited fields, its payload. Returns false on malformed input.
bool next_field(const uint8_t*& p, const uint8_t* end, uint32_t& field, uint32_t& wire, std::string_view& payload,
                uint64_t& scalar) {
  uint64_t tag;
  if (!read_varint(p, end, tag)) return false;
  field = static_cast<uint32_t>(tag >> 3);
  wire = static_cast<uint32_t>(tag & 7);
  switch (wire) {
    case 0: return read_varint(p, end, scalar);
    case 1:
      if (end - p < 8) return false;
      p += 8;
      return true;
    case 5:
      if (end - p < 4) return false;
      p += 4;
      return true;
    case 2: {
      uint64_t len;
      if (!read_varint(p, end, len) || len > uint64_t(end - p)) return false;
      payload = std::string_view(reinterpret_cast<const char*>(p), len);
      p += len;
      return true;
    }
    default: return false;
  }
}

const uint8_t* u8(std::string_view s) { return reinterpret_cast<const uint8_t*>(s.data()); }

// Fills pos from one serialized Example; returns an error message or "".
std::string parse_position(std::string_view record, Position& pos) {
  bool have_d = false, have_s = false;
  const uint8_t *p = u8(record), *end = p + record.size();
  uint32_t field, wire;
  std::string_view payload;
  uint64_t scalar;
  while (p < end) {
    if (!next_field(p, end, field, wire, payload, scalar)) return "malformed Example";
    if (field != 1 || wire != 2) continue;
    const uint8_t *q = u8(payload), *qend = q + payload.size();  // Features
    while (q < qend) {
      if (!next_field(q, qend, field, wire, payload, scalar)) return "malformed Features";
      if (field != 1 || wire != 2) continue;
      const uint8_t *e = u8(payload), *eend = e + payload.size();  // map entry {1: key, 2: Feature}
      std::string_view key, feature;
      while (e < eend) {
        if (!next_field(e, eend, field, wire, payload, scalar)) return "malformed feature map entry";
        if (wire == 2 && field == 1) key = payload;
        if (wire == 2 && field == 2) feature = payload;
      }
      bool is_d = key == "d", is_s = key == "s";
      if (!is_d && !is_s) continue;
      const uint8_t *f = u8(feature), *fend = f + feature.size();
      std::string_view list;
      uint32_t kind = 0;
      while (f < fend) {  // Feature: the last kind set wins, as in protobuf
        if (!next_field(f, fend, field, wire, payload, scalar)) return "malformed Feature";
        if (wire == 2 && field >= 1 && field <= 3) {
          kind = field;
          list = payload;
        }
      }
      const uint8_t *l = u8(list), *lend = l + list.size();
      if (is_d) {
        if (kind != 1) return "feature d is not a bytes_list";
        int n = 0;
        while (l < lend) {
          if (!next_field(l, lend, field, wire, payload, scalar)) return "malformed BytesList";
          if (field != 1 || wire != 2) continue;
          if (payload.size() != kPackedBytes)
            return "feature d is " + std::to_string(payload.size()) + " bytes, not 194";
          std::memcpy(pos.d, payload.data(), kPackedBytes);
          ++n;
        }
        if (n != 1) return "feature d has " + std::to_string(n) + " values, expected 1";
        have_d = true;
      } else {
        if (kind != 3) return "feature s is not an int64_list";
        int n = 0;
        while (l < lend) {
          if (!next_field(l, lend, field, wire, payload, scalar)) return "malformed Int64List";
          if (field != 1) continue;
          if (wire == 0) {
            pos.s = static_cast<int64_t>(scalar);
            ++n;
          } else if (wire == 2) {  // packed
            const uint8_t *v = u8(payload), *vend = v + payload.size();
            while (v < vend) {
              uint64_t x;
              if (!read_varint(v, vend, x)) return "malformed packed int64";
              pos.s = static_cast<int64_t>(x);
              ++n;
            }
          }
        }
        if (n != 1) return "feature s has " + std::to_string(n) + " values, expected 1";
        have_s = true;
      }
    }
  }
  if (!have_d) return "feature d is missing";
  if (!have_s) return "feature s is missing";
  return "";
}

// ---- The input: files in a fixed (shuffled once, as the seed's random.shuffle) order, repeated forever,
// through a tf.data shuffle buffer. next() returns false at the end of an epoch (after the buffer drains).

class Rng {  // splitmix64
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64); }

 private:
  uint64_t s_;
};

class Input {
 public:
  Input(std::vector<std::string> files, size_t buffer, uint64_t seed)
      : files_(std::move(files)), cap_(buffer), rng_(seed) {
    buf_.reserve(std::max<size_t>(cap_, 1));
  }

  // One position of the current epoch; false when the epoch is over (the next call starts another).
  bool next(Position& out) {
    if (cap_ <= 1) return read_one(out) || (restart(), false);
    while (buf_.size() < cap_ && !eof_) {
      Position p;
      if (read_one(p)) buf_.push_back(p);
    }
    if (buf_.empty()) {
      restart();
      return false;
    }
    size_t j = rng_.below(buf_.size());
    out = buf_[j];
    Position p;
    if (!eof_ && read_one(p)) {
      buf_[j] = p;
    } else {
      buf_[j] = buf_.back();
      buf_.pop_back();
    }
    return true;
  }

 private:
  bool read_one(Position& p) {
    for (;;) {
      if (eof_) return false;
      if (!reader_) {
        if (file_ == files_.size()) {
          eof_ = true;
          return false;
        }
        reader_ = std::make_unique<pipec::TFRecordReader>(files_[file_++]);
      }
      std::string_view rec;
      if (!reader_->next(rec)) {
        reader_.reset();
        continue;
      }
      std::string err = parse_position(rec, p);
      if (!err.empty()) die(reader_->path() + ": record " + std::to_string(reader_->records_read() - 1) + ": " + err);
      return true;
    }
  }
  void restart() {
    file_ = 0;
    eof_ = false;
    reader_.reset();
  }

  std::vector<std::string> files_;
  size_t cap_;
  Rng rng_;
  std::vector<Position> buf_;
  std::unique_ptr<pipec::TFRecordReader> reader_;
  size_t file_ = 0;
  bool eof_ = false;
};

// ---- The transform: one batch of positions -> board, flags, score.

constexpr int kPlaneOrder[24] = {0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23};

struct Batch {
  std::vector<Position> in;
  std::vector<float> board, flags, score;
  explicit Batch(int n) : in(n), board(size_t(n) * kBoardValues), flags(size_t(n) * kFlags), score(n) {}
};

inline int bit(const uint8_t* d, int i) { return (d[i >> 3] >> (7 - (i & 7))) & 1; }

double combined_score(double score, double is_mate) {
  double sign = score > 0 ? 1.0 : score < 0 ? -1.0 : 0.0;
  return (1 - is_mate) * kA * std::tanh(score / kK) +
         is_mate * sign * (kA + (1 - kA) / (kB - 1) * std::max(0.0, kB - std::abs(score)));
}

void transform(Batch& b) {
  // Each square's 24 planes are 3 whole bytes: read them as one 24-bit number, then pick the planes in
  // output order with their signs (+ for white planes, - for black).
  int shift[24];
  float sign[24];
  for (int k = 0; k < 24; ++k) {
    shift[k] = 23 - kPlaneOrder[k];
    sign[k] = (k / 6) % 2 ? -1.0f : 1.0f;
  }
  const size_t n = b.in.size();
  for (size_t e = 0; e < n; ++e) {
    const uint8_t* d = b.in[e].d;
    float* out = b.board.data() + e * kBoardValues;
    for (int sq = 0; sq < 64; ++sq) {
      uint32_t v = (uint32_t(d[3 * sq]) << 16) | (uint32_t(d[3 * sq + 1]) << 8) | d[3 * sq + 2];
      float* o = out + sq * 24;
      // A bit of 0 gives +0.0 for every plane, as TF's integer negation before the cast does.
      for (int k = 0; k < 24; ++k) o[k] = ((v >> shift[k]) & 1u) ? sign[k] : 0.0f;
    }
    for (int k = 0; k < kFlags; ++k) b.flags[e * kFlags + k] = float(bit(d, 1536 + k));
    b.score[e] = float(combined_score(double(b.in[e].s), double(bit(d, 1546))));
  }
}

// The same with a lookup table: byte i of a square holds planes 8i..8i+7, and planes 8i+m and 8i+m+4
// (m = 0..3) land next to each other in the output, at 6m + 2i and 6m + 2i + 1, with the sign of m. So
// each byte value maps to four ready-made pairs of floats: 12 eight-byte copies per square.
struct PairTable {
  uint64_t pair[4][256];
  PairTable() {
    for (int m = 0; m < 4; ++m)
      for (int v = 0; v < 256; ++v) {
        float sign = m % 2 ? -1.0f : 1.0f;
        float f[2] = {(v >> (7 - m)) & 1 ? sign : 0.0f, (v >> (3 - m)) & 1 ? sign : 0.0f};
        std::memcpy(&pair[m][v], f, 8);
      }
  }
};

void transform_table(Batch& b) {
  static const PairTable table;
  const size_t n = b.in.size();
  for (size_t e = 0; e < n; ++e) {
    const uint8_t* d = b.in[e].d;
    float* out = b.board.data() + e * kBoardValues;
    for (int sq = 0; sq < 64; ++sq) {
      float* o = out + sq * 24;
      for (int i = 0; i < 3; ++i) {
        uint8_t v = d[3 * sq + i];
        for (int m = 0; m < 4; ++m) std::memcpy(o + 6 * m + 2 * i, &table.pair[m][v], 8);
      }
    }
    for (int k = 0; k < kFlags; ++k) b.flags[e * kFlags + k] = float(bit(d, 1536 + k));
    b.score[e] = float(combined_score(double(b.in[e].s), double(bit(d, 1546))));
  }
}

bool g_use_table = false;

void run_transform(Batch& b) {
  if (g_use_table) transform_table(b);
  else transform(b);
}

// ---- A small bounded queue for the threaded mode.

template <class T>
class Queue {
 public:
  explicit Queue(size_t cap) : cap_(cap) {}
  void push(T v) {
    std::unique_lock<std::mutex> l(m_);
    not_full_.wait(l, [&] { return q_.size() < cap_; });
    q_.push_back(std::move(v));
    not_empty_.notify_one();
  }
  T pop() {
    std::unique_lock<std::mutex> l(m_);
    not_empty_.wait(l, [&] { return !q_.empty(); });
    T v = std::move(q_.front());
    q_.pop_front();
    not_full_.notify_one();
    return v;
  }

 private:
  size_t cap_;
  std::mutex m_;
  std::condition_variable not_empty_, not_full_;
  std::deque<T> q_;
};

struct Options {
  std::string data;
  int64_t batches = 0;
  int threads = 0;
  int64_t warmup = 25;
  int batch_size = 512;
  size_t shuffle_buffer = 10000;
  uint64_t seed = 0;
  std::string output;
};

void write_batch(const Options& o, int64_t index, const Batch& b) {
  namespace fs = std::filesystem;
  char name[24];
  std::snprintf(name, sizeof name, "%06lld", static_cast<long long>(index));
  fs::path dir = fs::path(o.output) / name;
  fs::create_directories(dir);
  int64_t n = static_cast<int64_t>(b.in.size());
  auto save = [&](const char* field, const std::vector<float>& v, pipec::Shape shape) {
    pipec::Tensor t = pipec::Tensor::empty(pipec::DType::F32, std::move(shape));
    std::memcpy(t.raw(), v.data(), v.size() * sizeof(float));
    pipec::write_npy((dir / (std::string(field) + ".npy")).string(), t);
  };
  save("board", b.board, {n, 8, 8, 24});
  save("flags", b.flags, {n, kFlags});
  save("score", b.score, {n});
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--threads") o.threads = std::stoi(value());
    else if (a == "--warmup") o.warmup = std::stoll(value());
    else if (a == "--batch-size") o.batch_size = std::stoi(value());
    else if (a == "--shuffle-buffer") o.shuffle_buffer = std::stoull(value());
    else if (a == "--no-shuffle") o.shuffle_buffer = 0;
    else if (a == "--seed") o.seed = std::stoull(value());
    else if (a == "--output") o.output = value();
    else if (a == "--kernel") {
      std::string k = value();
      if (k != "table" && k != "select") die("--kernel is table or select");
      g_use_table = k == "table";
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: chess_handwritten DATA BATCHES [--threads N] [--warmup N] [--batch-size N] "
          "[--shuffle-buffer N] [--no-shuffle] [--seed S] [--output DIR] [--kernel table|select]\n");
      return 0;
    } else if (!a.empty() && a[0] == '-') die("unknown option " + a);
    else pos.push_back(a);
  }
  if (pos.size() != 2) die("usage: chess_handwritten DATA BATCHES [options] (--help)");
  o.data = pos[0];
  o.batches = std::stoll(pos[1]);
  if (o.threads <= 0) o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (!o.output.empty()) o.warmup = 0;  // write exactly the first BATCHES batches

  std::string pattern = o.data.find('*') == std::string::npos ? o.data + "/chess-*.tfrecord" : o.data;
  std::vector<std::string> files;
  try {
    files = pipec::expand_glob(pattern);
  } catch (const pipec::DataError& e) {
    die(e.what());
  }
  Rng order_rng(o.seed ^ 0x5eed);
  if (o.shuffle_buffer > 0)  // the seed shuffles the file list once (random.shuffle(files_train))
    for (size_t i = files.size(); i > 1; --i) std::swap(files[i - 1], files[order_rng.below(i)]);

  Input input(files, o.shuffle_buffer, o.seed);
  // Fills b.in with the next full batch; the remainder of each epoch is dropped (drop_remainder).
  int64_t batches_this_epoch = 0;
  auto fill = [&](Batch& b) {
    for (;;) {
      size_t k = 0;
      bool epoch_over = false;
      while (k < b.in.size()) {
        if (!input.next(b.in[k])) {
          epoch_over = true;
          break;
        }
        ++k;
      }
      if (!epoch_over) {
        ++batches_this_epoch;
        return;
      }
      if (batches_this_epoch == 0) die("the files hold fewer records than one batch");
      batches_this_epoch = 0;
    }
  };

  auto cpu_now = [] {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  };
  std::atomic<double> cpu_start{0};
  double checksum = 0;
  const int64_t total = o.warmup + o.batches;
  std::chrono::steady_clock::time_point start;
  try {
    if (o.threads == 1 || !o.output.empty()) {
      Batch b(o.batch_size);
      for (int64_t i = 0; i < total; ++i) {
        if (i == o.warmup) {
          start = std::chrono::steady_clock::now();
          cpu_start = cpu_now();
        }
        fill(b);
        run_transform(b);
        checksum += b.score[0] + b.board[i % b.board.size()];
        if (!o.output.empty()) write_batch(o, i, b);
      }
    } else {
      // Main thread: read, parse, shuffle into batches; workers: transform. Batches are recycled.
      Queue<std::unique_ptr<Batch>> free_q(2 * o.threads + 2), work_q(2 * o.threads + 2), done_q(2 * o.threads + 2);
      for (int i = 0; i < 2 * o.threads + 2; ++i) free_q.push(std::make_unique<Batch>(o.batch_size));
      std::vector<std::thread> workers;
      for (int t = 0; t < o.threads; ++t)
        workers.emplace_back([&] {
          for (;;) {
            auto b = work_q.pop();
            if (!b) return;
            run_transform(*b);
            done_q.push(std::move(b));
          }
        });
      std::thread consumer([&] {
        for (int64_t i = 0; i < total; ++i) {
          if (i == o.warmup) {
            start = std::chrono::steady_clock::now();
            cpu_start = cpu_now();
          }
          auto b = done_q.pop();
          checksum += b->score[0] + b->board[i % b->board.size()];
          free_q.push(std::move(b));
        }
      });
      for (int64_t i = 0; i < total; ++i) {
        auto b = free_q.pop();
        fill(*b);
        work_q.push(std::move(b));
      }
      consumer.join();
      for (int t = 0; t < o.threads; ++t) work_q.push(nullptr);
      for (auto& w : workers) w.join();
    }
  } catch (const pipec::DataError& e) {
    die(e.what());
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double cpu = cpu_now() - cpu_start.load();
  double rate = double(o.batches) * o.batch_size / secs;
  std::fprintf(stderr,
               "hand-written C++: %lld batches of %d in %.3f s (%.3f s of CPU time), %d thread(s), %zu files "
               "(checksum %.3f)\n",
               static_cast<long long>(o.batches), o.batch_size, secs, cpu, o.threads, files.size(), checksum);
  std::printf("%.1f\n", rate);
  return 0;
}
