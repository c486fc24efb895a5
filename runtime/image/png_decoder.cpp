// libpng reports fatal errors through its error callback, which must not return: we longjmp back to
// decode_into, whose frame holds only plain C objects, so no destructor is skipped. C++ objects (the
// output tensor, row pointers, the message) live in the Job and are touched only by helpers that
// return normally.
#include "runtime/image/png_decoder.h"

#include <csetjmp>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <png.h>

namespace pipec {

namespace {

struct Job {
  std::string_view data;
  size_t pos = 0;
  const DecodeOptions* options = nullptr;
  char message[256] = {0};
  std::string error;  // set by helpers
  Tensor out;
  std::vector<uint8_t> narrow;  // 8-bit pixels widened to 16 afterwards
  std::vector<png_bytep> rows;
  bool widen = false;
};

void on_error(png_structp png, png_const_charp msg) {
  auto* job = static_cast<Job*>(png_get_error_ptr(png));
  std::snprintf(job->message, sizeof(job->message), "%s", msg);
  png_longjmp(png, 1);
}

// Warnings (a bad CRC in an ancillary chunk, an unknown chunk) do not stop decoding, as in TF.
void on_warning(png_structp, png_const_charp) {}

void read_data(png_structp png, png_bytep out, png_size_t n) {
  auto* job = static_cast<Job*>(png_get_io_ptr(png));
  if (job->data.size() - job->pos < n) png_error(png, "truncated: the data ends in the middle of the image");
  std::memcpy(out, job->data.data() + job->pos, n);
  job->pos += n;
}

bool prepare(Job& job, int64_t h, int64_t w, int channels, int bits) {
  try {
    if (h * w > job.options->max_pixels) {
      job.error = pixel_limit_error(h, w, job.options->max_pixels);
      return false;
    }
    if (job.options->window) {
      job.error = "internal: PNG decoding does not crop";
      return false;
    }
    const size_t stride = static_cast<size_t>(w) * channels * (bits / 8);
    uint8_t* base;
    if (job.widen) {
      job.out = Tensor::empty(DType::U16, {h, w, channels});
      job.narrow.resize(stride * static_cast<size_t>(h));
      base = job.narrow.data();
    } else {
      job.out = Tensor::empty(bits == 16 ? DType::U16 : DType::U8, {h, w, channels});
      base = job.out.raw();
    }
    job.rows.resize(static_cast<size_t>(h));
    for (int64_t r = 0; r < h; ++r) job.rows[static_cast<size_t>(r)] = base + static_cast<size_t>(r) * stride;
    return true;
  } catch (const std::exception& e) {
    job.error = fmt::format("cannot allocate {} x {} x {} pixels: {}", h, w, channels, e.what());
    return false;
  }
}

bool decode_into(Job& job) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &job, on_error, on_warning);
  if (!png) {
    std::snprintf(job.message, sizeof(job.message), "libpng could not start");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    std::snprintf(job.message, sizeof(job.message), "libpng could not start");
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, &job, read_data);
  // The pixel limit is ours (checked below, before allocating); libpng's own default is 1M x 1M.
  png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
  png_read_info(png, info);
  png_uint_32 w32 = 0, h32 = 0;
  int bit_depth = 0, color_type = 0, interlace = 0;
  png_get_IHDR(png, info, &w32, &h32, &bit_depth, &color_type, &interlace, nullptr, nullptr);
  const bool has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  const bool is_gray = (color_type & PNG_COLOR_MASK_COLOR) == 0;
  int channels = job.options->channels;
  if (channels == 0) {
    // As stored; a palette becomes RGB, or RGBA when it has transparency.
    channels = png_get_channels(png, info);
    if (color_type == PNG_COLOR_TYPE_PALETTE) channels = has_trns ? 4 : 3;
  }
  const bool want_gray = channels < 3, want_alpha = channels == 2 || channels == 4;
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (is_gray && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (has_trns && want_alpha) png_set_tRNS_to_alpha(png);
  if (want_gray && !is_gray) png_set_rgb_to_gray(png, 1, 0.299, 0.587);
  if (!want_gray && is_gray) png_set_gray_to_rgb(png);
  const bool src_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0 || (has_trns && want_alpha) ||
                         (color_type == PNG_COLOR_TYPE_PALETTE && has_trns);
  const bool out16 = job.options->u16;
  // TensorFlow's filler is (1 << bit depth of the file) - 1: opaque for 8 and 16-bit files, but 1, 3 or
  // 15 for 1, 2 and 4-bit ones. We reproduce it, since the pixels must equal TF's.
  if (want_alpha && !src_alpha) png_set_add_alpha(png, (1u << bit_depth) - 1, PNG_FILLER_AFTER);
  // A palette with tRNS comes out of palette_to_rgb with alpha: strip it too when not wanted.
  const bool palette_alpha = color_type == PNG_COLOR_TYPE_PALETTE && has_trns;
  if (!want_alpha && ((color_type & PNG_COLOR_MASK_ALPHA) || palette_alpha)) png_set_strip_alpha(png);
  if (bit_depth == 16 && !out16) png_set_strip_16(png);
  if (bit_depth == 16 && out16) png_set_swap(png);  // PNG stores big-endian samples
  job.widen = out16 && bit_depth < 16;
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int got = png_get_channels(png, info);
  const int bits = png_get_bit_depth(png, info);
  if (got != channels) {
    std::snprintf(job.message, sizeof(job.message), "internal: libpng gives %d channels, %d were asked for", got,
                  channels);
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  if (!prepare(job, h32, w32, channels, bits)) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_read_image(png, job.rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

}  // namespace

Tensor decode_png_image(std::string_view data, const DecodeOptions& options) {
  if (options.channels < 0 || options.channels > 4)
    throw ImageError(fmt::format("PNG channels must be 0 to 4, not {}", options.channels));
  if (data.size() < 8 || png_sig_cmp(reinterpret_cast<png_const_bytep>(data.data()), 0, 8) != 0)
    throw ImageError("not a PNG file (the 8-byte signature is missing)");
  // The size is in IHDR, the first chunk (bytes 16..23, big-endian): refuse a huge image before libpng
  // reads further (or allocates).
  if (data.size() >= 24 && data.substr(12, 4) == "IHDR") {
    auto be32 = [&](size_t at) {
      return (uint32_t{static_cast<uint8_t>(data[at])} << 24) | (uint32_t{static_cast<uint8_t>(data[at + 1])} << 16) |
             (uint32_t{static_cast<uint8_t>(data[at + 2])} << 8) | uint32_t{static_cast<uint8_t>(data[at + 3])};
    };
    // Each side may be up to 2^32 - 1 here, so the product is compared without overflowing.
    const uint64_t w = be32(16), h = be32(20);
    if (w != 0 && h > static_cast<uint64_t>(options.max_pixels) / w)
      throw ImageError(fmt::format("{} x {} = {} pixels is more than max_pixels = {}", w, h,
                                   static_cast<unsigned __int128>(w) * h > UINT64_MAX ? UINT64_MAX : w * h,
                                   options.max_pixels));
  }
  Job job;
  job.data = data;
  job.options = &options;
  if (!decode_into(job))
    throw ImageError(!job.error.empty() ? job.error : job.message[0] ? job.message : "corrupt PNG data");
  if (job.widen) {
    // 8-bit samples as 16-bit: v * 257 maps 0..255 onto 0..65535 (TF's convention).
    uint16_t* o = job.out.data<uint16_t>();
    for (size_t i = 0; i < job.narrow.size(); ++i) o[i] = static_cast<uint16_t>(job.narrow[i] * 257);
  }
  return std::move(job.out);
}

}  // namespace pipec
