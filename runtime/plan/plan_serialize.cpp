#include "runtime/plan/plan_serialize.h"

#include <fmt/format.h>

#include "runtime/plan/blob_codec.h"

namespace pipec {

namespace {

constexpr char kMagic[8] = {'P', 'I', 'P', 'E', 'P', 'L', 'A', 'N'};

void write_plan(BlobWriter& w, const Plan& plan);
Plan read_plan(BlobReader& r);

void write_stage(BlobWriter& w, const Stage& s) {
  w.u8(kTagStage);
  w.str(std::string(stage_name(s.kind)));  // by name, as instruction ops
  w.u64(s.args.size());
  for (const auto& [name, v] : s.args) {
    w.str(name);
    w.value(v);
  }
  w.u64(s.inputs.size());
  for (int in : s.inputs) w.i32(in);
  w.u64(s.schema.size());
  for (const SchemaEntry& e : s.schema) {
    w.u8(kTagSchema);
    w.str(e.name);
    w.type(e.type);
    w.u8(e.fixed_bytes ? 1 : 0);
    w.u8(e.default_value ? 1 : 0);
    if (e.default_value) w.value(*e.default_value);
  }
  w.u8(s.fn ? 1 : 0);
  if (s.fn) w.function(*s.fn);
  w.u8(s.native ? 1 : 0);
  if (s.native) w.native(*s.native);
  w.element(s.element);
  w.loc(s.loc);
  w.u8(s.inner ? 1 : 0);  // flat_map's pipeline
  if (s.inner) write_plan(w, *s.inner);
}

Stage read_stage(BlobReader& r, size_t index) {
  r.tag(kTagStage, "stage");
  Stage s;
  const std::string kind = r.str("stage op");
  if (auto k = stage_from_name(kind)) s.kind = *k;
  else r.fail(fmt::format("unknown stage `{}`", kind));
  uint64_t nargs = r.count(10, "arguments");
  for (uint64_t a = 0; a < nargs; ++a) {
    std::string name = r.str("argument name");
    s.args.emplace_back(std::move(name), r.value());
  }
  uint64_t nin = r.count(4, "inputs");
  for (uint64_t i = 0; i < nin; ++i) {
    int32_t in = r.i32("input");
    // Topological order: inputs are earlier stages.
    if (in < 0 || static_cast<size_t>(in) >= index)
      r.fail(fmt::format("stage #{} reads #{}, not an earlier stage", index, in));
    s.inputs.push_back(in);
  }
  uint64_t nschema = r.count(12, "schema entries");
  for (uint64_t e = 0; e < nschema; ++e) {
    r.tag(kTagSchema, "schema entry");
    SchemaEntry entry;
    entry.name = r.str("schema field name");
    entry.type = r.type();
    entry.fixed_bytes = r.flag("fixed-bytes flag");
    if (r.flag("default present")) entry.default_value = r.value();
    s.schema.push_back(std::move(entry));
  }
  if (r.flag("function present")) s.fn = r.function();
  if (r.flag("native kernel present")) s.native = r.native();
  s.element = r.element();
  s.loc = r.loc();
  if (r.flag("inner pipeline present")) s.inner = std::make_shared<const Plan>(read_plan(r));
  return s;
}

void write_plan(BlobWriter& w, const Plan& plan) {
  w.str(plan.name);
  w.u64(plan.stages.size());
  for (const Stage& s : plan.stages) write_stage(w, s);
}

Plan read_plan(BlobReader& r) {
  Plan plan;
  plan.name = r.str("plan name");
  uint64_t n = r.count(20, "stages");
  plan.stages.reserve(n);
  for (uint64_t i = 0; i < n; ++i) plan.stages.push_back(read_stage(r, i));
  return plan;
}

}  // namespace

std::string encode_plan(const Plan& plan) {
  BlobWriter w;
  write_plan(w, plan);
  w.u8(kTagEnd);
  return frame_blob(kMagic, kPlanFormatVersion, w.out);
}

Plan decode_plan(std::string_view blob, const std::string& source) {
  const std::string_view payload = unframe_blob(blob, kMagic, kPlanFormatVersion, source, "plan");
  BlobReader r(reinterpret_cast<const uint8_t*>(payload.data()), payload.size(), source, "plan");
  r.set_begin();
  Plan plan = read_plan(r);
  r.tag(kTagEnd, "end of plan");
  if (r.left() != 0) r.fail(fmt::format("{} bytes after the end of the plan", r.left()));
  return plan;
}

}  // namespace pipec
