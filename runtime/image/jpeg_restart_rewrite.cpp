#include "runtime/image/jpeg_restart_rewrite.h"

#include <algorithm>
#include <array>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <fmt/format.h>

#include "runtime/image/decode_options.h"
#include "runtime/image/jpeg_huffman.h"

namespace pipec {

namespace {

using namespace jpeg_huffman;

// The standard luminance DC table (T.81 Table K.3): codes for difference categories 0..11.
constexpr uint8_t kStdDcCounts[17] = {0, 0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0};
constexpr uint8_t kStdDcValues[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

uint32_t be16(std::string_view s, size_t at) {
  return (static_cast<uint32_t>(static_cast<unsigned char>(s[at])) << 8) | static_cast<unsigned char>(s[at + 1]);
}

void put_be16(std::string& s, uint32_t v) {
  s.push_back(static_cast<char>((v >> 8) & 0xFF));
  s.push_back(static_cast<char>(v & 0xFF));
}

// The scan's entropy-coded bytes with stuffing removed, split at the restart markers, and 8 zero bytes
// (so the reader's 64-bit loads near the end stay on its fast path).
struct Unstuffed {
  ScanBytes bytes;
  std::vector<size_t> segment_start;
};

bool unstuff(std::string_view d, size_t at, Unstuffed& u, std::string& why) {
  // Sized for every byte plus the stores of a last 16-byte step and the zeros; not zeroed first
  // (ScanBytes), since every byte kept is written.
  u.bytes.resize(d.size() - at + 16 + 8);
  u.segment_start.push_back(0);
  int expect = 0;
  const uint8_t* p = reinterpret_cast<const uint8_t*>(d.data()) + at;
  const uint8_t* const end = reinterpret_cast<const uint8_t*>(d.data()) + d.size();
  uint8_t* out = u.bytes.data();
  for (;;) {
    // Copy up to the next 0xFF: 16 bytes at a time (each step stores all 16, then keeps those before
    // an 0xFF), the rest one by one.
#if defined(__SSE2__)
    const __m128i ff = _mm_set1_epi8(static_cast<char>(0xFF));
    for (; end - p >= 16; p += 16, out += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), v);
      if (const int mask = _mm_movemask_epi8(_mm_cmpeq_epi8(v, ff))) {
        const int i = __builtin_ctz(static_cast<unsigned>(mask));
        p += i;
        out += i;
        break;
      }
    }
#endif
    while (p < end && *p != 0xFF) *out++ = *p++;
    if (p >= end) return why = "truncated: the data ends in the middle of the image", false;
    ++p;
    const uint8_t* const fill = p;
    while (p < end && *p == 0xFF) ++p;  // fill bytes before a marker
    if (p >= end) return why = "truncated: the data ends in the middle of the image", false;
    const int m = *p++;
    if (m == 0x00) {
      // Fill bytes belong before markers only. FF FF 00 inside the data is one data byte FF to
      // libjpeg-turbo's slow decoder but a marker to its fast one, which then leaves the coefficients
      // it had decoded from zeros in the block the slow one decodes again (the image fuzzer found a
      // cut that decoded differently so): such a file is libjpeg's to decode, not ours to copy.
      if (p - 1 != fill) return why = "corrupt data: fill bytes inside the entropy-coded data", false;
      *out++ = 0xFF;
    } else if (m >= 0xD0 && m <= 0xD7) {
      if (m - 0xD0 != expect) return why = "a restart marker out of sequence", false;
      expect = (expect + 1) & 7;
      u.segment_start.push_back(static_cast<size_t>(out - u.bytes.data()));
    } else if (m == 0xD9) {
      break;
    } else {
      return why = fmt::format("marker 0x{:02X} after the scan (one scan and EOI expected)", m), false;
    }
  }
  std::memset(out, 0, 8);
  u.bytes.resize(static_cast<size_t>(out - u.bytes.data()) + 8);
  return true;
}

// Writes bits most significant first, stuffing a zero byte after each 0xFF, into memory the caller
// sized for the worst case (every byte stuffed), 32 bits at a time when none of their bytes is 0xFF.
class BitWriter {
 public:
  explicit BitWriter(char* at) : at_(at) {}
  __attribute__((always_inline)) void put(uint32_t bits, int n) {  // n <= 32
    acc_ = (acc_ << n) | (bits & ((uint64_t{1} << n) - 1));
    pending_ += n;
    if (pending_ >= 32) {
      pending_ -= 32;
      const uint32_t word = static_cast<uint32_t>(acc_ >> pending_);
      // A byte of `word` is 0xFF exactly when that byte of ~word is zero.
      const uint32_t inv = ~word;
      if (((inv - 0x01010101u) & ~inv & 0x80808080u) == 0) {
        const uint32_t be = __builtin_bswap32(word);
        std::memcpy(at_, &be, 4);
        at_ += 4;
      } else {
        for (int shift = 24; shift >= 0; shift -= 8) byte(static_cast<uint8_t>(word >> shift));
      }
    }
  }
  // Copies bits [from, to) of `in`.
  void copy(const BitReader& in, uint64_t from, uint64_t to) {
    BitReader r(in.data(), in.size());
    r.seek(from);
    for (uint64_t left = to - from; left > 0;) {
      r.ensure32();
      const int n = static_cast<int>(std::min<uint64_t>(left, 32));
      put(r.peek(n), n);
      r.skip(n);
      left -= static_cast<uint64_t>(n);
    }
  }
  // Pads the last byte with 1-bits and writes what is pending (a restart marker may follow).
  void end() {
    if (pending_ % 8) put((1u << (8 - pending_ % 8)) - 1, 8 - pending_ % 8);
    for (; pending_ >= 8; pending_ -= 8) byte(static_cast<uint8_t>(acc_ >> (pending_ - 8)));
  }
  char* at() const { return at_; }

 private:
  void byte(uint8_t b) {
    *at_++ = static_cast<char>(b);
    if (b == 0xFF) *at_++ = 0;
  }
  char* at_;
  uint64_t acc_ = 0;
  int pending_ = 0;
};

struct Component {
  int id = 0, h = 1, v = 1;
  int dc = 0, ac = 0;  // table numbers, from the scan header
};

// What the markers before the entropy-coded data say.
struct Headers {
  std::string kept;  // the segments copied into the rewritten file's header
  size_t sof = 0;    // offset of the SOF marker in `kept`
  int64_t height = 0, width = 0;
  std::array<HuffTable, 4> dc_tables, ac_tables;
  std::vector<Component> frame, scan;  // frame order; scan order (the order of blocks in an MCU)
  int restart_interval = 0;
  size_t sos = 0;        // offset of the SOS marker
  size_t scan_data = 0;  // offset of the first entropy-coded byte
};

// The scan header: every component, sequential (spectral selection 0..63), no successive
// approximation, tables that were defined.
bool read_scan_header(std::string_view sb, Headers& h, std::string& why) {
  const size_t ns = sb.empty() ? 0 : static_cast<unsigned char>(sb[0]);
  if (ns != h.frame.size() || sb.size() < 1 + 2 * ns + 3) return why = "the scan does not hold every component", false;
  for (size_t k = 0; k < ns; ++k) {
    const int id = static_cast<unsigned char>(sb[1 + 2 * k]);
    auto it = std::find_if(h.frame.begin(), h.frame.end(), [&](const Component& c) { return c.id == id; });
    if (it == h.frame.end()) return why = "the scan names an unknown component", false;
    Component c = *it;
    c.dc = static_cast<unsigned char>(sb[2 + 2 * k]) >> 4;
    c.ac = static_cast<unsigned char>(sb[2 + 2 * k]) & 15;
    if (c.dc > 3 || c.ac > 3 || !h.dc_tables[static_cast<size_t>(c.dc)].defined ||
        !h.ac_tables[static_cast<size_t>(c.ac)].defined)
      return why = "the scan uses an undefined Huffman table", false;
    h.scan.push_back(c);
  }
  if (static_cast<unsigned char>(sb[1 + 2 * ns]) != 0 || static_cast<unsigned char>(sb[2 + 2 * ns]) != 63 ||
      static_cast<unsigned char>(sb[3 + 2 * ns]) != 0)
    return why = "not a sequential scan", false;
  return true;
}

// Reads the markers up to and including SOS into `h`, and copies the kept ones into h.kept (all but
// the Huffman tables and the restart interval, which are written anew, and the segments that do not
// change pixels). Fails on anything but one sequential 8-bit Huffman scan holding every component.
bool read_headers(std::string_view d, int64_t max_pixels, Headers& h, std::string& why) {
  if (d.size() < 4 || static_cast<unsigned char>(d[0]) != 0xFF || static_cast<unsigned char>(d[1]) != 0xD8)
    return why = "not a JPEG (no SOI marker)", false;
  std::string& o = h.kept;
  o.assign(d.data(), 2);
  size_t at = 2;
  bool have_frame = false;
  for (;;) {
    while (at + 1 < d.size() && static_cast<unsigned char>(d[at]) == 0xFF &&
           static_cast<unsigned char>(d[at + 1]) == 0xFF)
      ++at;
    if (at + 4 > d.size() || static_cast<unsigned char>(d[at]) != 0xFF)
      return why = "no marker where one must be", false;
    const int m = static_cast<unsigned char>(d[at + 1]);
    const size_t len = be16(d, at + 2);
    if (len < 2 || at + 2 + len > d.size()) return why = "a marker segment runs past the end", false;
    std::string_view body = d.substr(at + 4, len - 2);
    if (m == 0xC0 || m == 0xC1) {
      if (have_frame || body.size() < 6) return why = "a second or short frame header", false;
      if (static_cast<unsigned char>(body[0]) != 8) return why = "not 8-bit samples", false;
      h.height = be16(body, 1);
      h.width = be16(body, 3);
      const size_t n = static_cast<unsigned char>(body[5]);
      if (h.height < 1 || h.width < 1) return why = "no image size in the frame header", false;
      if (h.height * h.width > max_pixels) return why = pixel_limit_error(h.height, h.width, max_pixels), false;
      if ((n != 1 && n != 3) || body.size() < 6 + 3 * n) return why = "not 1 or 3 components", false;
      for (size_t k = 0; k < n; ++k) {
        Component c;
        c.id = static_cast<unsigned char>(body[6 + 3 * k]);
        c.h = static_cast<unsigned char>(body[7 + 3 * k]) >> 4;
        c.v = static_cast<unsigned char>(body[7 + 3 * k]) & 15;
        if (c.h < 1 || c.h > 4 || c.v < 1 || c.v > 4) return why = "bad sampling factors", false;
        h.frame.push_back(c);
      }
      have_frame = true;
      h.sof = o.size();
      o.append(d.substr(at, 2 + len));
    } else if (m == 0xC4) {
      for (size_t p = 0; p < body.size();) {
        if (p + 17 > body.size()) return why = "a short Huffman table", false;
        const int cls = static_cast<unsigned char>(body[p]) >> 4, id = static_cast<unsigned char>(body[p]) & 15;
        if (cls > 1 || id > 3) return why = "a bad Huffman table class or number", false;
        HuffTable& t = cls == 0 ? h.dc_tables[static_cast<size_t>(id)] : h.ac_tables[static_cast<size_t>(id)];
        t = HuffTable();
        size_t total = 0;
        for (int len = 1; len <= 16; ++len)
          total += t.counts[len] = static_cast<unsigned char>(body[p + static_cast<size_t>(len)]);
        if (total > 256 || p + 17 + total > body.size()) return why = "a bad Huffman table", false;
        t.values.assign(body.begin() + static_cast<std::ptrdiff_t>(p + 17),
                        body.begin() + static_cast<std::ptrdiff_t>(p + 17 + total));
        if (!build_table(t, cls == 0)) return why = "a bad Huffman table", false;
        t.defined = true;
        p += 17 + total;
      }
    } else if (m == 0xDD) {
      if (body.size() != 2) return why = "a restart interval segment of the wrong length", false;
      h.restart_interval = static_cast<int>(be16(body, 0));
    } else if (m == 0xDA) {
      if (!have_frame) return why = "no frame header before the scan", false;
      h.sos = at;
      h.scan_data = at + 2 + len;
      return read_scan_header(body, h, why);
    } else if (m == 0xE0 || m == 0xEE || m == 0xDB) {
      // Quantization tables; JFIF and Adobe markers say how the components map to colours.
      o.append(d.substr(at, 2 + len));
    } else if ((m >= 0xE1 && m <= 0xEF) || m == 0xFE) {
      // Other application segments and comments (Exif, thumbnails) do not change pixels and are
      // dropped, so they do not weigh on every cut.
    } else {
      // Progressive, lossless or arithmetic frames, and whatever libjpeg would refuse.
      return why = fmt::format("marker 0x{:02X}: not a baseline single-scan JPEG", m), false;
    }
    at += 2 + len;
  }
}
constexpr uint32_t kNotRewritten = UINT32_MAX;

// The category of a DC value or difference (its bit count); more than 11 is out of an 8-bit file's range.
int dc_category(int value) {
  const int magnitude = value < 0 ? -value : value;
  return magnitude == 0 ? 0 : 32 - __builtin_clz(static_cast<unsigned>(magnitude));
}

}  // namespace

struct RestartRewriter::Tables {
  Headers h;
  HuffTable std_dc;  // written for every DC table number the scan uses
};

RestartRewriter::RestartRewriter() = default;
RestartRewriter::~RestartRewriter() = default;

bool RestartRewriter::open(std::string_view d, int64_t max_pixels, std::string& why) {
  tables_ = std::make_unique<Tables>();
  Headers& h = tables_->h;
  if (!read_headers(d, max_pixels, h, why)) return false;
  height_ = h.height;
  width_ = h.width;
  sof_ = h.sof;
  restart_interval_ = h.restart_interval;
  const size_t ns = h.scan.size();

  // MCU geometry: one block per MCU for a single component, else each component's h x v blocks.
  int hmax = 1, vmax = 1;
  for (const Component& c : h.frame) {
    hmax = std::max(hmax, c.h);
    vmax = std::max(vmax, c.v);
  }
  mcu_w_ = ns == 1 ? 8 : 8 * hmax;
  mcu_h_ = ns == 1 ? 8 : 8 * vmax;
  mcus_per_row_ = (width_ + mcu_w_ - 1) / mcu_w_;
  mcu_rows_ = (height_ + mcu_h_ - 1) / mcu_h_;
  blocks_per_mcu_ = 0;
  for (const Component& c : h.scan) blocks_per_mcu_ += ns == 1 ? 1 : c.h * c.v;

  Unstuffed u;
  if (!unstuff(d, h.scan_data, u, why)) return false;
  const size_t segments =
      restart_interval_ > 0 ? static_cast<size_t>((mcus() + restart_interval_ - 1) / restart_interval_) : 1;
  if (u.segment_start.size() != segments) return why = "the number of restart markers does not match the image", false;
  if (u.bytes.size() >= (size_t{1} << 29)) return why = "more than 512 MiB of entropy-coded data", false;
  bytes_ = std::move(u.bytes);
  segment_start_ = std::move(u.segment_start);

  // The new tables: the standard DC table under every DC table number the scan uses, the file's own
  // AC tables; then a restart interval of one MCU and the scan header as it was.
  HuffTable& std_dc = tables_->std_dc;
  std::memcpy(std_dc.counts, kStdDcCounts, sizeof(kStdDcCounts));
  std_dc.values.assign(kStdDcValues, kStdDcValues + 12);
  build_table(std_dc, true);
  std::string dht;
  bool dc_written[4] = {}, ac_written[4] = {};
  for (const Component& c : h.scan) {
    auto add = [&](int cls, int id, const HuffTable& t) {
      dht.push_back(static_cast<char>((cls << 4) | id));
      for (int len = 1; len <= 16; ++len) dht.push_back(static_cast<char>(t.counts[len]));
      dht.append(reinterpret_cast<const char*>(t.values.data()), t.values.size());
    };
    if (!dc_written[c.dc]) add(0, c.dc, std_dc);
    if (!ac_written[c.ac]) add(1, c.ac, h.ac_tables[static_cast<size_t>(c.ac)]);
    dc_written[c.dc] = ac_written[c.ac] = true;
  }
  header_ = std::move(h.kept);
  header_.append("\xFF\xC4", 2);
  put_be16(header_, static_cast<uint32_t>(dht.size() + 2));
  header_.append(dht);
  header_.append("\xFF\xDD\x00\x04\x00\x01", 6);
  header_.append(d.substr(h.sos, h.scan_data - h.sos));

  start_.reserve(static_cast<size_t>(mcus()) + 1);
  block_end_.reserve(static_cast<size_t>(mcus() * blocks_per_mcu_));
  start_.push_back(McuStart{});
  rewritten_at_.assign(static_cast<size_t>(mcus()), kNotRewritten);
  rewritten_length_.assign(static_cast<size_t>(mcus()), 0);
  return true;
}

bool RestartRewriter::scan_to(int64_t end, std::string& why) {
  if (!scan_error_.empty()) return why = scan_error_, false;
  end = std::min(end, mcus());
  if (scanned_ >= end) return true;
  const Headers& h = tables_->h;
  const std::vector<Component>& scan = h.scan;
  const size_t ns = scan.size();
  const int64_t ri = restart_interval_;
  auto fail = [&](const char* reason) {
    scan_error_ = why = reason;
    return false;
  };
  // The AC skip tables for the bytes about to be read (about: MCUs differ in size).
  const size_t ahead = static_cast<size_t>(static_cast<double>(bytes_.size()) * static_cast<double>(end - scanned_) /
                                           static_cast<double>(mcus()));
  std::array<std::shared_ptr<const MultiSkipTable>, 4> multi;
  for (const Component& c : scan)
    if (!multi[static_cast<size_t>(c.ac)])
      multi[static_cast<size_t>(c.ac)] = multi_skip_for(h.ac_tables[static_cast<size_t>(c.ac)], ahead);
  std::array<const uint16_t*, 4> multi_entries{};
  for (size_t id = 0; id < 4; ++id) multi_entries[id] = multi[id] ? multi[id]->entries.data() : nullptr;
  BitReader in(bytes_.data(), bytes_.size());
  in.seek(start_[static_cast<size_t>(scanned_)].bit);
  for (int64_t m = scanned_; m < end; ++m) {
    const McuStart& s = start_[static_cast<size_t>(m)];
    if (in.pos() != s.bit) in.seek(s.bit);  // the start of one of the file's own restart segments
    const size_t segment = ri > 0 ? static_cast<size_t>(m / ri) : 0;
    const uint64_t segment_end =
        (segment + 1 < segment_start_.size() ? segment_start_[segment + 1] : bytes_.size() - 8) * 8;
    std::array<int32_t, 3> pred = s.pred;
    for (size_t ci = 0; ci < ns; ++ci) {
      const Component& c = scan[ci];
      const HuffTable& dc = h.dc_tables[static_cast<size_t>(c.dc)];
      const HuffTable& ac = h.ac_tables[static_cast<size_t>(c.ac)];
      const uint16_t* const ac_multi = multi_entries[static_cast<size_t>(c.ac)];
      const int blocks = ns == 1 ? 1 : c.h * c.v;
      for (int b = 0; b < blocks; ++b) {
        int diff = 0;
        if (!read_dc_diff(in, dc, diff)) return fail("corrupt data: a bad Huffman code");
        pred[ci] += diff;
        // After the restart in front of this MCU the first block of each component codes its value
        // from zero; the others code the same difference as before. Both must have a DC code.
        if (dc_category(b == 0 ? pred[ci] : diff) > 11) return fail("a DC value out of range");
        if (!skip_ac(in, ac, ac_multi, why)) {
          scan_error_ = why;
          return false;
        }
        if (in.pos() > segment_end) return fail("corrupt data: an MCU runs past its segment");
        block_end_.push_back(static_cast<uint32_t>(in.pos()));
      }
    }
    McuStart next;
    if (ri > 0 && (m + 1) % ri == 0) {
      // The next MCU starts the next segment: at its first byte, predicting from zero.
      next.bit =
          m + 1 < mcus() ? static_cast<uint32_t>(segment_start_[segment + 1] * 8) : static_cast<uint32_t>(in.pos());
    } else {
      next.bit = static_cast<uint32_t>(in.pos());
      next.pred = pred;
    }
    start_.push_back(next);
  }
  scanned_ = end;
  return true;
}

bool RestartRewriter::rewrite(int64_t m, std::string& why) {
  const Headers& h = tables_->h;
  const HuffTable& std_dc = tables_->std_dc;
  const std::vector<Component>& scan = h.scan;
  const size_t ns = scan.size();
  const McuStart& s = start_[static_cast<size_t>(m)];
  // The most an MCU can take: each block's bits grow by at most 20 (a 9-bit DC code and 11 bits,
  // against at least 1 before), the padding 7 bits, and stuffing can double every byte.
  const size_t bound =
      2 * ((start_[static_cast<size_t>(m) + 1].bit - s.bit) / 8 + 1 + static_cast<size_t>(blocks_per_mcu_) * 3 + 1) +
      16;
  thread_local std::vector<char> scratch;
  if (scratch.size() < bound) scratch.resize(bound);
  BitReader in(bytes_.data(), bytes_.size());
  in.seek(s.bit);
  BitWriter w(scratch.data());
  std::array<int32_t, 3> pred = s.pred;
  // The scan remembered where each block's AC bits end: only the DC differences are decoded again.
  const uint32_t* end = block_end_.data() + static_cast<size_t>(m) * static_cast<size_t>(blocks_per_mcu_);
  for (size_t ci = 0; ci < ns; ++ci) {
    const Component& c = scan[ci];
    const HuffTable& dc = h.dc_tables[static_cast<size_t>(c.dc)];
    const int blocks = ns == 1 ? 1 : c.h * c.v;
    for (int b = 0; b < blocks; ++b, ++end) {
      int diff = 0;
      if (!read_dc_diff(in, dc, diff)) return why = "corrupt data: a bad Huffman code", false;
      pred[ci] += diff;
      const int value = b == 0 ? pred[ci] : diff;
      const int category = dc_category(value);
      if (category > 11) return why = "a DC value out of range", false;
      w.put(std_dc.code[category], std_dc.length[category]);
      if (category > 0) w.put(static_cast<uint32_t>(value < 0 ? value - 1 : value), category);
      w.copy(in, in.pos(), *end);
      in.seek(*end);
    }
  }
  w.end();
  const size_t length = static_cast<size_t>(w.at() - scratch.data());
  if (rewritten_.size() + length >= kNotRewritten) return why = "more than 4 GiB", false;
  rewritten_at_[static_cast<size_t>(m)] = static_cast<uint32_t>(rewritten_.size());
  rewritten_length_[static_cast<size_t>(m)] = static_cast<uint32_t>(length);
  rewritten_.append(scratch.data(), length);
  ++rewritten_count_;
  return true;
}

bool RestartRewriter::append_mcus(int64_t first, int64_t count, int64_t& k, std::string& out, std::string& why) {
  if (first < 0 || count < 0 || first + count > scanned_) return why = "MCUs not scanned yet", false;
  if (!scan_error_.empty()) return why = scan_error_, false;
  for (int64_t m = first; m < first + count; ++m, ++k) {
    const size_t i = static_cast<size_t>(m);
    if (complete_) {
      out.append(rewritten_, rewritten_at_[i], rewritten_at_[i + 1] - rewritten_at_[i]);
    } else {
      if (rewritten_at_[i] == kNotRewritten) {
        if (rewritten_.empty()) rewritten_.reserve(rewritten_estimate());
        if (!rewrite(m, why)) return false;
      }
      out.append(rewritten_, rewritten_at_[i], rewritten_length_[i]);
    }
    out.push_back(static_cast<char>(0xFF));
    out.push_back(static_cast<char>(0xD0 + (k & 7)));
  }
  if (rewritten_count_ == mcus() && !complete_) compact();
  return true;
}

void RestartRewriter::compact() {
  // Every MCU is rewritten: put them in file order, where one offset per MCU says where each starts,
  // and drop what only the rewriting read (the scan's bytes, the MCU starts).
  std::string ordered;
  ordered.reserve(rewritten_.size());
  std::vector<uint32_t> at;
  at.reserve(rewritten_at_.size() + 1);
  for (size_t i = 0; i < rewritten_at_.size(); ++i) {
    at.push_back(static_cast<uint32_t>(ordered.size()));
    ordered.append(rewritten_, rewritten_at_[i], rewritten_length_[i]);
  }
  at.push_back(static_cast<uint32_t>(ordered.size()));
  rewritten_ = std::move(ordered);
  rewritten_at_ = std::move(at);
  std::vector<uint32_t>().swap(rewritten_length_);
  ScanBytes().swap(bytes_);
  std::vector<size_t>().swap(segment_start_);
  std::vector<McuStart>().swap(start_);
  std::vector<uint32_t>().swap(block_end_);
  complete_ = true;
}

size_t RestartRewriter::memory_bytes() const {
  return header_.capacity() + bytes_.capacity() + segment_start_.capacity() * sizeof(size_t) +
         start_.capacity() * sizeof(McuStart) + block_end_.capacity() * sizeof(uint32_t) + rewritten_.capacity() +
         (rewritten_at_.capacity() + rewritten_length_.capacity()) * sizeof(uint32_t);
}

size_t RestartRewriter::rewritten_estimate() const {
  // Rewritten, an MCU grows by its padding and marker and about a byte per block (its new DC code).
  return bytes_.size() + static_cast<size_t>(mcus()) * static_cast<size_t>(3 + blocks_per_mcu_);
}

size_t RestartRewriter::planned_bytes() const {
  const size_t n = static_cast<size_t>(mcus());
  return header_.size() + bytes_.size() + segment_start_.size() * sizeof(size_t) + (n + 1) * sizeof(McuStart) +
         n * static_cast<size_t>(2 + blocks_per_mcu_) * sizeof(uint32_t) + rewritten_estimate();
}

}  // namespace pipec
