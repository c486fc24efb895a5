#include "runtime/image/jpeg_huffman.h"

#include <algorithm>

namespace pipec::jpeg_huffman {

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
  if (!dc) {
    // Every code of at most kSkipBits bits, followed by each possible rest of the lookup's bits.
    int code = 0, v = 0;
    for (int len = 1; len <= 16; ++len, code <<= 1)
      for (int i = 0; i < t.counts[len]; ++i, ++code, ++v) {
        if (len > kSkipBits) continue;
        const int rs = t.values[static_cast<size_t>(v)], r = rs >> 4, size = rs & 15;
        // libjpeg's loop: a coefficient moves k by r + 1, ZRL (r = 15, size 0) by 16, anything else
        // with size 0 ends the block.
        const int advance = size ? r + 1 : r == 15 ? 16 | kZrl : 0;
        const int shift = kSkipBits - len;
        for (int j = 0; j < (1 << shift); ++j)
          t.skip[(code << shift) | j] = static_cast<uint16_t>(((len + size) << 8) | advance);
      }
  }
  return true;
}

std::shared_ptr<const MultiSkipTable> build_multi_skip(const HuffTable& ac) {
  auto table = std::make_shared<MultiSkipTable>();
  std::copy(std::begin(ac.counts), std::end(ac.counts), table->counts.begin());
  table->values = ac.values;
  constexpr int kSize = 1 << kMultiBits;
  // The first symbol at the top of kMultiBits bits: (code length << 8) | its value, 0 for a longer code.
  std::vector<uint16_t> first(kSize, 0);
  int code = 0, v = 0;
  for (int len = 1; len <= 16; ++len, code <<= 1)
    for (int i = 0; i < ac.counts[len]; ++i, ++code, ++v) {
      if (len > kMultiBits) continue;
      const int shift = kMultiBits - len;
      for (int j = 0; j < (1 << shift); ++j)
        first[static_cast<size_t>((code << shift) | j)] =
            static_cast<uint16_t>((len << 8) | ac.values[static_cast<size_t>(v)]);
    }
  for (int x = 0; x < kSize; ++x) {
    // Symbols one after the other, as skip_ac's one-symbol steps take them, while the next code lies
    // within the bits looked up (the bits below them are unknown: a code found in the zeros shifted
    // in is not taken).
    int at = 0, advance = 0;
    uint32_t end = 0;
    while (at < kMultiBits) {
      const uint16_t f = first[static_cast<size_t>((x << at) & (kSize - 1))];
      const int len = f >> 8;
      if (f == 0 || len > kMultiBits - at) break;
      const int r = (f & 0xFF) >> 4, size = f & 15;
      at += len + size;
      if (size) {
        advance += r + 1;
      } else if (r == 15) {
        advance += 16;
      } else {
        end = kMultiEnd;
        break;
      }
      if (advance >= 64) break;  // no use going on: skip_ac takes the group only below index 64
    }
    if (at > 0)
      table->entries[static_cast<size_t>(x)] =
          static_cast<uint16_t>(static_cast<uint32_t>(at) | end | static_cast<uint32_t>(advance) << kMultiAdvanceShift);
  }
  return table;
}

namespace {

// A code table this thread scanned with lately, by its counts and values: its MultiSkipTable, or the
// bytes scanned with it while it had none.
struct Seen {
  std::array<uint8_t, 17> counts{};
  std::vector<uint8_t> values;
  std::shared_ptr<const MultiSkipTable> table;
  size_t bytes_without = 0;
};
constexpr size_t kKept = 8;

}  // namespace

std::shared_ptr<const MultiSkipTable> multi_skip_for(const HuffTable& ac, size_t scan_bytes) {
  thread_local std::vector<Seen> seen;  // the most recently used first
  size_t i = 0;
  while (i < seen.size() &&
         (seen[i].values != ac.values || !std::equal(seen[i].counts.begin(), seen[i].counts.end(), ac.counts + 0)))
    ++i;
  if (i == seen.size()) {
    Seen s;
    std::copy(std::begin(ac.counts), std::end(ac.counts), s.counts.begin());
    s.values = ac.values;
    if (seen.size() == kKept) seen.pop_back();
    seen.push_back(std::move(s));
    i = seen.size() - 1;
  }
  std::rotate(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(i),
              seen.begin() + static_cast<std::ptrdiff_t>(i) + 1);
  Seen& s = seen.front();
  if (!s.table) {
    // Buying the table once the bytes scanned without it reach what it costs spends at most twice
    // what the better choice, known in hindsight, would have.
    s.bytes_without += scan_bytes;
    if (s.bytes_without >= kMultiSkipWorthBytes) s.table = build_multi_skip(ac);
  }
  return s.table;
}

}  // namespace pipec::jpeg_huffman
