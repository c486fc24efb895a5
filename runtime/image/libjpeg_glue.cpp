#include "runtime/image/libjpeg_glue.h"

#include <cstring>

#include <jerror.h>

namespace pipec {

namespace {

void on_error(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegErrors*>(c->err);
  const jpeg_source_mgr* src = c->is_decompressor ? reinterpret_cast<j_decompress_ptr>(c)->src : nullptr;
  if (src && reinterpret_cast<const JpegMemorySource*>(src)->truncated)
    std::snprintf(e->message, sizeof(e->message), "truncated: the data ends in the middle of the image");
  else (*c->err->format_message)(c, e->message);
  std::longjmp(e->jump, 1);
}

// Warnings (extraneous bytes, bad restart markers that were recovered) are not errors, as in TF; level
// -1 is a warning, higher levels are trace messages.
void on_message(j_common_ptr c, int level) {
  if (level < 0) reinterpret_cast<JpegErrors*>(c->err)->warned = true;
}

void init_source(j_decompress_ptr) {}
void term_source(j_decompress_ptr) {}

// The whole file is in memory, so asking for more data means the file is truncated. TensorFlow's
// default (try_recover_truncated = false) refuses such files; so do we.
boolean fill_input_buffer(j_decompress_ptr c) {
  reinterpret_cast<JpegMemorySource*>(c->src)->truncated = true;
  ERREXIT(c, JERR_INPUT_EOF);
  return FALSE;
}

void skip_input_data(j_decompress_ptr c, long n) {
  if (n <= 0) return;
  if (static_cast<size_t>(n) > c->src->bytes_in_buffer) fill_input_buffer(c);
  c->src->next_input_byte += n;
  c->src->bytes_in_buffer -= static_cast<size_t>(n);
}

}  // namespace

void use_jpeg_errors(j_common_ptr object, JpegErrors& errors) {
  object->err = jpeg_std_error(&errors.pub);
  errors.pub.error_exit = on_error;
  errors.pub.emit_message = on_message;
  errors.message[0] = 0;
  errors.warned = false;
}

void use_jpeg_memory_source(j_decompress_ptr cinfo, JpegMemorySource& source, std::string_view data) {
  std::memset(&source, 0, sizeof(source));
  source.pub.init_source = init_source;
  source.pub.fill_input_buffer = fill_input_buffer;
  source.pub.skip_input_data = skip_input_data;
  source.pub.resync_to_restart = jpeg_resync_to_restart;
  source.pub.term_source = term_source;
  source.pub.next_input_byte = reinterpret_cast<const JOCTET*>(data.data());
  source.pub.bytes_in_buffer = data.size();
  cinfo->src = &source.pub;
}

}  // namespace pipec
