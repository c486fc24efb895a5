#include "runtime/image/png_window_decode.h"

#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "runtime/image/png_decoder.h"

namespace pipec {

namespace {

// The window's rows placed in an [out_h, out_w, ...] result: pixels, or the one-hot of each pixel.
class WindowSink : public PngRowSink {
 public:
  explicit WindowSink(const PngWindowOutput& spec) : spec_(spec) {}

  void start(const CropWindow& window, int channels, bool u16) override {
    const int64_t oh = spec_.pad_height > 0 ? spec_.pad_height : window.height;
    const int64_t ow = spec_.pad_width > 0 ? spec_.pad_width : window.width;
    if (window.height > oh || window.width > ow)
      throw ImageError(
          fmt::format("internal: a {}x{} window does not fit the {}x{} result", window.height, window.width, oh, ow));
    if (spec_.one_hot && (u16 || channels != 3))
      throw ImageError(
          fmt::format("one_hot_colors takes u8 RGB labels, got {} with {} channels", u16 ? "u16" : "u8", channels));
    win_ = window;
    pad_top_ = (oh - window.height) / 2;
    pad_left_ = (ow - window.width) / 2;
    in_pixel_ = static_cast<size_t>(channels) * (u16 ? 2 : 1);
    const int64_t depth = spec_.one_hot ? spec_.one_hot->classes() : channels;
    const DType dtype = spec_.one_hot ? DType::F32 : u16 ? DType::U16 : DType::U8;
    const Shape shape{oh, ow, depth};
    out_ = spec_.into.defined() && spec_.into.dtype() == dtype && spec_.into.shape() == shape
               ? spec_.into
               : Tensor::empty(dtype, shape);
    out_row_ = static_cast<size_t>(ow) * static_cast<size_t>(depth) * dtype_size(dtype);
    in_row_ = static_cast<size_t>(ow) * in_pixel_;
    padded_ = pad_left_ > 0 || window.width < ow;
    if (padded_ || spec_.one_hot) line_.assign(in_row_, 0);  // the padding stays zero
    // The padding rows above and below the window.
    for (int64_t y = 0; y < oh; ++y)
      if (y < pad_top_ || y >= pad_top_ + window.height) emit(y, line_.data(), true);
  }

  uint8_t* row_destination(int64_t y) override {
    return spec_.one_hot || padded_ ? nullptr : out_.raw() + static_cast<size_t>(pad_top_ + y) * out_row_;
  }

  void row(int64_t y, const uint8_t* samples) override {
    const uint8_t* src = samples;
    if (padded_) {
      std::memcpy(line_.data() + static_cast<size_t>(pad_left_) * in_pixel_, samples,
                  static_cast<size_t>(win_.width) * in_pixel_);
      src = line_.data();
    }
    emit(pad_top_ + y, src, false);
  }

  Tensor take() { return std::move(out_); }

 private:
  // Result row `y` from a whole row of input pixels (padding included).
  void emit(int64_t y, const uint8_t* src, bool padding) {
    uint8_t* d = out_.raw() + static_cast<size_t>(y) * out_row_;
    const int64_t ow = static_cast<int64_t>(in_row_ / in_pixel_);
    if (spec_.one_hot) spec_.one_hot->write(padding ? line_.data() : src, ow, reinterpret_cast<float*>(d));
    else if (padding) std::memset(d, 0, out_row_);
    else if (d != src) std::memcpy(d, src, out_row_);
  }

  const PngWindowOutput& spec_;
  CropWindow win_;
  int64_t pad_top_ = 0, pad_left_ = 0;
  size_t in_pixel_ = 0, in_row_ = 0, out_row_ = 0;
  bool padded_ = false;
  std::vector<uint8_t> line_;  // one padded input row
  Tensor out_;
};

}  // namespace

Tensor decode_png_window(std::string_view data, const DecodeOptions& options, const PngWindowOutput& out) {
  WindowSink sink(out);
  decode_png_rows(data, options, sink);
  return sink.take();
}

}  // namespace pipec
