#include "compiler/lsp/transport.h"

#include <algorithm>
#include <cctype>
#include <istream>
#include <ostream>

namespace pipec::lsp {

namespace {

// Header lines longer than this are garbage; only their tail is kept, to find a header glued to it.
constexpr size_t kMaxHeaderLine = 4096;
constexpr size_t kKeptTail = 64;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool MessageReader::read_line(std::string& line) {
  line.clear();
  std::streambuf* buf = in_.rdbuf();
  if (!buf) return false;
  for (;;) {
    int c = buf->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in_.setstate(std::ios::eofbit);
      return !line.empty();
    }
    if (c == '\n') break;
    line += static_cast<char>(c);
    if (line.size() > kMaxHeaderLine) line.erase(0, line.size() - kKeptTail);
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

ReadResult MessageReader::read() {
  ReadResult r;
  std::string line;
  for (;;) {
    // One header block: lines up to an empty line.
    bool any_header = false;
    bool have_length = false;
    bool bad = false;
    std::string why;
    size_t length = 0;
    for (;;) {
      if (!read_line(line)) {
        r.status = ReadStatus::Eof;
        return r;
      }
      if (line.empty()) break;
      std::string low = lower(line);
      // Resynchronize: garbage (or the unframed tail of a broken message) may precede a header on its line.
      size_t at = low.find("content-length:");
      if (at == std::string::npos) {
        if (low.find("content-type:") == 0) any_header = true;
        else if (!any_header) continue;  // garbage before any header: skip it silently
        else any_header = true;
        continue;
      }
      any_header = true;
      std::string_view value = trim(std::string_view(line).substr(at + 15));
      if (value.empty() || value.size() > 19 ||
          !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        bad = true;
        have_length = false;
        why = "malformed Content-Length header `" + std::string(value.substr(0, 40)) + "`";
        continue;
      }
      unsigned long long n = std::stoull(std::string(value));
      if (n > max_bytes_) {
        bad = true;
        have_length = false;
        why = "Content-Length " + std::to_string(n) + " exceeds the limit of " + std::to_string(max_bytes_) + " bytes";
        continue;
      }
      bad = false;
      have_length = true;
      length = static_cast<size_t>(n);
    }
    if (!any_header) continue;  // stray blank lines
    if (bad || !have_length) {
      r.status = ReadStatus::BadHeader;
      r.error = why.empty() ? "message without a Content-Length header" : why;
      return r;
    }
    r.body.resize(length);
    std::streamsize got = in_.rdbuf() ? in_.rdbuf()->sgetn(r.body.data(), static_cast<std::streamsize>(length)) : 0;
    if (static_cast<size_t>(got) != length) {
      r.body.clear();
      r.status = ReadStatus::Eof;
      in_.setstate(std::ios::eofbit);
      return r;
    }
    r.status = ReadStatus::Message;
    return r;
  }
}

std::string frame_message(std::string_view body) {
  std::string out = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  out.append(body);
  return out;
}

void write_message(std::ostream& out, std::string_view body) {
  out << "Content-Length: " << body.size() << "\r\n\r\n";
  out.write(body.data(), static_cast<std::streamsize>(body.size()));
  out.flush();
}

}  // namespace pipec::lsp
