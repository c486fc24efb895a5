// What every libjpeg-turbo object in pipec needs: an error manager that turns libjpeg's fatal errors into
// a longjmp with the message kept (libjpeg's default handler calls exit()), warnings that are recorded
// instead of printed, and a source manager over bytes already in memory, where asking for more data
// means the file is truncated.
//
// libjpeg reports fatal errors through error_exit, which must not return: the function that owns the
// libjpeg object calls setjmp(err.jump) and keeps only plain C objects in its frame, so the jump skips
// no destructor.
#pragma once

#include <csetjmp>
#include <cstdio>
#include <string_view>

#include <jpeglib.h>

namespace pipec {

struct JpegErrors {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX + 64];
  bool warned;  // libjpeg recovered from corrupt data (a bad Huffman code, a missing restart marker, ...)
};

struct JpegMemorySource {
  jpeg_source_mgr pub;
  bool truncated;
};

/// Points `object`'s error manager at `errors`: fatal errors longjmp to errors.jump with the reason in
/// errors.message ("truncated: ..." when a JpegMemorySource ran out of data); warnings set errors.warned.
void use_jpeg_errors(j_common_ptr object, JpegErrors& errors);

/// Makes `data` (which must outlive the decompression) the input of `cinfo`.
void use_jpeg_memory_source(j_decompress_ptr cinfo, JpegMemorySource& source, std::string_view data);

}  // namespace pipec
