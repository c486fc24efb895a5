#include "runtime/exec/memory_budget.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

namespace pipec {

MemoryBudget::MemoryBudget(uint64_t limit, size_t stages) : limit_(limit), stages_(stages) {}

void MemoryBudget::note_peak_locked(int stage) {
  StageUse& s = stages_.at(stage);
  s.peak = std::max(s.peak, s.fixed + s.optional);
  peak_ = std::max(peak_, used_);
}

bool MemoryBudget::add_fixed(int stage, int64_t delta) {
  std::lock_guard lock(mu_);
  StageUse& s = stages_.at(stage);
  if (delta < 0) {
    const uint64_t d = std::min<uint64_t>(s.fixed, static_cast<uint64_t>(-delta));
    s.fixed -= d;
    fixed_total_ -= d;
    used_ -= d;
  } else {
    s.fixed += static_cast<uint64_t>(delta);
    fixed_total_ += static_cast<uint64_t>(delta);
    used_ += static_cast<uint64_t>(delta);
    // A fixed buffer holding more than its bound says: the bound was too low.
    if (s.bound != kUnknownBound) s.bound = std::max(s.bound, s.fixed);
  }
  note_peak_locked(stage);
  return fixed_total_ <= limit_;
}

void MemoryBudget::raise_bound(int stage, uint64_t bound) {
  std::lock_guard lock(mu_);
  StageUse& s = stages_.at(stage);
  if (s.bound == kUnknownBound) return;
  s.bound = std::max({s.bound, bound, s.fixed});
}

void MemoryBudget::set_bound(int stage, uint64_t bound) {
  std::lock_guard lock(mu_);
  StageUse& s = stages_.at(stage);
  s.bound = bound == kUnknownBound ? kUnknownBound : std::max(bound, s.fixed);
}

uint64_t MemoryBudget::fixed_room() const {
  std::lock_guard lock(mu_);
  uint64_t room = 0;
  for (const StageUse& s : stages_) {
    if (s.bound == kUnknownBound) return kUnknownBound;
    room += s.bound > s.fixed ? s.bound - s.fixed : 0;
  }
  return room;
}

uint64_t MemoryBudget::room_locked() const {
  uint64_t keep = 0;
  for (const StageUse& s : stages_) {
    if (s.bound == kUnknownBound) return 0;
    keep += s.bound > s.fixed ? s.bound - s.fixed : 0;
  }
  const uint64_t taken = used_ + keep;
  return taken >= limit_ ? 0 : limit_ - taken;
}

uint64_t MemoryBudget::room() const {
  std::lock_guard lock(mu_);
  return room_locked();
}

bool MemoryBudget::try_reserve(int stage, uint64_t bytes) {
  std::lock_guard lock(mu_);
  if (bytes > room_locked()) return false;
  stages_.at(stage).optional += bytes;
  used_ += bytes;
  note_peak_locked(stage);
  return true;
}

void MemoryBudget::add_optional(int stage, uint64_t bytes) {
  std::lock_guard lock(mu_);
  stages_.at(stage).optional += bytes;
  used_ += bytes;
  note_peak_locked(stage);
}

void MemoryBudget::release(int stage, uint64_t bytes) {
  std::lock_guard lock(mu_);
  StageUse& s = stages_.at(stage);
  const uint64_t d = std::min(s.optional, bytes);
  s.optional -= d;
  used_ -= d;
}

MemoryBudget::StageUse MemoryBudget::stage_use(int stage) const {
  std::lock_guard lock(mu_);
  return stages_.at(stage);
}

uint64_t MemoryBudget::used() const {
  std::lock_guard lock(mu_);
  return used_;
}

uint64_t MemoryBudget::fixed_total() const {
  std::lock_guard lock(mu_);
  return fixed_total_;
}

uint64_t MemoryBudget::peak() const {
  std::lock_guard lock(mu_);
  return peak_;
}

std::string format_bytes(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b < 1e3) return fmt::format("{} B", bytes);
  if (b < 1e6) return fmt::format("{:.1f} KB", b / 1e3);
  if (b < 1e9) return fmt::format("{:.1f} MB", b / 1e6);
  return fmt::format("{:.1f} GB", b / 1e9);
}

uint64_t default_memory_budget() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return uint64_t(4) << 30;  // cannot tell: 4 GiB
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 2;
}

}  // namespace pipec
