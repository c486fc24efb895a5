// libpng reports fatal errors through its error callback, which must not return: we longjmp back to
// decode_into, whose frame holds only plain C objects, so no destructor is skipped. C++ objects (the
// row buffers, the sink, the message) live in the Job and are touched only by helpers that return
// normally (they catch what the sink throws and report it by value).
#include "runtime/image/png_decoder.h"

#include <csetjmp>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <png.h>
#include <zlib.h>

#include "runtime/image/crop_window.h"

namespace pipec {

namespace {

constexpr const char* kTruncated = "truncated: the data ends in the middle of the image";

struct Job {
  std::string_view data;
  size_t pos = 0;
  const DecodeOptions* options = nullptr;
  PngRowSink* sink = nullptr;
  char message[256] = {0};
  std::string error;  // set by helpers
  CropWindow window;
  size_t row_bytes = 0;           // one whole row as libpng gives it (after its transforms)
  size_t pixel_bytes = 0;         // one pixel of it
  bool widen = false;             // 8-bit samples handed on as u16 (* 257)
  std::vector<uint8_t> buffer;    // rows libpng writes that the sink does not take directly
  std::vector<uint8_t*> targets;  // per window row: where libpng writes it
  std::vector<uint16_t> wide;     // one widened window row
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
  if (job->data.size() - job->pos < n) png_error(png, kTruncated);
  std::memcpy(out, job->data.data() + job->pos, n);
  job->pos += n;
}

// After the header: the window, the sink's start, and the buffers. False (with job.error) to stop.
bool begin(Job& job, int64_t h, int64_t w, int channels, int bits, bool interlaced) {
  try {
    if (h * w > job.options->max_pixels) {
      job.error = pixel_limit_error(h, w, job.options->max_pixels);
      return false;
    }
    job.window = CropWindow{0, 0, h, w};
    if (job.options->window) {
      if (!job.options->window(h, w, job.window, job.error)) return false;
      job.error = window_misfit(job.window, h, w);
      if (!job.error.empty()) return false;
    }
    const CropWindow& win = job.window;
    job.pixel_bytes = static_cast<size_t>(channels) * static_cast<size_t>(bits / 8);
    job.row_bytes = static_cast<size_t>(w) * job.pixel_bytes;
    job.sink->start(win, channels, bits == 16 || job.widen);
    if (job.widen) job.wide.resize(static_cast<size_t>(win.width) * static_cast<size_t>(channels));
    job.targets.assign(static_cast<size_t>(win.height), nullptr);
    // Interlaced: every pass adds pixels to every window row, so they all stay until the last pass.
    // Otherwise one row at a time: libpng writes straight into the sink's rows where it can.
    const bool direct = !interlaced && !job.widen && win.left == 0 && win.width == w;
    const size_t own_rows = interlaced ? static_cast<size_t>(win.height) : 0;
    job.buffer.resize((own_rows + 1) * job.row_bytes);
    for (int64_t y = 0; y < win.height; ++y) {
      uint8_t* d = direct ? job.sink->row_destination(y) : nullptr;
      if (!d) d = job.buffer.data() + (interlaced ? static_cast<size_t>(y) * job.row_bytes : 0);
      job.targets[static_cast<size_t>(y)] = d;
    }
    return true;
  } catch (const std::exception& e) {
    if (job.error.empty()) job.error = e.what();
    return false;
  }
}

// libpng's buffer for image row `y`: a window row's target, else the scratch row after the window's
// own rows (written and never read).
uint8_t* target_of(Job& job, int64_t y) {
  const int64_t wy = y - job.window.top;
  if (wy >= 0 && wy < job.window.height) return job.targets[static_cast<size_t>(wy)];
  return job.buffer.data() + job.buffer.size() - job.row_bytes;
}

// Window row `wy` (libpng's whole row at its target) to the sink.
bool deliver(Job& job, int64_t wy) {
  try {
    const uint8_t* src = job.targets[static_cast<size_t>(wy)] + static_cast<size_t>(job.window.left) * job.pixel_bytes;
    if (job.widen) {
      // 8-bit samples as 16-bit: v * 257 maps 0..255 onto 0..65535 (TF's convention).
      for (size_t i = 0; i < job.wide.size(); ++i) job.wide[i] = static_cast<uint16_t>(src[i] * 257);
      src = reinterpret_cast<const uint8_t*>(job.wide.data());
    }
    job.sink->row(wy, src);
    return true;
  } catch (const std::exception& e) {
    job.error = e.what();
    return false;
  }
}

uint32_t be32(std::string_view d, size_t at) {
  return (uint32_t{static_cast<uint8_t>(d[at])} << 24) | (uint32_t{static_cast<uint8_t>(d[at + 1])} << 16) |
         (uint32_t{static_cast<uint8_t>(d[at + 2])} << 8) | uint32_t{static_cast<uint8_t>(d[at + 3])};
}

// The decode stopped below the window: libpng has checked every chunk it read whole. The rest is walked
// here without inflating it, so a file cut short or with a damaged critical chunk (an IDAT's CRC) fails
// as the whole decode would. Returns "" or the error.
std::string check_tail(const Job& job) {
  const std::string_view d = job.data;
  size_t at = 8;
  while (true) {
    if (d.size() - at < 12) return kTruncated;
    const uint32_t len = be32(d, at);
    if (len > 0x7fffffffu) return "PNG unsigned integer out of range";
    if (d.size() - at - 12 < len) return kTruncated;
    const std::string_view type = d.substr(at + 4, 4);
    const bool critical = (static_cast<uint8_t>(type[0]) & 0x20) == 0;
    // Chunks libpng read whole had their CRC checked; ancillary ones only warn there.
    if (at + 12 + len > job.pos && critical) {
      uLong c = crc32(0L, Z_NULL, 0);
      c = crc32(c, reinterpret_cast<const Bytef*>(d.data() + at + 4), static_cast<uInt>(len + 4));
      if ((c & 0xffffffffu) != be32(d, at + 8 + len)) return fmt::format("{}: CRC error", type);
    }
    if (type == "IEND") return "";
    at += 12 + len;
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
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int got = png_get_channels(png, info);
  const int bits = png_get_bit_depth(png, info);
  if (got != channels) {
    std::snprintf(job.message, sizeof(job.message), "internal: libpng gives %d channels, %d were asked for", got,
                  channels);
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  if (!begin(job, h32, w32, channels, bits, passes > 1)) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  // Rows up to the window's last only: each pass of an interlaced image covers every row, so only the
  // last pass stops early.
  const int64_t last = job.window.top + job.window.height - 1;
  for (int pass = 0; pass < passes; ++pass)
    for (int64_t y = 0; y <= (pass == passes - 1 ? last : static_cast<int64_t>(h32) - 1); ++y) {
      png_read_row(png, target_of(job, y), nullptr);
      if (passes == 1 && y >= job.window.top && !deliver(job, y - job.window.top)) {
        png_destroy_read_struct(&png, &info, nullptr);
        return false;
      }
    }
  if (passes > 1)
    for (int64_t wy = 0; wy < job.window.height; ++wy)
      if (!deliver(job, wy)) {
        png_destroy_read_struct(&png, &info, nullptr);
        return false;
      }
  if (last == static_cast<int64_t>(h32) - 1) png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  if (last != static_cast<int64_t>(h32) - 1) {
    job.error = check_tail(job);
    if (!job.error.empty()) return false;
  }
  return true;
}

// The sink of decode_png_image: the window's rows into one tensor.
class TensorSink : public PngRowSink {
 public:
  void start(const CropWindow& window, int channels, bool u16) override {
    out_ = Tensor::empty(u16 ? DType::U16 : DType::U8, {window.height, window.width, channels});
    row_ = static_cast<size_t>(window.width) * static_cast<size_t>(channels) * (u16 ? 2 : 1);
  }
  uint8_t* row_destination(int64_t y) override { return out_.raw() + static_cast<size_t>(y) * row_; }
  void row(int64_t y, const uint8_t* samples) override {
    uint8_t* d = out_.raw() + static_cast<size_t>(y) * row_;
    if (d != samples) std::memcpy(d, samples, row_);
  }
  Tensor take() { return std::move(out_); }

 private:
  Tensor out_;
  size_t row_ = 0;
};

}  // namespace

void decode_png_rows(std::string_view data, const DecodeOptions& options, PngRowSink& sink) {
  if (options.channels < 0 || options.channels > 4)
    throw ImageError(fmt::format("PNG channels must be 0 to 4, not {}", options.channels));
  if (data.size() < 8 || png_sig_cmp(reinterpret_cast<png_const_bytep>(data.data()), 0, 8) != 0)
    throw ImageError("not a PNG file (the 8-byte signature is missing)");
  // The size is in IHDR, the first chunk (bytes 16..23, big-endian): refuse a huge image before libpng
  // reads further (or allocates).
  if (data.size() >= 24 && data.substr(12, 4) == "IHDR") {
    // Each side may be up to 2^32 - 1 here, so the product is compared without overflowing.
    const uint64_t w = be32(data, 16), h = be32(data, 20);
    if (w != 0 && h > static_cast<uint64_t>(options.max_pixels) / w)
      throw ImageError(fmt::format("{} x {} = {} pixels is more than max_pixels = {}", w, h,
                                   static_cast<unsigned __int128>(w) * h > UINT64_MAX ? UINT64_MAX : w * h,
                                   options.max_pixels));
  }
  Job job;
  job.data = data;
  job.options = &options;
  job.sink = &sink;
  if (!decode_into(job))
    throw ImageError(!job.error.empty() ? job.error : job.message[0] ? job.message : "corrupt PNG data");
}

Tensor decode_png_image(std::string_view data, const DecodeOptions& options) {
  TensorSink sink;
  decode_png_rows(data, options, sink);
  return sink.take();
}

}  // namespace pipec
