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
// The work is done as far as the windows asked for need it, no further: open() reads the headers and
// the scan's framing (every byte, every marker); scan_to() entropy-decodes MCUs in file order only up
// to the last one asked for, remembering where each starts and its components' DC predictions there;
// an MCU is rewritten the first time a window holds it, and kept. A window in the top rows of a photo
// thus costs the rows above it, as a cropping decode does, and a file's first window no more than one.
//
// Anything libjpeg would complain about (a bad Huffman code, data ending early, a restart marker out of
// sequence, a DC value too large), or read two ways (fill bytes before a stuffed zero), makes open() or
// the scan that reaches it fail, and the caller decides what to do.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pipec {

namespace detail {
// An allocator that leaves new elements uninitialised: a vector of it resizes without zeroing.
template <class T>
struct NoInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = NoInitAllocator<U>;
  };
  NoInitAllocator() = default;
  template <class U>
  NoInitAllocator(const NoInitAllocator<U>&) {}
  template <class U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
}  // namespace detail

/// A scan's bytes: resized without being zeroed, since the unstuffing writes every byte it keeps.
using ScanBytes = std::vector<uint8_t, detail::NoInitAllocator<uint8_t>>;

class RestartRewriter {
 public:
  RestartRewriter();
  ~RestartRewriter();
  RestartRewriter(const RestartRewriter&) = delete;
  RestartRewriter& operator=(const RestartRewriter&) = delete;

  /// Reads `jpeg`'s headers and the framing of its scan; false with the reason in `why` when the file
  /// is not of the kind above, its scan's bytes are damaged or end early, or it has more than
  /// `max_pixels` pixels. Call once.
  bool open(std::string_view jpeg, int64_t max_pixels, std::string& why);

  /// The rewritten file's markers up to its entropy-coded data: the kept segments, the standard DC
  /// table, the file's AC tables, a restart interval of one MCU and the scan header.
  const std::string& header() const { return header_; }
  size_t sof() const { return sof_; }  // offset of the SOF marker in header()
  int64_t height() const { return height_; }
  int64_t width() const { return width_; }
  int64_t mcu_w() const { return mcu_w_; }  // pixels per MCU
  int64_t mcu_h() const { return mcu_h_; }
  int64_t mcus_per_row() const { return mcus_per_row_; }
  int64_t mcu_rows() const { return mcu_rows_; }
  int64_t mcus() const { return mcus_per_row_ * mcu_rows_; }
  /// MCUs whose start is known (scan_to has passed them).
  int64_t scanned() const { return scanned_; }
  /// MCUs rewritten so far.
  int64_t rewritten() const { return rewritten_count_; }

  /// Entropy-decodes the MCUs before `end` (at most mcus()) not decoded yet. False with the reason
  /// when the data is corrupt; every later call then fails the same way.
  bool scan_to(int64_t end, std::string& why);

  /// Appends MCUs [first, first + count) of one MCU row (all scanned), each as it is in a file with a
  /// restart marker after every MCU, followed by the marker RST(k mod 8), k counting up from `k`.
  /// Rewrites the ones not rewritten yet; false with the reason when one is damaged (which a scan
  /// would have found first).
  bool append_mcus(int64_t first, int64_t count, int64_t& k, std::string& out, std::string& why);

  /// Bytes held now (the scan's bytes, the MCU table, the rewritten MCUs).
  size_t memory_bytes() const;
  /// About what memory_bytes() will be once every MCU is rewritten: what a budget should count.
  size_t planned_bytes() const;

  struct Tables;  // the Huffman tables (jpeg_restart_rewrite.cpp)

 private:
  struct McuStart {
    uint32_t bit = 0;               // in the unstuffed scan bytes
    std::array<int32_t, 3> pred{};  // each component's DC value before the MCU
  };
  bool rewrite(int64_t m, std::string& why);
  size_t rewritten_estimate() const;
  void compact();

  std::string header_;
  size_t sof_ = 0;
  int64_t height_ = 0, width_ = 0, mcu_w_ = 8, mcu_h_ = 8, mcus_per_row_ = 0, mcu_rows_ = 0;
  int restart_interval_ = 0;
  int blocks_per_mcu_ = 0;
  std::unique_ptr<Tables> tables_;

  ScanBytes bytes_;                    // the scan's bytes, stuffing removed, then 8 zero bytes
  std::vector<size_t> segment_start_;  // where each of the file's own restart segments starts
  std::vector<McuStart> start_;        // of each scanned MCU, and of the next one to scan
  std::vector<uint32_t> block_end_;    // where each scanned block's AC bits end
  int64_t scanned_ = 0;
  std::string scan_error_;  // set once a scan found corrupt data

  std::string rewritten_;               // the rewritten MCUs, in the order they were asked for
  std::vector<uint32_t> rewritten_at_;  // per MCU: where its bytes start in rewritten_ (or none)
  std::vector<uint32_t> rewritten_length_;
  int64_t rewritten_count_ = 0;
  // Every MCU rewritten: rewritten_ holds them in file order, rewritten_at_ has one more entry (the
  // end), and the scan's bytes are gone.
  bool complete_ = false;
};

}  // namespace pipec
