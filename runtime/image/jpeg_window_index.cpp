#include "runtime/image/jpeg_window_index.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "runtime/image/crop_window.h"
#include "runtime/image/jpeg_decoder.h"
#include "runtime/image/jpeg_restart_rewrite.h"
#include "runtime/image/libjpeg_glue.h"

namespace pipec {

namespace {

// The rewritten file, or the reason there is none. Kept outside rewrite_with_restarts' frame, which
// longjmps (libjpeg_glue.h).
struct Rewrite {
  unsigned char* bytes = nullptr;  // malloc'ed by jpeg_mem_dest
  unsigned long size = 0;
  std::string why;
};

// Refuses (by value, no throw) what the ordinary decoder would refuse from the header alone.
bool header_acceptable(const jpeg_decompress_struct& d, int64_t max_pixels, std::string& why) {
  const int64_t h = d.image_height, w = d.image_width;
  if (h * w > max_pixels) {
    why = pixel_limit_error(h, w, max_pixels);
    return false;
  }
  if (d.jpeg_color_space == JCS_CMYK || d.jpeg_color_space == JCS_YCCK ||
      (d.num_components != 1 && d.num_components != 3)) {
    why = "CMYK/YCCK JPEGs are not indexed";
    return false;
  }
  return true;
}

// Corrupt progressive or arithmetic-coded data can decode to coefficients no 8-bit baseline file can
// code (libjpeg's decoders do not check; its SIMD Huffman encoder would then write codes the decoder
// reads differently). Within +-1023 every value and every DC difference has a code.
bool coefficients_in_range(jpeg_decompress_struct& d, jvirt_barray_ptr* coefficients) {
  for (int ci = 0; ci < d.num_components; ++ci) {
    const jpeg_component_info& comp = d.comp_info[ci];
    for (JDIMENSION row = 0; row < comp.height_in_blocks; ++row) {
      JBLOCKARRAY blocks =
          (*d.mem->access_virt_barray)(reinterpret_cast<j_common_ptr>(&d), coefficients[ci], row, 1, FALSE);
      for (JDIMENSION b = 0; b < comp.width_in_blocks; ++b)
        for (int k = 0; k < DCTSIZE2; ++k)
          if (blocks[0][b][k] > 1023 || blocks[0][b][k] < -1023) return false;
    }
  }
  return true;
}

// A progressive file may end (at a valid EOI, with no warning) before its scans have sent every
// coefficient, or every refinement bit of one. libjpeg then smooths the blocks whose low AC coefficients
// are unknown when it decodes pixels (do_block_smoothing, on by default), which a baseline rewrite of
// the same coefficients would not: its cut decodes to other pixels (the image fuzzer found one). Such a
// file is not indexed. coef_bits[c][k] is -1 for a coefficient never sent, the bits still to come for
// one partly sent, 0 for one complete.
bool every_coefficient_complete(const jpeg_decompress_struct& d) {
  if (!d.progressive_mode || d.coef_bits == nullptr) return true;
  for (int ci = 0; ci < d.num_components; ++ci)
    for (int k = 0; k < DCTSIZE2; ++k)
      if (d.coef_bits[ci][k] != 0) return false;
  return true;
}

bool rewrite_with_restarts(std::string_view data, int64_t max_pixels, Rewrite& out) {
  jpeg_decompress_struct d;
  jpeg_compress_struct c;
  JpegErrors err;
  JpegMemorySource src;
  // Zeroed objects are safe to destroy before they are created (their memory manager is null).
  std::memset(&d, 0, sizeof(d));
  std::memset(&c, 0, sizeof(c));
  use_jpeg_errors(reinterpret_cast<j_common_ptr>(&d), err);
  c.err = &err.pub;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&c);
    jpeg_destroy_decompress(&d);
    out.why = err.message;
    return false;
  }
  jpeg_create_decompress(&d);
  use_jpeg_memory_source(&d, src, data);
  jpeg_read_header(&d, TRUE);
  if (!header_acceptable(d, max_pixels, out.why)) {
    jpeg_destroy_decompress(&d);
    return false;
  }
  jvirt_barray_ptr* coefficients = jpeg_read_coefficients(&d);
  if (err.warned) {
    // libjpeg replaced damaged data by something; a crop that never reaches the damage would not see
    // it, so such a file is not indexed and keeps the ordinary decoder's behaviour.
    jpeg_destroy_decompress(&d);
    out.why = "libjpeg-turbo reported corrupt data";
    return false;
  }
  if (!every_coefficient_complete(d)) {
    jpeg_destroy_decompress(&d);
    out.why = "a progressive file whose scans leave coefficients unsent or unrefined";
    return false;
  }
  if (!coefficients_in_range(d, coefficients)) {
    jpeg_destroy_decompress(&d);
    out.why = "a coefficient out of the 8-bit range";
    return false;
  }
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, &out.bytes, &out.size);
  jpeg_copy_critical_parameters(&d, &c);
  c.restart_interval = 1;
  c.optimize_coding = FALSE;
  jpeg_write_coefficients(&c, coefficients);
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  jpeg_finish_decompress(&d);
  jpeg_destroy_decompress(&d);
  return true;
}

void put16(std::string& s, size_t at, int64_t v) {
  s[at] = static_cast<char>((v >> 8) & 0xFF);
  s[at + 1] = static_cast<char>(v & 0xFF);
}

}  // namespace

std::shared_ptr<const JpegWindowIndex> JpegWindowIndex::build(std::string_view jpeg, int64_t max_pixels,
                                                              std::string* why) {
  std::shared_ptr<JpegWindowIndex> index(new JpegWindowIndex());
  std::string direct_why;
  if (index->file_.open(jpeg, max_pixels, direct_why)) {
    index->direct_ = true;
    return index;
  }
  // libjpeg's transcoder writes a baseline file with a restart marker after every MCU, which the
  // direct rewrite then reads (and copies as it is) to find where each MCU starts. The transcoder has
  // read every coefficient, so the file has no damage left for a cut to find.
  Rewrite r;
  const bool ok = rewrite_with_restarts(jpeg, max_pixels, r);
  const std::string transcoded = ok ? std::string(reinterpret_cast<const char*>(r.bytes), r.size) : std::string();
  std::free(r.bytes);
  if (!ok) {
    if (why) *why = r.why;
    return nullptr;
  }
  index.reset(new JpegWindowIndex());
  if (!index->file_.open(transcoded, max_pixels, r.why)) {
    if (why) *why = "cannot index libjpeg's rewrite: " + r.why;
    return nullptr;
  }
  return index;
}

size_t JpegWindowIndex::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::max(file_.planned_bytes(), file_.memory_bytes());
}

size_t JpegWindowIndex::held_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return file_.memory_bytes();
}

int64_t JpegWindowIndex::scanned_mcus() const {
  std::lock_guard<std::mutex> lock(mu_);
  return file_.scanned();
}

int64_t JpegWindowIndex::rewritten_mcus() const {
  std::lock_guard<std::mutex> lock(mu_);
  return file_.rewritten();
}

bool JpegWindowIndex::cut(const CropWindow& window, CropWindow& inside, std::string& out) const {
  const int64_t m = kWindowMarginPixels;
  const int64_t mcu_w = file_.mcu_w(), mcu_h = file_.mcu_h(), per_row = file_.mcus_per_row();
  const int64_t c0 = std::max<int64_t>(0, window.left - m) / mcu_w;
  const int64_t c1 = (std::min(file_.width(), window.left + window.width + m) + mcu_w - 1) / mcu_w;
  const int64_t r0 = std::max<int64_t>(0, window.top - m) / mcu_h;
  const int64_t r1 = (std::min(file_.height(), window.top + window.height + m) + mcu_h - 1) / mcu_h;
  // A cut that ends at the image's right or bottom edge keeps the image's partial last MCU.
  const int64_t w = c1 == per_row ? file_.width() - c0 * mcu_w : (c1 - c0) * mcu_w;
  const int64_t h = r1 == file_.mcu_rows() ? file_.height() - r0 * mcu_h : (r1 - r0) * mcu_h;
  inside = CropWindow{window.top - r0 * mcu_h, window.left - c0 * mcu_w, window.height, window.width};

  std::lock_guard<std::mutex> lock(mu_);
  if (damaged_) return false;
  // The rows down to one below the cut: libjpeg's cropping decode of the original reads the MCU row
  // after the window's last for its upsampling context, and must find no damage there either.
  std::string why;
  if (!file_.scan_to((r1 + 1) * per_row, why)) {
    damaged_ = true;
    return false;
  }
  out.clear();
  out.reserve(file_.header().size() + 2 + static_cast<size_t>((r1 - r0) * (c1 - c0)) * 64);
  out.append(file_.header());
  put16(out, file_.sof() + 5, h);
  put16(out, file_.sof() + 7, w);
  // Each row's MCUs, with the cut's own RST0..RST7 sequence.
  int64_t k = 0;
  for (int64_t r = r0; r < r1; ++r) {
    if (!file_.append_mcus(r * per_row + c0, c1 - c0, k, out, why)) {
      damaged_ = true;
      return false;
    }
  }
  // The last MCU's marker becomes the end of the image.
  out[out.size() - 1] = static_cast<char>(0xD9);
  return true;
}

std::optional<Tensor> decode_jpeg_window(const JpegWindowIndex& index, const DecodeOptions& options,
                                         CropWindow* asked) {
  const int64_t h = index.height(), w = index.width();
  if (h * w > options.max_pixels) throw ImageError(pixel_limit_error(h, w, options.max_pixels));
  CropWindow window;
  std::string error;
  if (!options.window || !options.window(h, w, window, error))
    throw ImageError(error.empty() ? "no window to decode" : error);
  if (std::string misfit = window_misfit(window, h, w); !misfit.empty()) throw ImageError(misfit);
  if (asked) *asked = window;
  CropWindow inside;
  thread_local std::string small;
  if (!index.cut(window, inside, small)) return std::nullopt;
  DecodeOptions o = options;
  o.window = [inside](int64_t, int64_t, CropWindow& out, std::string&) {
    out = inside;
    return true;
  };
  return decode_jpeg_image(small, o);
}

}  // namespace pipec
