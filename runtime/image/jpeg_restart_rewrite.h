// The fast way to give a JPEG a restart marker after every MCU (what JpegWindowIndex needs), for the
// common case: a baseline (or extended) Huffman-coded 8-bit JPEG with one scan holding every component.
//
// No coefficient is stored and nothing is re-quantized. The entropy-coded data is Huffman-decoded only
// to find where each block's bits end; each block's AC bits are copied as they are (same AC tables),
// and each DC difference is written again with the standard DC table (ITU T.81 Annex K.3), because the
// first block of each component in an MCU now codes its DC value from zero (a restart resets the
// prediction) and the file's own DC table may lack the code for that larger difference. Then the
// bytes are padded with 1-bits and a restart marker follows. About twice as fast as having libjpeg
// read all coefficients and write them again, which JpegWindowIndex falls back to for everything else
// (progressive, arithmetic coding, several scans).
//
// Anything libjpeg would complain about (a bad Huffman code, data ending early, a restart marker out of
// sequence, a DC value too large), or read two ways (fill bytes before a stuffed zero), makes the
// rewrite fail, and the caller decides what to do.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pipec {

struct RestartRewrite {
  std::string data;               // the rewritten file
  size_t sof = 0;                 // offset of its SOF marker
  size_t scan = 0;                // offset of its first entropy-coded byte
  int64_t height = 0, width = 0;  // pixels
  int64_t mcu_w = 8, mcu_h = 8;   // pixels per MCU
  int64_t mcus_per_row = 0, mcu_rows = 0;
  std::vector<uint32_t> mcu_start;  // as JpegWindowIndex::mcu_start_
};

/// Rewrites `jpeg` into `out`; false with the reason in `why` when the file is not of the kind above,
/// is damaged, or has more than `max_pixels` pixels.
bool rewrite_with_restart_per_mcu(std::string_view jpeg, int64_t max_pixels, RestartRewrite& out, std::string& why);

}  // namespace pipec
