// Everything libjpeg touches stays in decode_into's frame as plain C objects (libjpeg_glue.h says why);
// everything C++ (the output tensor, the window callback, the message) lives in the Job and is touched
// only by helpers that return normally.
#include "runtime/image/jpeg_decoder.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "runtime/image/crop_window.h"
#include "runtime/image/libjpeg_glue.h"

namespace pipec {

namespace {

struct Job {
  std::string_view data;
  const DecodeOptions* options = nullptr;
  Tensor out;
  std::string error;
  CropWindow window;
};

// Helpers that may throw (allocation, the window callback) run outside libjpeg and report by value.
bool allocate(Job& job, int64_t h, int64_t w, int64_t c) {
  try {
    job.out = Tensor::empty(DType::U8, {h, w, c});
    return true;
  } catch (const std::exception& e) {
    job.error = fmt::format("cannot allocate {} x {} x {} pixels: {}", h, w, c, e.what());
    return false;
  }
}

bool check_header(Job& job, int64_t h, int64_t w, int components, int color_space) {
  try {
    if (h * w > job.options->max_pixels) {
      job.error = pixel_limit_error(h, w, job.options->max_pixels);
      return false;
    }
    if (color_space == JCS_CMYK || color_space == JCS_YCCK || (components != 1 && components != 3)) {
      job.error = fmt::format("JPEGs with {} components (CMYK/YCCK) are not supported", components);
      return false;
    }
    if (job.options->window) {
      if (!job.options->window(h, w, job.window, job.error)) return false;
      job.error = window_misfit(job.window, h, w);
      if (!job.error.empty()) return false;
    }
    return true;
  } catch (const std::exception& e) {
    job.error = e.what();
    return false;
  }
}

bool decode_into(Job& job) {
  jpeg_decompress_struct cinfo;
  JpegErrors err;
  JpegMemorySource src;
  use_jpeg_errors(reinterpret_cast<j_common_ptr>(&cinfo), err);
  cinfo.src = nullptr;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    job.error = err.message;
    return false;
  }
  jpeg_create_decompress(&cinfo);
  use_jpeg_memory_source(&cinfo, src, job.data);
  jpeg_read_header(&cinfo, TRUE);
  const int64_t h = cinfo.image_height, w = cinfo.image_width;
  if (!check_header(job, h, w, cinfo.num_components, cinfo.jpeg_color_space)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  int channels = job.options->channels == 0 ? cinfo.num_components : job.options->channels;
  cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  // TensorFlow's defaults: the fast integer IDCT, fancy upsampling, full scale.
  cinfo.dct_method = JDCT_IFAST;
  cinfo.do_fancy_upsampling = TRUE;
  cinfo.scale_num = cinfo.scale_denom = 1;
  jpeg_start_decompress(&cinfo);
  if (!job.options->window) {
    if (!allocate(job, h, w, channels)) {
      jpeg_destroy_decompress(&cinfo);
      return false;
    }
    uint8_t* base = job.out.raw();
    const size_t stride = static_cast<size_t>(w) * channels;
    while (cinfo.output_scanline < cinfo.output_height) {
      JSAMPROW row = base + static_cast<size_t>(cinfo.output_scanline) * stride;
      jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return true;
  }
  // Crop: libjpeg-turbo widens the column range to whole iMCUs (xoff <= left); rows above the window
  // are skipped (entropy-decoded only: no IDCT, upsampling or colour conversion), rows below are not
  // decoded at all.
  const CropWindow win = job.window;
  // A margin of one iMCU (at most 16 pixels) on every side: upsampled chroma at the edge of a cropped
  // region would otherwise be interpolated as if it were the image's edge, and differ from a full decode.
  const int64_t margin = 16;
  const int64_t x0 = std::max<int64_t>(0, win.left - margin), x1 = std::min<int64_t>(w, win.left + win.width + margin);
  const int64_t y0 = std::max<int64_t>(0, win.top - margin);
  JDIMENSION xoff = static_cast<JDIMENSION>(x0), cw = static_cast<JDIMENSION>(x1 - x0);
  jpeg_crop_scanline(&cinfo, &xoff, &cw);
  if (!allocate(job, win.height, win.width, channels)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  JSAMPARRAY buf = (*cinfo.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&cinfo), JPOOL_IMAGE,
                                              cinfo.output_width * static_cast<JDIMENSION>(channels), 1);
  if (y0 > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(y0));
  while (static_cast<int64_t>(cinfo.output_scanline) < win.top) jpeg_read_scanlines(&cinfo, buf, 1);
  const size_t skip = static_cast<size_t>(win.left - static_cast<int64_t>(xoff)) * channels;
  const size_t stride = static_cast<size_t>(win.width) * channels;
  uint8_t* base = job.out.raw();
  for (int64_t r = 0; r < win.height; ++r) {
    jpeg_read_scanlines(&cinfo, buf, 1);
    std::memcpy(base + static_cast<size_t>(r) * stride, buf[0] + skip, stride);
  }
  // The rows below the window are never decoded (as tf.image.decode_and_crop_jpeg): a file truncated
  // below the window gives its window's pixels instead of an error.
  jpeg_abort_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

}  // namespace

Tensor decode_jpeg_image(std::string_view data, const DecodeOptions& options) {
  if (options.channels != 0 && options.channels != 1 && options.channels != 3)
    throw ImageError(fmt::format("JPEG channels must be 0, 1 or 3, not {}", options.channels));
  if (data.empty()) throw ImageError("empty file: no JPEG data");
  Job job;
  job.data = data;
  job.options = &options;
  if (!decode_into(job)) throw ImageError(job.error.empty() ? "corrupt JPEG data" : job.error);
  return std::move(job.out);
}

}  // namespace pipec
