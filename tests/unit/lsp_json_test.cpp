// The language server's JSON layer, framing and position helpers (compiler/lsp/json.h, transport.h, positions.h).
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "compiler/lsp/json.h"
#include "compiler/lsp/positions.h"
#include "compiler/lsp/transport.h"

namespace pipec::lsp {
namespace {

// JSON itself is nlohmann-json's; these test what json.h adds for the protocol layer: parsing that never
// throws and is depth-limited, serialization that never throws, and lenient reading of client input.

Json parse_ok(std::string_view text) {
  JsonParseResult r = parse_json(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.error;
  return r.value.value_or(Json());
}

TEST(Json, ParsesMessages) {
  Json v = parse_ok(R"({"jsonrpc": "2.0", "id": 3, "method": "x", "params": {"a": [1, 2.5, {"b": null}], "c": "d"}})");
  EXPECT_EQ(v.at("id").get<int>(), 3);
  EXPECT_EQ(v.at("params").at("a").at(1).get<double>(), 2.5);
  EXPECT_TRUE(v.at("params").at("a").at(2).at("b").is_null());
  EXPECT_EQ(parse_ok(" [] ").size(), 0u);
  // Members keep their order, so what we write is stable.
  EXPECT_EQ(dump_json(parse_ok(R"({"z": 1, "a": 2, "m": 3})")), R"({"z":1,"a":2,"m":3})");
}

TEST(Json, RejectsMalformedInputWithoutThrowing) {
  for (const char* bad :
       {"",           " ",   "{",   "}",   "[1,]", "[1 2]",    "{\"a\" 1}", "{\"a\":}",      "{a:1}",    "01",
        "1.",         "-",   "1e",  "tru", "nul",  "\"abc",    "\"\\x\"",   "\"\\u12\"",     "\"a\nb\"", "[1] x",
        "{\"a\":1,}", "NaN", "'a'", "[",   "\"\\", "\"\xFF\"", "\"\xC3\"",  "// comment\n{}"}) {
    JsonParseResult r;
    EXPECT_NO_THROW(r = parse_json(bad)) << bad;
    EXPECT_FALSE(r.ok()) << "accepted: " << bad;
    EXPECT_FALSE(r.error.empty()) << bad;
    EXPECT_EQ(r.error.find("[json.exception"), std::string::npos) << r.error;  // the message, not the exception id
  }
  JsonParseResult r = parse_json("{\"id\": 1, \"method\": ");
  EXPECT_NE(r.error.find("unexpected end of input"), std::string::npos) << r.error;
  EXPECT_EQ(r.error_offset, 21u);
}

TEST(Json, DepthLimitInsteadOfStackOverflow) {
  std::string deep(100000, '[');
  JsonParseResult r = parse_json(deep);
  EXPECT_FALSE(r.ok());
  std::string closed = std::string(100000, '[') + std::string(100000, ']');
  r = parse_json(closed);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("deeper than 256"), std::string::npos) << r.error;
  std::string ok = std::string(256, '[') + std::string(256, ']');
  EXPECT_TRUE(parse_json(ok).ok());
  std::string too_deep = std::string(257, '[') + std::string(257, ']');
  EXPECT_FALSE(parse_json(too_deep).ok());
  std::string objects;
  for (int i = 0; i < 50000; ++i) objects += "{\"a\":";
  objects += "1";
  for (int i = 0; i < 50000; ++i) objects += "}";
  EXPECT_FALSE(parse_json(objects).ok());
}

TEST(Json, RandomBytesNeverThrow) {
  std::mt19937 rng(1234);
  const std::string alphabet = "{}[]\",:0123456789.eE+-truefalsnl \\u\n\t\x01\xC3\xFF";
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    size_t n = rng() % 64;
    for (size_t k = 0; k < n; ++k) s += alphabet[rng() % alphabet.size()];
    JsonParseResult r;
    ASSERT_NO_THROW(r = parse_json(s)) << s;
    if (r.ok()) {
      // Whatever parses must survive a round trip.
      JsonParseResult again = parse_json(dump_json(*r.value));
      ASSERT_TRUE(again.ok()) << dump_json(*r.value);
      EXPECT_EQ(*again.value, *r.value);
    }
  }
}

TEST(Json, StringsRoundTrip) {
  // Quotes, backslashes, every control character, DEL, non-ASCII (2, 3 and 4 bytes): written escaped
  // where JSON requires it, read back unchanged.
  std::string s = "q\"b\\s/";
  for (char c = 0; c < 0x20; ++c) s += c;
  s += "\x7F caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80";
  Json v = Json::object({{"id", 1}, {"s", s}, {"a", Json::array({true, nullptr, 2.5})}});
  std::string text = dump_json(v);
  for (unsigned char c : text) EXPECT_GE(c, 0x20) << "a raw control character in " << text;
  EXPECT_NE(text.find(R"("q\"b\\s/)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(\u0000\u0001)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(\n)"), std::string::npos) << text;
  EXPECT_NE(text.find("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), std::string::npos) << text;  // UTF-8 as is
  Json back = parse_ok(text);
  EXPECT_EQ(back.at("s").get<std::string>(), s);
  EXPECT_EQ(back, v);
  // \u escapes, surrogate pairs included, read as UTF-8.
  EXPECT_EQ(parse_ok(R"("\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t")").get<std::string>(),
            "\xC3\xA9\xF0\x9F\x98\x80\"\\/\b\f\n\r\t");
  // A lone surrogate is not a character: refused.
  EXPECT_FALSE(parse_json(R"("\ud83d")").ok());
}

TEST(Json, InvalidUtf8IsReplacedWhenWriting) {
  // Text from files on disk may hold any bytes; the message must still be valid JSON (and UTF-8).
  Json v = Json::object({{"message", std::string("bad \xFF byte, cut \xC3")}});
  std::string text;
  ASSERT_NO_THROW(text = dump_json(v));
  EXPECT_EQ(text, "{\"message\":\"bad \xEF\xBF\xBD byte, cut \xEF\xBF\xBD\"}");
  EXPECT_TRUE(parse_json(text).ok());
  EXPECT_EQ(dump_json(Json(3.0)), "3.0");
  EXPECT_EQ(dump_json(Json(std::numeric_limits<double>::infinity())), "null");
}

TEST(Json, ViewReadsClientInputLeniently) {
  Json v = parse_ok(
      R"({"a": {"b": [10, "x", 2.9, -1e300, 18446744073709551615, 9223372036854775807]}, "s": "str", "t": true})");
  JsonView view = v;
  EXPECT_EQ(view["a"]["b"][size_t(0)].as_int(), 10);
  EXPECT_TRUE(view["a"]["b"][size_t(0)].is_integer());
  EXPECT_EQ(view["a"]["b"][size_t(1)].as_int(-1), -1);  // a string is not a number
  EXPECT_EQ(view["a"]["b"][size_t(1)].as_string(), "x");
  EXPECT_EQ(view["a"]["b"][size_t(2)].as_int(), 2);  // truncated
  EXPECT_FALSE(view["a"]["b"][size_t(2)].is_integer());
  EXPECT_EQ(view["a"]["b"][size_t(3)].as_int(7), 7);  // beyond int64
  EXPECT_EQ(view["a"]["b"][size_t(4)].as_int(7), 7);  // beyond int64, as an unsigned
  EXPECT_FALSE(view["a"]["b"][size_t(4)].is_integer());
  EXPECT_EQ(view["a"]["b"][size_t(5)].as_int(), INT64_MAX);
  EXPECT_TRUE(view["a"]["b"][size_t(6)].is_null());  // past the end
  EXPECT_EQ(view["a"]["b"].size(), 6u);
  // Missing members and members of non-objects read as null, never throw or assert.
  EXPECT_TRUE(view["missing"]["deeper"][size_t(3)].is_null());
  EXPECT_TRUE(view["s"]["x"].is_null());
  EXPECT_EQ(view["s"].as_string(), "str");
  EXPECT_EQ(view["s"].as_int(5), 5);
  EXPECT_EQ(view["s"].size(), 0u);
  EXPECT_EQ(view["t"].as_bool(), true);
  EXPECT_EQ(view["s"].as_bool(true), true);  // not a bool: the fallback
  EXPECT_EQ(view["t"].as_string(), "");
  EXPECT_TRUE(view.has("t"));
  EXPECT_FALSE(view["a"].has("zz"));
  EXPECT_FALSE(view["s"].has("zz"));
}

// ---------------------------------------------------------------------------------------------------
// Framing

std::vector<ReadResult> read_all(const std::string& stream) {
  std::istringstream in(stream);
  MessageReader reader(in);
  std::vector<ReadResult> out;
  for (int guard = 0; guard < 100; ++guard) {
    ReadResult r = reader.read();
    out.push_back(r);
    if (r.status == ReadStatus::Eof) break;
  }
  return out;
}

TEST(LspTransport, ReadsFramedMessages) {
  std::string s = frame_message("{\"a\":1}") +
                  "content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[]" +
                  frame_message("");
  auto msgs = read_all(s);
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_EQ(msgs[0].status, ReadStatus::Message);
  EXPECT_EQ(msgs[0].body, "{\"a\":1}");
  EXPECT_EQ(msgs[1].body, "[]");
  EXPECT_EQ(msgs[2].status, ReadStatus::Message);
  EXPECT_EQ(msgs[2].body, "");
  EXPECT_EQ(msgs[3].status, ReadStatus::Eof);
}

TEST(LspTransport, BadLengthThenRecovers) {
  std::string s = "Content-Length: abc\r\n\r\n" + frame_message("{}");
  auto msgs = read_all(s);
  ASSERT_GE(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].status, ReadStatus::BadHeader);
  EXPECT_NE(msgs[0].error.find("malformed"), std::string::npos);
  EXPECT_EQ(msgs[1].status, ReadStatus::Message);
  EXPECT_EQ(msgs[1].body, "{}");
}

TEST(LspTransport, HugeLengthIsRefusedWithoutReading) {
  std::string s = "Content-Length: 99999999999\r\n\r\n" + frame_message("{}");
  auto msgs = read_all(s);
  ASSERT_GE(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].status, ReadStatus::BadHeader);
  EXPECT_NE(msgs[0].error.find("exceeds"), std::string::npos);
  EXPECT_EQ(msgs[1].body, "{}");
  auto over = read_all("Content-Length: 67108865\r\n\r\n");
  EXPECT_EQ(over[0].status, ReadStatus::BadHeader);
  auto digits = read_all("Content-Length: 123456789012345678901234567890\r\n\r\n");
  EXPECT_EQ(digits[0].status, ReadStatus::BadHeader);
}

TEST(LspTransport, GarbageIsSkippedAndResynchronized) {
  std::string garbage("\x00\x01 hello\xFF\r\n", 11);
  garbage += std::string(10000, 'x');  // a very long garbage line
  std::string s = garbage + frame_message("{\"x\":1}") + "{\"unframed\":true}" + frame_message("{\"y\":2}");
  auto msgs = read_all(s);
  std::vector<std::string> bodies;
  for (const auto& m : msgs)
    if (m.status == ReadStatus::Message) bodies.push_back(m.body);
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies[0], "{\"x\":1}");
  EXPECT_EQ(bodies[1], "{\"y\":2}");
}

TEST(LspTransport, MissingLengthAndTruncatedBody) {
  auto msgs = read_all("Content-Type: x\r\n\r\n");
  EXPECT_EQ(msgs[0].status, ReadStatus::BadHeader);
  auto truncated = read_all("Content-Length: 10\r\n\r\n{}");
  EXPECT_EQ(truncated[0].status, ReadStatus::Eof);
  EXPECT_EQ(read_all("")[0].status, ReadStatus::Eof);
}

// ---------------------------------------------------------------------------------------------------
// Positions

TEST(LspPositions, Utf16Characters) {
  // "é" is 2 bytes and 1 UTF-16 unit; "😀" is 4 bytes and 2 units.
  std::string text = "ab\nx\xC3\xA9y\n\xF0\x9F\x98\x80z\r\nlast";
  LineIndex idx(text);
  EXPECT_EQ(idx.line_count(), 4u);
  EXPECT_EQ(idx.position(0), (Position{0, 0}));
  EXPECT_EQ(idx.position(3), (Position{1, 0}));
  EXPECT_EQ(idx.position(6), (Position{1, 2}));   // 'y' after é
  EXPECT_EQ(idx.position(12), (Position{2, 2}));  // 'z' after the emoji
  EXPECT_EQ(idx.position(5), (Position{1, 1}));   // inside é: its start
  EXPECT_EQ(idx.offset({1, 2}), 6u);
  EXPECT_EQ(idx.offset({2, 2}), 12u);
  EXPECT_EQ(idx.offset({2, 1}), 12u);    // inside a surrogate pair: after it
  EXPECT_EQ(idx.offset({2, 100}), 13u);  // past the end of the line: before "\r\n"
  EXPECT_EQ(idx.offset({3, 2}), 17u);
  EXPECT_EQ(idx.offset({99, 0}), text.size());
  EXPECT_EQ(idx.position(100000), idx.position(static_cast<uint32_t>(text.size())));
  for (uint32_t off : {0u, 1u, 2u, 3u, 4u, 6u, 7u, 8u, 12u, 13u, 15u, 16u, 19u})
    EXPECT_EQ(idx.offset(idx.position(off)), off) << off;
  LineIndex empty("");
  EXPECT_EQ(empty.position(0), (Position{0, 0}));
  EXPECT_EQ(empty.offset({3, 3}), 0u);
}

TEST(LspPositions, Uris) {
  EXPECT_EQ(uri_to_path("file:///home/me/a%20b.pipe"), "/home/me/a b.pipe");
  EXPECT_EQ(uri_to_path("file://localhost/x/y.pipe"), "/x/y.pipe");
  EXPECT_EQ(uri_to_path("untitled:Untitled-1"), "untitled:Untitled-1");
  EXPECT_EQ(uri_to_path("file:///c%3A/x.pipe"), "c:/x.pipe");
  EXPECT_EQ(uri_to_path("file:///bad%2"), "/bad%2");
  EXPECT_EQ(path_to_uri("/home/me/a b.pipe"), "file:///home/me/a%20b.pipe");
  EXPECT_EQ(uri_to_path(path_to_uri("/tmp/%weird#name?.pipe")), "/tmp/%weird#name?.pipe");
}

}  // namespace
}  // namespace pipec::lsp
