// NarrowInt64Column: a column of int64 values that are nearly all small (durations, gaps, byte
// counts, correlation ids), held in 4 bytes a value; the rare value beyond int32 is kept aside,
// exactly. A column whose wide values are not rare (more than one in kWideShare) turns into
// plain 8-byte storage (for good), so no input makes it cost more than a std::vector<int64_t>
// would, give or take the map's last entries. The trace table (analysis/model/trace.h) and the
// causal graph (analysis/causal/causal_graph.h) hold their large columns in it; reads are by value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

namespace ttap {

class NarrowInt64Column {
 public:
  int64_t operator[](size_t i) const {
    if (__builtin_expect(is_wide_, 0)) return wide_[i];
    const int32_t v = narrow_[i];
    return __builtin_expect(v != kAside, 1) ? v : AsideAt(aside_, i);
  }
  void Set(size_t i, int64_t v) {
    if (is_wide_) {
      wide_[i] = v;
      return;
    }
    if (narrow_[i] == kAside) aside_.erase(static_cast<uint32_t>(i));
    if (Fits(v)) {
      narrow_[i] = static_cast<int32_t>(v);
      return;
    }
    narrow_[i] = kAside;
    aside_[static_cast<uint32_t>(i)] = v;
    if (aside_.size() > narrow_.size() / kWideShare + kAsideAlways) Widen();
  }
  // Reads without the column's own indirections (a hot loop keeps the pointers in registers).
  // Valid until the column is resized, widened, swapped or released.
  class View {
   public:
    int64_t operator[](size_t i) const {
      if (__builtin_expect(wide_ != nullptr, 0)) return wide_[i];
      const int32_t v = narrow_[i];
      return __builtin_expect(v != kAside, 1) ? v : AsideAt(*aside_, i);
    }

   private:
    friend class NarrowInt64Column;
    const int32_t* narrow_ = nullptr;
    const int64_t* wide_ = nullptr;
    const std::unordered_map<uint32_t, int64_t>* aside_ = nullptr;
  };
  View view() const {
    View v;
    v.narrow_ = narrow_.data();
    v.wide_ = is_wide_ ? wide_.data() : nullptr;
    v.aside_ = &aside_;
    return v;
  }
  // For a pass that writes every value once (a replay): BeginPass() first, then SetOnce for
  // each index (no look at the value it replaces, and views stay valid), then EndPass(), which
  // widens the column if its wide values were not rare.
  void BeginPass() {
    for (const auto& [i, v] : aside_) narrow_[i] = 0;
    aside_.clear();
  }
  void SetOnce(size_t i, int64_t v) {
    if (__builtin_expect(is_wide_, 0)) {
      wide_[i] = v;
    } else if (__builtin_expect(Fits(v), 1)) {
      narrow_[i] = static_cast<int32_t>(v);
    } else {
      PutAside(i, v);
    }
  }
  void EndPass() {
    if (!is_wide_ && aside_.size() > narrow_.size() / kWideShare + kAsideAlways) Widen();
  }
  void push_back(int64_t v) {
    if (is_wide_) return wide_.push_back(v);
    narrow_.push_back(0);
    Set(narrow_.size() - 1, v);
  }
  void resize(size_t n) {
    if (is_wide_) return wide_.resize(n);
    for (size_t i = n; i < narrow_.size(); ++i) {
      if (narrow_[i] == kAside) aside_.erase(static_cast<uint32_t>(i));
    }
    narrow_.resize(n, 0);
  }
  void assign(size_t n, int64_t v) {
    Release();
    resize(n);
    for (size_t i = 0; i < n; ++i) Set(i, v);
  }
  void reserve(size_t n) {
    if (!is_wide_) narrow_.reserve(n);
  }
  size_t size() const { return is_wide_ ? wide_.size() : narrow_.size(); }
  bool empty() const { return size() == 0; }
  // Frees the memory, as swapping with an empty vector does.
  void Release() {
    std::vector<int32_t>().swap(narrow_);
    std::unordered_map<uint32_t, int64_t>().swap(aside_);
    std::vector<int64_t>().swap(wide_);
    is_wide_ = false;
  }
  bool wide() const { return is_wide_; }
  void swap(NarrowInt64Column& o) {
    narrow_.swap(o.narrow_);
    aside_.swap(o.aside_);
    wide_.swap(o.wide_);
    std::swap(is_wide_, o.is_wide_);
  }
  bool operator==(const NarrowInt64Column& o) const {
    if (size() != o.size()) return false;
    for (size_t i = 0; i < size(); ++i) {
      if ((*this)[i] != o[i]) return false;
    }
    return true;
  }

 private:
  static constexpr int32_t kAside = std::numeric_limits<int32_t>::min();
  static constexpr size_t kWideShare = 64;      // wide beyond one value in 64
  static constexpr size_t kAsideAlways = 1024;  // a short column may keep this many aside
  static bool Fits(int64_t v) { return v > kAside && v <= std::numeric_limits<int32_t>::max(); }
  // The rare paths, out of line so that the common ones stay small in hot loops.
  [[gnu::noinline, gnu::cold]] static int64_t AsideAt(
      const std::unordered_map<uint32_t, int64_t>& aside, size_t i) {
    return aside.at(static_cast<uint32_t>(i));
  }
  [[gnu::noinline, gnu::cold]] void PutAside(size_t i, int64_t v) {
    narrow_[i] = kAside;
    aside_[static_cast<uint32_t>(i)] = v;
  }
  void Widen() {
    std::vector<int64_t> wide(narrow_.size());
    for (size_t i = 0; i < narrow_.size(); ++i) {
      wide[i] = narrow_[i] != kAside ? narrow_[i] : aside_.at(static_cast<uint32_t>(i));
    }
    std::vector<int32_t>().swap(narrow_);
    std::unordered_map<uint32_t, int64_t>().swap(aside_);
    wide_ = std::move(wide);
    is_wide_ = true;
  }

  std::vector<int32_t> narrow_;
  std::unordered_map<uint32_t, int64_t> aside_;
  std::vector<int64_t> wide_;  // the values once the column widened
  bool is_wide_ = false;
};

}  // namespace ttap
