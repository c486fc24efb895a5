#include "runtime/image/jpeg_restart_rewrite.h"

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>

#include "runtime/image/decode_options.h"

namespace pipec {

namespace {

// The standard luminance DC table (T.81 Table K.3): codes for difference categories 0..11.
constexpr uint8_t kStdDcCounts[17] = {0, 0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0};
constexpr uint8_t kStdDcValues[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

constexpr int kSkipBits = 10;
constexpr int kZrl = 0x80;  // in skip_advance: the move is a run of 16 zeros

struct HuffTable {
  bool defined = false;
  uint8_t counts[17] = {};
  std::vector<uint8_t> values;
  uint16_t fast[512] = {};  // (length << 8) | value for codes of at most 9 bits, 0 for longer ones
  int32_t maxcode[17] = {};
  int32_t valoffset[17] = {};
  // AC tables: what one symbol and its extra bits amount to, from the next kSkipBits bits: the bits to
  // skip and how far the coefficient index moves (0: end of block; kZrl marks a run of 16 zeros);
  // bits 0 when the code and its extra bits are longer than kSkipBits (then decode() and the extra
  // bits are taken one after the other).
  uint8_t skip_bits[1 << kSkipBits] = {};
  uint8_t skip_advance[1 << kSkipBits] = {};
  // encoding (the standard DC table only)
  uint16_t code[16] = {};
  uint8_t length[16] = {};
};

// Canonical codes from the counts (T.81 C.1-C.2); false for a table that overflows its code space,
// which libjpeg also refuses (the all-ones code of each length stays unused).
bool build_table(HuffTable& t, bool dc) {
  int next = 0, k = 0;
  if (dc)
    for (uint8_t v : t.values)
      if (v > 15) return false;
  for (int len = 1; len <= 16; ++len) {
    t.valoffset[len] = k - next;
    for (int i = 0; i < t.counts[len]; ++i, ++k, ++next) {
      if (next + 1 >= (1 << len)) return false;  // past the code space (or onto the all-ones code)
      if (len <= 9) {
        const int shift = 9 - len;
        for (int j = 0; j < (1 << shift); ++j)
          t.fast[(next << shift) | j] = static_cast<uint16_t>((len << 8) | t.values[static_cast<size_t>(k)]);
      }
      if (t.values[static_cast<size_t>(k)] < 16) {
        t.code[t.values[static_cast<size_t>(k)]] = static_cast<uint16_t>(next);
        t.length[t.values[static_cast<size_t>(k)]] = static_cast<uint8_t>(len);
      }
    }
    t.maxcode[len] = t.counts[len] ? next - 1 : -1;
    next <<= 1;
  }
  if (!dc)
    for (int bits = 0; bits < (1 << kSkipBits); ++bits) {
      const uint16_t f = t.fast[bits >> (kSkipBits - 9)];
      if (!f) continue;
      const int len = f >> 8, r = (f & 0xFF) >> 4, size = f & 15;
      if (len + size > kSkipBits) continue;
      t.skip_bits[bits] = static_cast<uint8_t>(len + size);
      // libjpeg's loop: a coefficient moves k by r + 1, ZRL (r = 15, size 0) by 16, anything else with
      // size 0 ends the block.
      t.skip_advance[bits] = static_cast<uint8_t>(size ? r + 1 : r == 15 ? 16 | kZrl : 0);
    }
  return true;
}

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
  std::vector<uint8_t> bytes;
  std::vector<size_t> segment_start;
};

bool unstuff(std::string_view d, size_t at, Unstuffed& u, std::string& why) {
  u.bytes.reserve(d.size() - at + 8);
  u.segment_start.push_back(0);
  int expect = 0;
  const char* p = d.data() + at;
  const char* end = d.data() + d.size();
  for (;;) {
    const char* ff = static_cast<const char*>(std::memchr(p, 0xFF, static_cast<size_t>(end - p)));
    if (!ff) return why = "truncated: the data ends in the middle of the image", false;
    u.bytes.insert(u.bytes.end(), p, ff);
    p = ff + 1;
    const char* const fill = p;
    while (p < end && static_cast<unsigned char>(*p) == 0xFF) ++p;  // fill bytes before a marker
    if (p >= end) return why = "truncated: the data ends in the middle of the image", false;
    const int m = static_cast<unsigned char>(*p++);
    if (m == 0x00) {
      // Fill bytes belong before markers only. FF FF 00 inside the data is one data byte FF to
      // libjpeg-turbo's slow decoder but a marker to its fast one, which then leaves the coefficients
      // it had decoded from zeros in the block the slow one decodes again (the image fuzzer found a
      // cut that decoded differently so): such a file is libjpeg's to decode, not ours to copy.
      if (p - 1 != fill) return why = "corrupt data: fill bytes inside the entropy-coded data", false;
      u.bytes.push_back(0xFF);
    } else if (m >= 0xD0 && m <= 0xD7) {
      if (m - 0xD0 != expect) return why = "a restart marker out of sequence", false;
      expect = (expect + 1) & 7;
      u.segment_start.push_back(u.bytes.size());
    } else if (m == 0xD9) {
      break;
    } else {
      return why = fmt::format("marker 0x{:02X} after the scan (one scan and EOI expected)", m), false;
    }
  }
  u.bytes.insert(u.bytes.end(), 8, 0);
  return true;
}

// Reads bits most significant first from unstuffed bytes. The next bits wait left-aligned in a 64-bit
// register, refilled a few bytes at a time, so peeking and skipping cost a shift each.
class BitReader {
 public:
  BitReader(const uint8_t* data, size_t size) : data_(data), size_(size) { refill(); }
  // Makes at least 56 bits available. Past the end (corrupt data runs on until its block ends, which
  // is checked against the segment's end) the bits are zeros.
  __attribute__((always_inline)) void refill() {
    uint64_t w = 0;
    if (__builtin_expect(byte_ + 8 <= size_, 1)) {
      std::memcpy(&w, data_ + byte_, 8);
      w = __builtin_bswap64(w);
    } else {
      for (uint64_t i = 0; i < 8; ++i) w = w << 8 | (byte_ + i < size_ ? data_[byte_ + i] : 0);
    }
    buf_ |= w >> count_;
    const int take = (63 - count_) >> 3;
    byte_ += static_cast<uint64_t>(take);
    count_ += take * 8;
  }
  // The next n (1..32) bits; at least n must be available.
  __attribute__((always_inline)) uint32_t peek(int n) const { return static_cast<uint32_t>(buf_ >> (64 - n)); }
  __attribute__((always_inline)) void skip(int n) {
    buf_ <<= n;
    count_ -= n;
  }
  __attribute__((always_inline)) void ensure32() {
    if (count_ < 32) refill();
  }
  uint64_t pos() const { return byte_ * 8 - static_cast<uint64_t>(count_); }
  void seek(uint64_t bit) {
    byte_ = bit >> 3;
    buf_ = 0;
    count_ = 0;
    refill();
    skip(static_cast<int>(bit & 7));
  }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

  // One Huffman symbol; -1 for a code the table does not have. Needs 16 bits available.
  __attribute__((always_inline)) int decode(const HuffTable& t) {
    const uint32_t bits = peek(16);
    if (uint16_t f = t.fast[bits >> 7]) {
      skip(f >> 8);
      return f & 0xFF;
    }
    for (int len = 10; len <= 16; ++len) {
      const int32_t code = static_cast<int32_t>(bits >> (16 - len));
      if (code <= t.maxcode[len]) {
        skip(len);
        return t.values[static_cast<size_t>(code + t.valoffset[len])];
      }
    }
    return -1;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  uint64_t byte_ = 0;  // next byte to load
  uint64_t buf_ = 0;
  int count_ = 0;  // valid bits in buf_
};

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
  // Pads the last byte with 1-bits, then a marker.
  void end_with_marker(int marker) {
    if (pending_ % 8) put((1u << (8 - pending_ % 8)) - 1, 8 - pending_ % 8);
    for (; pending_ >= 8; pending_ -= 8) byte(static_cast<uint8_t>(acc_ >> (pending_ - 8)));
    *at_++ = static_cast<char>(0xFF);
    *at_++ = static_cast<char>(marker);
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

// Reads the markers up to and including SOS into `h`, and copies the kept ones into out.data (all but
// the Huffman tables and the restart interval, which are written anew, and the segments that do not
// change pixels). Fails on anything but one sequential 8-bit Huffman scan holding every component.
bool read_headers(std::string_view d, int64_t max_pixels, Headers& h, RestartRewrite& out, std::string& why) {
  if (d.size() < 4 || static_cast<unsigned char>(d[0]) != 0xFF || static_cast<unsigned char>(d[1]) != 0xD8)
    return why = "not a JPEG (no SOI marker)", false;
  std::string& o = out.data;
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
      out.height = be16(body, 1);
      out.width = be16(body, 3);
      const size_t n = static_cast<unsigned char>(body[5]);
      if (out.height < 1 || out.width < 1) return why = "no image size in the frame header", false;
      if (out.height * out.width > max_pixels) return why = pixel_limit_error(out.height, out.width, max_pixels), false;
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
      out.sof = o.size();
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
// Moves `in` past one block's AC coefficients, as libjpeg's decoding loop reads them.
bool skip_ac(BitReader& in, const HuffTable& ac, std::string& why) {
  for (int k = 1; k < 64;) {
    in.ensure32();
    const uint32_t next = in.peek(kSkipBits);
    if (const int n = ac.skip_bits[next]) {
      in.skip(n);
      const int advance = ac.skip_advance[next];
      if (advance == 0) break;
      k += advance & ~kZrl;
      // A coefficient placed past index 63, or a run of zeros that no coefficient follows, is
      // corrupt data, on which libjpeg-turbo's fast and slow decoding paths can disagree.
      if (k > ((advance & kZrl) ? 63 : 64)) return why = "corrupt data: a block of more than 64 coefficients", false;
      continue;
    }
    const int rs = in.decode(ac);
    if (rs < 0) return why = "corrupt data: a bad Huffman code", false;
    const int r = rs >> 4, size = rs & 15;
    if (size) {
      k += r + 1;
      in.skip(size);
      if (k > 64) return why = "corrupt data: a block of more than 64 coefficients", false;
    } else {
      if (r != 15) break;
      k += 16;
      if (k > 63) return why = "corrupt data: a block of more than 64 coefficients", false;
    }
  }
  return true;
}

}  // namespace

bool rewrite_with_restart_per_mcu(std::string_view d, int64_t max_pixels, RestartRewrite& out, std::string& why) {
  Headers h;
  if (!read_headers(d, max_pixels, h, out, why)) return false;
  std::string& o = out.data;
  const size_t ns = h.scan.size();
  const std::vector<Component>& scan = h.scan;
  const int restart_interval = h.restart_interval;

  // MCU geometry: one block per MCU for a single component, else each component's h x v blocks.
  int hmax = 1, vmax = 1;
  for (const Component& c : h.frame) {
    hmax = std::max(hmax, c.h);
    vmax = std::max(vmax, c.v);
  }
  out.mcu_w = ns == 1 ? 8 : 8 * hmax;
  out.mcu_h = ns == 1 ? 8 : 8 * vmax;
  out.mcus_per_row = (out.width + out.mcu_w - 1) / out.mcu_w;
  out.mcu_rows = (out.height + out.mcu_h - 1) / out.mcu_h;
  const int64_t mcus = out.mcus_per_row * out.mcu_rows;

  // Per-thread scratch, reused from file to file: no page faults or zero-filling for the big
  // temporaries of every rewrite.
  thread_local Unstuffed u;
  thread_local std::vector<char> scan_out;
  u.bytes.clear();
  u.segment_start.clear();
  if (!unstuff(d, h.scan_data, u, why)) return false;
  const size_t segments =
      restart_interval > 0 ? static_cast<size_t>((mcus + restart_interval - 1) / restart_interval) : 1;
  if (u.segment_start.size() != segments) return why = "the number of restart markers does not match the image", false;

  // The new tables: the standard DC table under every DC table number the scan uses, the file's own
  // AC tables; then a restart interval of one MCU and the scan header as it was.
  HuffTable std_dc;
  std::memcpy(std_dc.counts, kStdDcCounts, sizeof(kStdDcCounts));
  std_dc.values.assign(kStdDcValues, kStdDcValues + 12);
  build_table(std_dc, true);
  std::string dht;
  bool dc_written[4] = {}, ac_written[4] = {};
  for (const Component& c : scan) {
    auto add = [&](int cls, int id, const HuffTable& t) {
      dht.push_back(static_cast<char>((cls << 4) | id));
      for (int len = 1; len <= 16; ++len) dht.push_back(static_cast<char>(t.counts[len]));
      dht.append(reinterpret_cast<const char*>(t.values.data()), t.values.size());
    };
    if (!dc_written[c.dc]) add(0, c.dc, std_dc);
    if (!ac_written[c.ac]) add(1, c.ac, h.ac_tables[static_cast<size_t>(c.ac)]);
    dc_written[c.dc] = ac_written[c.ac] = true;
  }
  o.append("\xFF\xC4", 2);
  put_be16(o, static_cast<uint32_t>(dht.size() + 2));
  o.append(dht);
  o.append("\xFF\xDD\x00\x04\x00\x01", 6);
  o.append(d.substr(h.sos, h.scan_data - h.sos));
  out.scan = o.size();
  // The most the scan can take: each block's bits grow by at most 20 (a 9-bit DC code and 11 bits,
  // against at least 1 before), each MCU's by 7 bits of padding and a 2-byte marker, and stuffing can
  // double every byte.
  int blocks_per_mcu = 0;
  for (const Component& c : scan) blocks_per_mcu += ns == 1 ? 1 : c.h * c.v;
  const size_t bound =
      2 * (u.bytes.size() + static_cast<size_t>(mcus) * (static_cast<size_t>(blocks_per_mcu) * 3 + 3)) + 64;
  if (scan_out.size() < bound) scan_out.resize(bound);

  out.mcu_start.clear();
  out.mcu_start.reserve(static_cast<size_t>(mcus) + 1);
  out.mcu_start.push_back(static_cast<uint32_t>(out.scan));
  BitReader in(u.bytes.data(), u.bytes.size());
  char* const scan_base = scan_out.data();
  BitWriter w(scan_base);
  int pred[4] = {};
  size_t segment = 0;
  uint64_t segment_end = (segments > 1 ? u.segment_start[1] : u.bytes.size() - 8) * 8;
  for (int64_t m = 0; m < mcus; ++m) {
    if (restart_interval > 0 && m > 0 && m % restart_interval == 0) {
      ++segment;
      in.seek(u.segment_start[segment] * 8);
      segment_end = (segment + 1 < segments ? u.segment_start[segment + 1] : u.bytes.size() - 8) * 8;
      std::fill(std::begin(pred), std::end(pred), 0);
    }
    for (size_t ci = 0; ci < scan.size(); ++ci) {
      const Component& c = scan[ci];
      const HuffTable& dc = h.dc_tables[static_cast<size_t>(c.dc)];
      const HuffTable& ac = h.ac_tables[static_cast<size_t>(c.ac)];
      const int blocks = ns == 1 ? 1 : c.h * c.v;
      for (int b = 0; b < blocks; ++b) {
        in.ensure32();
        const int s = in.decode(dc);
        if (s < 0) return why = "corrupt data: a bad Huffman code", false;
        int diff = 0;
        if (s > 0) {
          const int bits = static_cast<int>(in.peek(s));
          in.skip(s);
          diff = bits < (1 << (s - 1)) ? bits - (1 << s) + 1 : bits;
        }
        pred[ci] += diff;
        // After the restart in front of this MCU the first block of each component codes its value
        // from zero; the others code the same difference as before.
        const int value = b == 0 ? pred[ci] : diff;
        const int magnitude = value < 0 ? -value : value;
        const int category = magnitude == 0 ? 0 : 32 - __builtin_clz(static_cast<unsigned>(magnitude));
        if (category > 11) return why = "a DC value out of range", false;
        w.put(std_dc.code[category], std_dc.length[category]);
        if (category > 0) w.put(static_cast<uint32_t>(value < 0 ? value - 1 : value), category);
        const uint64_t ac_start = in.pos();
        if (!skip_ac(in, ac, why)) return false;
        if (in.pos() > segment_end) return why = "corrupt data: an MCU runs past its segment", false;
        w.copy(in, ac_start, in.pos());
      }
    }
    w.end_with_marker(m + 1 < mcus ? 0xD0 + static_cast<int>(m & 7) : 0xD9);
    out.mcu_start.push_back(static_cast<uint32_t>(out.scan + static_cast<size_t>(w.at() - scan_base)));
  }
  o.reserve(out.scan + static_cast<size_t>(w.at() - scan_base));
  o.append(scan_base, w.at());
  if (o.size() >= (size_t{1} << 32)) return why = "more than 4 GiB", false;
  return true;
}

}  // namespace pipec
