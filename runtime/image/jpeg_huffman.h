// Huffman decoding for the JPEG window index's scan (jpeg_restart_rewrite.h): the tables of one
// file, a bit reader over its unstuffed entropy-coded bytes, and the two steps the scan takes per
// block: read a DC difference, move past the AC coefficients without materialising them.
//
// Skipping AC coefficients is most of the index's first pass. Each step of the loop waits for the
// table lookup before it knows how far to shift, so the loop is as fast as its chain of lookups: one
// symbol per lookup (HuffTable::skip, the next kSkipBits bits) was 1.2 ms of CPU per 1280x720 photo,
// more than libjpeg-turbo's cropping decode spends on the same rows. A MultiSkipTable looks up
// kMultiBits bits and moves past every symbol whose code lies in them (extra bits need not, since
// they are skipped, not read): two to three per lookup in photos. It has 4096 entries to build (about
// 15 us), so each thread keeps the last few it built (most files share the standard tables), and
// multi_skip_for builds one only once the bytes scanned with that code table would repay it. An index
// does not hold one between scans.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace pipec::jpeg_huffman {

constexpr int kMultiBits = 12;
// A MultiSkipTable entry: the bits to skip (codes and extra bits), whether the block ends among the
// symbols (an end-of-block code, which is the last), and how far they move the coefficient index.
// The bits fill the low 6, all a 64-bit shift reads on x86, so skipping them needs no masking.
constexpr uint32_t kMultiBitsMask = 63;
constexpr uint32_t kMultiEnd = 64;
constexpr int kMultiAdvanceShift = 7;

struct MultiSkipTable {
  // The table's key: its code counts and values.
  std::array<uint8_t, 17> counts{};
  std::vector<uint8_t> values;
  // Indexed by the next kMultiBits bits; 0 when they do not hold the first symbol's whole code.
  std::array<uint16_t, 1 << kMultiBits> entries{};
};

constexpr int kSkipBits = 10;
constexpr int kZrl = 0x80;  // in HuffTable::skip: the move is a run of 16 zeros

struct HuffTable {
  bool defined = false;
  uint8_t counts[17] = {};
  std::vector<uint8_t> values;
  uint16_t fast[512] = {};  // (length << 8) | value for codes of at most 9 bits, 0 for longer ones
  int32_t maxcode[17] = {};
  int32_t valoffset[17] = {};
  // AC tables: what one symbol and its extra bits amount to, from the next kSkipBits bits (which
  // hold its code, when that is at most kSkipBits long): (the bits to skip, code and extra bits,
  // << 8) | how far the coefficient index moves (0: end of block; kZrl marks a run of 16 zeros); 0
  // for a longer code (then decode() and the extra bits are taken one after the other).
  uint16_t skip[1 << kSkipBits] = {};
  // encoding (the standard DC table only)
  uint16_t code[16] = {};
  uint8_t length[16] = {};
};

/// Canonical codes from the counts (T.81 C.1-C.2); false for a table that overflows its code space,
/// which libjpeg also refuses (the all-ones code of each length stays unused).
bool build_table(HuffTable& t, bool dc);

/// `ac`'s MultiSkipTable (built by build_table first), built anew.
std::shared_ptr<const MultiSkipTable> build_multi_skip(const HuffTable& ac);

/// `ac`'s MultiSkipTable from this thread's store of the last few used, or built (and stored) once
/// the scan about to read `scan_bytes` with it, with what scans read with that code table and no
/// MultiSkipTable before, reaches kMultiSkipWorthBytes; null when not (yet) worth building.
constexpr size_t kMultiSkipWorthBytes = 32 * 1024;
std::shared_ptr<const MultiSkipTable> multi_skip_for(const HuffTable& ac, size_t scan_bytes);

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

// Moves `in` past one block's AC coefficients, as libjpeg's decoding loop reads them; with `ac`'s
// MultiSkipTable when `multi` (its entries) is not null.
__attribute__((always_inline)) inline bool skip_ac(BitReader& in, const HuffTable& ac, const uint16_t* multi,
                                                   std::string& why) {
  for (int k = 1; k < 64;) {
    in.ensure32();
    if (multi) {
      // Several symbols at once, unless the next code is longer than kMultiBits or the block may
      // end within them (at index 64, where libjpeg stops reading): then one as below.
      const uint32_t e = multi[in.peek(kMultiBits)];
      const int advance = static_cast<int>(e >> kMultiAdvanceShift);
      if (e != 0 && k + advance < 64) {
        in.skip(static_cast<int>(e & kMultiBitsMask));  // at most kMultiBits + 15 bits
        if (e & kMultiEnd) break;
        k += advance;
        continue;
      }
    }
    if (const int step = ac.skip[in.peek(kSkipBits)]) {
      in.skip(step >> 8);  // at most 10 + 15 bits
      const int advance = step & 0xFF;
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

// One DC difference, as libjpeg decodes it; false for a code the table does not have.
__attribute__((always_inline)) inline bool read_dc_diff(BitReader& in, const HuffTable& dc, int& diff) {
  in.ensure32();
  const int s = in.decode(dc);
  if (s < 0) return false;
  diff = 0;
  if (s > 0) {
    const int bits = static_cast<int>(in.peek(s));
    in.skip(s);
    diff = bits < (1 << (s - 1)) ? bits - (1 << s) + 1 : bits;
  }
  return true;
}

}  // namespace pipec::jpeg_huffman
