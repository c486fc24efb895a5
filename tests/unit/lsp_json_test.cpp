// The language server's JSON, framing and position helpers (compiler/lsp/json.h, transport.h, positions.h).
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "compiler/lsp/json.h"
#include "compiler/lsp/positions.h"
#include "compiler/lsp/transport.h"

namespace pipec::lsp {
namespace {

Json parse_ok(std::string_view text) {
  JsonParseResult r = parse_json(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.error;
  return r.value.value_or(Json());
}

TEST(Json, ParsesScalarsAndContainers) {
  EXPECT_TRUE(parse_ok("null").is_null());
  EXPECT_EQ(parse_ok("true").as_bool(), true);
  EXPECT_EQ(parse_ok(" false ").as_bool(true), false);
  EXPECT_EQ(parse_ok("42").as_int(), 42);
  EXPECT_TRUE(parse_ok("42").is_integer());
  EXPECT_EQ(parse_ok("-7").as_int(), -7);
  EXPECT_DOUBLE_EQ(parse_ok("1.5e3").as_double(), 1500.0);
  EXPECT_FALSE(parse_ok("1.5e3").is_integer());
  EXPECT_EQ(parse_ok("9223372036854775807").as_int(), INT64_MAX);
  EXPECT_FALSE(parse_ok("99999999999999999999").is_integer());  // too big for int64: a double
  EXPECT_EQ(parse_ok("\"a\\nb\"").as_string(), "a\nb");
  Json v = parse_ok(R"({"a": [1, 2, {"b": null}], "c": "d", "a": 3})");
  ASSERT_TRUE(v.is_object());
  EXPECT_EQ(v["a"].as_int(), 3);  // the last duplicate wins
  EXPECT_EQ(v["c"].as_string(), "d");
  EXPECT_TRUE(v["missing"].is_null());
  EXPECT_TRUE(v["c"]["x"].is_null());
  EXPECT_TRUE(v["c"][size_t(3)].is_null());
  EXPECT_EQ(parse_ok("[]").size(), 0u);
  EXPECT_EQ(parse_ok("{}").size(), 0u);
}

TEST(Json, UnicodeEscapes) {
  EXPECT_EQ(parse_ok(R"("\u00e9")").as_string(), "\xC3\xA9");
  EXPECT_EQ(parse_ok(R"("\ud83d\ude00")").as_string(), "\xF0\x9F\x98\x80");
  // Lone surrogates become U+FFFD rather than invalid UTF-8.
  EXPECT_EQ(parse_ok(R"("\ud83d")").as_string(), "\xEF\xBF\xBD");
  EXPECT_EQ(parse_ok(R"("\ude00x")").as_string(), "\xEF\xBF\xBDx");
  // Raw UTF-8 passes through; invalid bytes are replaced.
  EXPECT_EQ(parse_ok("\"\xC3\xA9\"").as_string(), "\xC3\xA9");
  EXPECT_EQ(parse_ok("\"\xFF\"").as_string(), "\xEF\xBF\xBD");
}

TEST(Json, RejectsMalformedInput) {
  for (const char* bad : {"", " ", "{", "}", "[1,]", "[1 2]", "{\"a\" 1}", "{\"a\":}", "{a:1}", "01", "1.", "-",
                          "1e", "tru", "nul", "\"abc", "\"\\x\"", "\"\\u12\"", "\"a\nb\"", "[1] x", "{\"a\":1,}",
                          "NaN", "'a'", "[", "\"\\"}) {
    JsonParseResult r = parse_json(bad);
    EXPECT_FALSE(r.ok()) << "accepted: " << bad;
    EXPECT_FALSE(r.error.empty()) << bad;
  }
}

TEST(Json, DepthLimitInsteadOfStackOverflow) {
  std::string deep(100000, '[');
  JsonParseResult r = parse_json(deep);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("deep"), std::string::npos) << r.error;
  std::string ok = std::string(100, '[') + std::string(100, ']');
  EXPECT_TRUE(parse_json(ok).ok());
  std::string objects;
  for (int i = 0; i < 50000; ++i) objects += "{\"a\":";
  EXPECT_FALSE(parse_json(objects).ok());
}

TEST(Json, RandomBytesNeverCrash) {
  std::mt19937 rng(1234);
  const std::string alphabet = "{}[]\",:0123456789.eE+-truefalsnl \\u\n\t\x01\xC3\xFF";
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    size_t n = rng() % 64;
    for (size_t k = 0; k < n; ++k) s += alphabet[rng() % alphabet.size()];
    JsonParseResult r = parse_json(s);
    if (r.ok()) {
      // Whatever parses must survive a round trip.
      JsonParseResult again = parse_json(r.value->dump());
      ASSERT_TRUE(again.ok()) << r.value->dump();
      EXPECT_EQ(*again.value, *r.value);
    }
  }
}

TEST(Json, SerializesCompactlyAndEscapes) {
  Json v = Json::object({{"id", 1}, {"s", "q\"\\\n\x01"}, {"a", Json::array({true, nullptr, 2.5})}});
  EXPECT_EQ(v.dump(), R"({"id":1,"s":"q\"\\\n\u0001","a":[true,null,2.5]})");
  EXPECT_EQ(Json(std::string("\xFF")).dump(), "\"\xEF\xBF\xBD\"");  // never emit invalid UTF-8
  EXPECT_EQ(Json(3.0).dump(), "3");
  EXPECT_EQ(Json(std::numeric_limits<double>::infinity()).dump(), "null");
  Json o;
  o.set("x", 1).set("y", "z").set("x", 2);
  EXPECT_EQ(o.dump(), R"({"x":2,"y":"z"})");
  Json a;
  a.push(1).push("two");
  EXPECT_EQ(a.dump(), R"([1,"two"])");
  Json round = parse_ok(v.dump());
  EXPECT_EQ(round, v);
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
  std::string s = frame_message("{\"a\":1}") + "content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[]" +
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
  EXPECT_EQ(idx.position(6), (Position{1, 2}));  // 'y' after é
  EXPECT_EQ(idx.position(12), (Position{2, 2}));  // 'z' after the emoji
  EXPECT_EQ(idx.position(5), (Position{1, 1}));   // inside é: its start
  EXPECT_EQ(idx.offset({1, 2}), 6u);
  EXPECT_EQ(idx.offset({2, 2}), 12u);
  EXPECT_EQ(idx.offset({2, 1}), 12u);  // inside a surrogate pair: after it
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
