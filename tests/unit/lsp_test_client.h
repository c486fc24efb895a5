// An editor for the language server tests: a Client drives an in-process Server through JSON-RPC
// messages and reads the replies leniently (JsonView), as the server reads its input.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/lsp/json.h"
#include "compiler/lsp/server.h"
#include "compiler/lsp/transport.h"

namespace pipec::lsp::test_client {

// Line numbers are 0-based, as LSP counts them.
inline const char* kUri = "file:///tmp/pipec-lsp-test/spec.pipe";

inline std::string replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

inline Json text_document(const std::string& uri = kUri) { return Json::object({{"uri", uri}}); }
inline Json position(int line, int character) { return Json::object({{"line", line}, {"character", character}}); }
inline Json range(int l0, int c0, int l1, int c1) {
  return Json::object({{"start", position(l0, c0)}, {"end", position(l1, c1)}});
}
inline Json at(int line, int character, const std::string& uri = kUri) {
  return Json::object({{"textDocument", text_document(uri)}, {"position", position(line, character)}});
}

inline std::vector<Json> parse_stream(const std::string& out) {
  std::istringstream in(out);
  MessageReader reader(in);
  std::vector<Json> msgs;
  for (;;) {
    ReadResult r = reader.read();
    if (r.status != ReadStatus::Message) {
      EXPECT_EQ(r.status, ReadStatus::Eof) << r.error;
      break;
    }
    JsonParseResult p = parse_json(r.body);
    EXPECT_TRUE(p.ok()) << r.body;
    if (p.ok()) msgs.push_back(*p.value);
  }
  return msgs;
}

// An editor talking to an in-process Server. Replies are kept for the client's lifetime and read through
// JsonView, leniently, as the server reads its input.
class Client {
 public:
  Client() : server_(out_) {}

  JsonView request(const std::string& method, Json params = Json()) {
    int id = next_id_++;
    Json msg = Json::object({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}});
    if (!params.is_null()) msg["params"] = std::move(params);
    server_.handle(dump_json(msg));
    for (JsonView m : take())
      if (m["id"].as_int(-1) == id) return m;
    ADD_FAILURE() << "no response to " << method;
    return JsonView();
  }
  void notify(const std::string& method, Json params = Json()) {
    Json msg = Json::object({{"jsonrpc", "2.0"}, {"method", method}});
    if (!params.is_null()) msg["params"] = std::move(params);
    server_.handle(dump_json(msg));
  }
  void raw(const std::string& body) { server_.handle(body); }

  /// Messages the server sent since the last call (publishDiagnostics are also kept for diagnostics()).
  std::vector<JsonView> take() {
    std::vector<JsonView> msgs;
    for (Json& m : parse_stream(out_.str())) {
      msgs.push_back(kept_.emplace_back(std::move(m)));
      if (msgs.back()["method"].as_string() == "textDocument/publishDiagnostics") published_.push_back(msgs.back());
    }
    out_.str("");
    return msgs;
  }
  /// The diagnostics published last for `uri`.
  JsonView diagnostics(const std::string& uri = kUri) {
    take();
    for (auto it = published_.rbegin(); it != published_.rend(); ++it)
      if ((*it)["params"]["uri"].as_string() == uri) return (*it)["params"]["diagnostics"];
    ADD_FAILURE() << "no diagnostics published for " << uri;
    return JsonView();
  }

  void initialize() {
    JsonView r = request("initialize", Json::object({{"processId", nullptr}, {"capabilities", Json::object()}}));
    ASSERT_TRUE(r["result"]["capabilities"].is_object()) << r;
    notify("initialized", Json::object());
  }
  void open(const std::string& text, const std::string& uri = kUri) {
    notify("textDocument/didOpen",
           Json::object({{"textDocument",
                          Json::object({{"uri", uri}, {"languageId", "pipe"}, {"version", 1}, {"text", text}})}}));
  }
  void change(const std::string& text, int version, const std::string& uri = kUri) {
    notify("textDocument/didChange", Json::object({{"textDocument", Json::object({{"uri", uri}, {"version", version}})},
                                                   {"contentChanges", Json::array({Json::object({{"text", text}})})}}));
  }

  Server& server() { return server_; }

 private:
  std::ostringstream out_;
  Server server_;
  int next_id_ = 1;
  std::deque<Json> kept_;  // every message received; a deque keeps them in place, so views stay valid
  std::vector<JsonView> published_;
};

/// The labels of a completion reply, in the order offered.
inline std::vector<std::string> labels(JsonView completion) {
  std::vector<std::string> out;
  for (JsonView item : completion["result"]["items"].elements()) out.push_back(item["label"].as_string());
  return out;
}

inline bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace pipec::lsp::test_client
