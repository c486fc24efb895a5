// Rule `cache_after_expensive` (seed 003: cache() the decoded images before the random patch is cut;
// seed 004's answers: cache what the first epoch computed, memory permitting): a stage that, with
// everything before it, does a large share of the work and gives the same elements in every epoch of
// a repeat is worth caching after; the sentence gives the memory the cache needs (measured bytes per
// element times the elements of one pass) against the run's memory budget.
//
// "The same elements every epoch": nothing up to the stage draws random numbers or crosses to a
// device, no cache is there already, and a shuffle up to it (which reshuffles each epoch) is moved
// after the cache, as long as no batch lies between the two (a cache of shuffled batches would freeze
// what each batch holds). The repeat may come after the stage (cache it before the repeat) or before
// it (then the repeat moves after it). Among the stages that qualify the one that saves the most work
// is named; the least a stage must save is kMinShare of the run's work.
#include <algorithm>

#include <fmt/format.h>

#include "compiler/advice/facts.h"
#include "compiler/advice/rules.h"
#include "runtime/exec/memory_budget.h"

namespace pipec {

namespace {

constexpr double kMinShare = 0.3;

bool cacheable_kind(StageKind k) {
  return stage_has(k, StageFlag::Source) || stage_has(k, StageFlag::Function) || k == StageKind::Batch ||
         k == StageKind::PaddedBatch;
}

bool shuffles(const Stage& s) {
  if (s.kind == StageKind::Shuffle) return true;
  const Value* v = s.arg("shuffle");  // files and list_files that shuffle their file list
  return v && v->kind == Value::Bool && v->b;
}

struct Candidate {
  int stage = -1;
  double share = 0;
  int repeat_before = -1;  // a repeat up to the stage (it moves after it)
  int shuffle = -1;        // a shuffle up to the stage (it moves after the cache)
  std::optional<double> bytes;
};

// The stage qualifies: a candidate with what must move, or nullopt.
std::optional<Candidate> candidate(const RunFacts& f, int s) {
  const Plan& plan = *f.plan;
  if (!cacheable_kind(plan.stages[s].kind) || f.stages[s].elements_out == 0) return std::nullopt;
  std::vector<int> prefix = upstream_of(plan, s);
  prefix.push_back(s);
  Candidate c;
  c.stage = s;
  double work = 0;
  for (int p : prefix) {
    const Stage& st = plan.stages[p];
    if (st.kind == StageKind::To || st.kind == StageKind::Cache || st.kind == StageKind::IgnoreErrors ||
        st.kind == StageKind::ShuffleRepeat || stage_has(st.kind, StageFlag::Sink) || draws_random(st))
      return std::nullopt;
    if (st.kind == StageKind::Repeat) {
      if (c.repeat_before >= 0) return std::nullopt;  // two repeats: too much to move
      c.repeat_before = p;
      continue;  // its own work is not the stage's
    }
    if (shuffles(st)) {
      if (c.shuffle >= 0) return std::nullopt;
      c.shuffle = p;
    }
    work += f.stages[p].work_seconds;
  }
  // A shuffle whose order reaches a batch before the stage cannot move after the cache.
  if (c.shuffle >= 0)
    for (int p : prefix) {
      const StageKind k = plan.stages[p].kind;
      const std::vector<int> up = upstream_of(plan, p);
      if ((k == StageKind::Batch || k == StageKind::PaddedBatch || k == StageKind::MapBatch) &&
          std::find(up.begin(), up.end(), c.shuffle) != up.end())
        return std::nullopt;
    }
  // Epochs: a repeat up to it, or one after it with no cache between.
  bool repeated = c.repeat_before >= 0 && repeat_count(plan.stages[c.repeat_before]) != 1;
  if (c.repeat_before < 0)
    for (size_t d = s + 1; d < plan.stages.size(); ++d) {
      const std::vector<int> up = upstream_of(plan, static_cast<int>(d));
      if (std::find(up.begin(), up.end(), s) == up.end()) continue;
      if (plan.stages[d].kind == StageKind::Cache) return std::nullopt;
      if (repeat_count(plan.stages[d]) != 1) {
        repeated = true;
        break;
      }
    }
  if (!repeated) return std::nullopt;
  const double total = total_work(f);
  c.share = total > 0 ? work / total : 0;
  if (c.share < kMinShare) return std::nullopt;
  // One pass: the stage's elements per epoch, times their measured size.
  std::optional<double> elements;
  if (c.repeat_before < 0) {
    if (f.pass_elements.at(s)) elements = static_cast<double>(*f.pass_elements[s]);
  } else {
    const int source = plan.stages[c.repeat_before].inputs.at(0);
    const uint64_t through_repeat = f.stages[c.repeat_before].elements_out;
    if (f.pass_elements.at(source) && through_repeat > 0)
      elements = static_cast<double>(*f.pass_elements[source]) * static_cast<double>(f.stages[s].elements_out) /
                 static_cast<double>(through_repeat);
  }
  if (elements) c.bytes = *elements * measured_element_bytes(f, s);
  return c;
}

}  // namespace

void advise_cache_after_expensive(const RunFacts& f, std::vector<Advice>& out) {
  const Plan& plan = *f.plan;
  std::optional<Candidate> best;
  for (int s = 0; s < static_cast<int>(plan.stages.size()); ++s) {
    std::optional<Candidate> c = candidate(f, s);
    if (!c) continue;
    const bool more = !best || c->share > best->share + 0.02;
    const bool as_much_but_smaller =
        best && c->share >= best->share - 0.02 && c->bytes && (!best->bytes || *c->bytes < *best->bytes);
    if (more || as_much_but_smaller) best = c;
  }
  if (!best) return;
  const int s = best->stage;
  const std::string label = stage_label(plan, s);
  // The stage alone when it is nearly all of what the cache saves, else with the stages before it.
  const std::string subject =
      work_share(f, s) >= 0.9 * best->share
          ? fmt::format("{} is {} of the work and gives", label, percent(work_share(f, s)))
          : fmt::format("{} and the stages before it are {} of the work and give", label, percent(best->share));
  std::string action;
  if (best->repeat_before >= 0)
    action = fmt::format("move {} after it and add cache() between them", stage_label(plan, best->repeat_before));
  else if (best->shuffle >= 0)
    action = fmt::format(
        "add cache() after it and move {} after the cache (it then shuffles the cached elements every epoch)",
        stage_label(plan, best->shuffle));
  else action = "add cache() after it";
  std::string size;
  if (!best->bytes) {
    size = " (how much memory that needs is known once one pass has run)";
  } else if (*best->bytes <= static_cast<double>(f.memory_budget)) {
    size = fmt::format(" (needs {}; budget {})", format_bytes(static_cast<uint64_t>(*best->bytes)),
                       format_bytes(f.memory_budget));
  } else {
    action = fmt::format(
        "caching its output in memory would need {}, over the memory budget of {}: cache it in a file "
        "(cache(\"PATH\")) or write it once and read that instead",
        format_bytes(static_cast<uint64_t>(*best->bytes)), format_bytes(f.memory_budget));
  }
  out.push_back({"", s, subject + " the same elements every epoch: " + action + size});
}

}  // namespace pipec
