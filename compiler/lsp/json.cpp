#include "compiler/lsp/json.h"

#include <cmath>
#include <limits>
#include <ostream>

namespace pipec::lsp {

namespace {

const Json& null_json() {
  static const Json n;
  return n;
}

/// nlohmann's messages start with "[json.exception.parse_error.101] "; the client needs only the rest.
std::string without_exception_id(const char* what) {
  std::string s = what;
  if (!s.empty() && s[0] == '[') {
    size_t close = s.find("] ");
    if (close != std::string::npos) s.erase(0, close + 2);
  }
  return s;
}

}  // namespace

JsonParseResult parse_json(std::string_view text, int max_depth) {
  JsonParseResult r;
  bool too_deep = false;
  // The callback sees each container start with the depth of its parent; refusing one keeps it (and so
  // everything below it) out of the value, and the flag turns the whole document into an error.
  Json::parser_callback_t limit_depth = [&](int depth, Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= max_depth) {
      too_deep = true;
      return false;
    }
    return true;
  };
  try {
    Json value =
        Json::parse(text.begin(), text.end(), limit_depth, /*allow_exceptions=*/true, /*ignore_comments=*/false);
    if (too_deep) {
      r.error = "arrays and objects are nested deeper than " + std::to_string(max_depth) + " levels";
      return r;
    }
    r.value = std::move(value);
  } catch (const Json::parse_error& e) {
    r.error = without_exception_id(e.what());
    r.error_offset = e.byte;
  } catch (const Json::exception& e) {
    r.error = without_exception_id(e.what());
  }
  return r;
}

std::string dump_json(const Json& value) {
  return value.dump(/*indent=*/-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

JsonView::JsonView() : j_(&null_json()) {}

JsonView JsonView::operator[](std::string_view key) const {
  if (!j_->is_object()) return JsonView(null_json());
  auto it = j_->find(key);
  return it == j_->end() ? JsonView(null_json()) : JsonView(*it);
}

JsonView JsonView::operator[](size_t index) const {
  if (!j_->is_array() || index >= j_->size()) return JsonView(null_json());
  return JsonView((*j_)[index]);
}

std::vector<JsonView> JsonView::elements() const {
  std::vector<JsonView> out;
  if (!j_->is_array()) return out;
  out.reserve(j_->size());
  for (const Json& e : *j_) out.emplace_back(e);
  return out;
}

bool JsonView::has(std::string_view key) const { return j_->is_object() && j_->find(key) != j_->end(); }

bool JsonView::is_integer() const {
  if (j_->is_number_unsigned())
    return j_->get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  return j_->is_number_integer();
}

int64_t JsonView::as_int(int64_t fallback) const {
  if (is_integer()) return j_->get<int64_t>();
  if (!j_->is_number_float()) return fallback;
  double d = j_->get<double>();
  if (!std::isfinite(d) || d >= 9.2e18 || d <= -9.2e18) return fallback;
  return static_cast<int64_t>(d);
}

const std::string& JsonView::as_string() const {
  static const std::string empty;
  return j_->is_string() ? j_->get_ref<const std::string&>() : empty;
}

std::ostream& operator<<(std::ostream& os, JsonView v) { return os << dump_json(v.json()); }

}  // namespace pipec::lsp
