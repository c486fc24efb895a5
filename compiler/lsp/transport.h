// The LSP base protocol: messages framed by `Content-Length: N\r\n\r\n` headers on a byte stream.
//
// The reader is defensive: header lines are bounded, a Content-Length above kMaxMessageBytes is refused
// without allocating, and after garbage it resynchronizes on the next `Content-Length:` header.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <string_view>

namespace pipec::lsp {

/// The largest message body the server accepts.
constexpr size_t kMaxMessageBytes = size_t(64) << 20;

enum class ReadStatus {
  Message,    // `body` holds one message
  BadHeader,  // a header block ended without a usable Content-Length (missing, malformed or too large)
  Eof,        // the stream ended (possibly in the middle of a message)
};

struct ReadResult {
  ReadStatus status = ReadStatus::Eof;
  std::string body;
  std::string error;  // for BadHeader: why
};

class MessageReader {
 public:
  explicit MessageReader(std::istream& in, size_t max_bytes = kMaxMessageBytes) : in_(in), max_bytes_(max_bytes) {}
  ReadResult read();

 private:
  bool read_line(std::string& line);  // false at end of stream
  std::istream& in_;
  size_t max_bytes_;
};

/// Writes one framed message and flushes.
void write_message(std::ostream& out, std::string_view body);

/// Frames a body (for tests and clients): "Content-Length: N\r\n\r\n" + body.
std::string frame_message(std::string_view body);

}  // namespace pipec::lsp
