// Both libraries report errors by longjmp (see the decoders): the functions that own the encoder
// structs keep only plain C objects in their frames; output goes to a std::string owned by the caller.
#include "runtime/image/encoders.h"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <jpeglib.h>
#include <png.h>

namespace pipec {

namespace {

void check_image(const Tensor& t, bool jpeg) {
  bool ok =
      t.rank() == 3 && t.shape()[0] > 0 && t.shape()[1] > 0 && t.shape()[0] < (1 << 16) && t.shape()[1] < (1 << 16);
  int64_t c = t.rank() == 3 ? t.shape()[2] : 0;
  ok = ok && (jpeg ? (c == 1 || c == 3) && t.dtype() == DType::U8
                   : c >= 1 && c <= 4 && (t.dtype() == DType::U8 || t.dtype() == DType::U16));
  if (!ok)
    throw ImageError(fmt::format("{} takes {} [h, w, {}] (1 to 65535 pixels a side), not {} {}",
                                 jpeg ? "encode_jpeg" : "encode_png", jpeg ? "u8" : "u8 or u16",
                                 jpeg ? "1 or 3" : "1 to 4", dtype_name(t.dtype()), shape_to_string(t.shape())));
}

struct PngOut {
  std::string* out;
  char message[256];
};

void png_write_data(png_structp png, png_bytep data, png_size_t n) {
  auto* o = static_cast<PngOut*>(png_get_io_ptr(png));
  o->out->append(reinterpret_cast<const char*>(data), n);  // may throw bad_alloc: see encode_png_into
}
void png_flush(png_structp) {}
void png_on_error(png_structp png, png_const_charp msg) {
  auto* o = static_cast<PngOut*>(png_get_error_ptr(png));
  std::snprintf(o->message, sizeof(o->message), "%s", msg);
  png_longjmp(png, 1);
}
void png_on_warning(png_structp, png_const_charp) {}

bool encode_png_into(const Tensor& img, PngOut& o, png_bytep* rows) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &o, png_on_error, png_on_warning);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  const int c = static_cast<int>(img.shape()[2]);
  const int types[] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
  const bool wide = img.dtype() == DType::U16;
  png_set_write_fn(png, &o, png_write_data, png_flush);
  png_set_IHDR(png, info, static_cast<png_uint_32>(img.shape()[1]), static_cast<png_uint_32>(img.shape()[0]),
               wide ? 16 : 8, types[c], PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  if (wide) png_set_swap(png);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

struct JpegErr {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};
void jpeg_on_error(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegErr*>(c->err);
  (*c->err->format_message)(c, e->message);
  std::longjmp(e->jump, 1);
}

// libjpeg's memory destination allocates with malloc; the caller copies and frees it.
bool encode_jpeg_into(const Tensor& img, int quality, unsigned char** buf, unsigned long* size, char* message) {
  jpeg_compress_struct cinfo;
  JpegErr err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = jpeg_on_error;
  err.message[0] = 0;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    std::snprintf(message, JMSG_LENGTH_MAX, "%s", err.message);
    return false;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, buf, size);
  cinfo.image_width = static_cast<JDIMENSION>(img.shape()[1]);
  cinfo.image_height = static_cast<JDIMENSION>(img.shape()[0]);
  cinfo.input_components = static_cast<int>(img.shape()[2]);
  cinfo.in_color_space = img.shape()[2] == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const size_t stride = static_cast<size_t>(img.shape()[1] * img.shape()[2]);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(img.raw() + cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

}  // namespace

std::string encode_png_image(const Tensor& image) {
  check_image(image, false);
  std::string out;
  out.reserve(static_cast<size_t>(image.byte_size() / 2 + 1024));
  PngOut o{&out, {0}};
  std::vector<png_bytep> rows(static_cast<size_t>(image.shape()[0]));
  const size_t stride = static_cast<size_t>(image.shape()[1] * image.shape()[2]) * dtype_size(image.dtype());
  for (size_t r = 0; r < rows.size(); ++r) rows[r] = const_cast<png_bytep>(image.raw() + r * stride);
  if (!encode_png_into(image, o, rows.data()))
    throw ImageError(fmt::format("encode_png: {}", o.message[0] ? o.message : "libpng failed"));
  return out;
}

std::string encode_jpeg_image(const Tensor& image, int quality) {
  check_image(image, true);
  if (quality < 1 || quality > 100)
    throw ImageError(fmt::format("encode_jpeg: quality must be 1..100, not {}", quality));
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  char message[JMSG_LENGTH_MAX] = {0};
  bool ok = encode_jpeg_into(image, quality, &buf, &size, message);
  std::string out = ok ? std::string(reinterpret_cast<const char*>(buf), size) : std::string();
  std::free(buf);
  if (!ok) throw ImageError(fmt::format("encode_jpeg: {}", message));
  return out;
}

}  // namespace pipec
