// Trace surgery (trace_edit.h): the editable copy, CPU time insertion, GPU reflow, inserted
// blocks, WriteKineto (through KinetoWriter, kineto_writer.h), the validator and the realism
// profile. Used by the injectors (trace_inject.cpp) and `ttap gen`.
#include "bench/harness/trace_edit.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <unordered_map>

#include "analysis/model/runtime_calls.h"
#include "bench/harness/kineto_writer.h"

namespace ttap {

namespace {

bool OnGpuTrack(const EditableTrace& t, const EditEvent& e) { return t.tracks[e.track].gpu; }

// A call that returns once GPU work is done: a synchronize or synchronous copy by name, or an
// async copy that blocks (EditEvent::blocking_copy).
bool IsSyncCall(const EditEvent& e) { return IsBlockingCall(e.name) || e.blocking_copy; }

// A sync call awaits the GPU work launched before it; a blocking copy also its own copy,
// launched by the call itself.
int64_t AwaitsLaunchesBefore(const EditEvent& e) { return e.blocking_copy ? e.ts + 1 : e.ts; }

// A track's pid or tid as the base trace wrote it: a number, or the string it was.
KinetoId IdOf(const std::string& text, int64_t num) {
  return num != kNone ? KinetoId(num) : KinetoId::Text(text);
}

// Shifts the CPU events of |track|'s process at or after |at| by |d|; events spanning |at| grow.
void ShiftCpu(EditableTrace* t, uint32_t track, int64_t at, int64_t d) {
  const std::string& pid = t->tracks[track].pid;
  std::vector<char> same(t->tracks.size(), 0);
  for (size_t i = 0; i < t->tracks.size(); ++i) {
    same[i] = !t->tracks[i].gpu && t->tracks[i].pid == pid;
  }
  for (EditEvent& e : t->events) {
    if (!same[e.track]) continue;
    if (e.ts >= at) {
      e.ts += d;
    } else if (e.ts + e.dur > at) {
      e.dur += d;
    }
  }
  for (StreamBarrier& b : t->barriers) {
    if (b.launch_ts >= at) b.launch_ts += d;
  }
}

std::unordered_map<int64_t, size_t> LaunchByCorrelation(const EditableTrace& t) {
  std::unordered_map<int64_t, size_t> m;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const EditEvent& e = t.events[i];
    if (e.correlation >= 0 && IsLaunchKind(e.kind) && !OnGpuTrack(t, e))
      m.emplace(e.correlation, i);
  }
  return m;
}

// Gaps between two GPU activities of a stream up to this long are the stream's own overhead.
constexpr int64_t kShortGpuGapNs = 20000;

// GPU placement only (no synchronize fixing).
void PlaceGpuOnce(EditableTrace* t) {
  auto launch = LaunchByCorrelation(*t);
  std::vector<std::vector<size_t>> per_track(t->tracks.size());
  std::vector<std::vector<size_t>> annotations(t->tracks.size());
  for (size_t i = 0; i < t->events.size(); ++i) {
    const EditEvent& e = t->events[i];
    if (!OnGpuTrack(*t, e)) continue;
    // GPU-side sync records (Event Sync, Context Sync) are not queued work: they follow the
    // kernels around them like annotations.
    const bool queued = IsGpuKind(e.kind) && e.kind != EventKind::kGpuSync;
    (queued ? per_track : annotations)[e.track].push_back(i);
  }
  auto launch_of = [&](const EditEvent& e) -> const EditEvent* {
    if (e.correlation < 0) return nullptr;
    auto it = launch.find(e.correlation);
    return it == launch.end() ? nullptr : &t->events[it->second];
  };
  for (size_t tr = 0; tr < per_track.size(); ++tr) {
    auto& rows = per_track[tr];
    if (rows.empty()) continue;
    // Queue order: launched work by its (current) launch time; work without a launch call keeps
    // its place behind the launched event that preceded it on the GPU.
    std::vector<std::pair<int64_t, int64_t>> key(rows.size());
    std::vector<size_t> by_orig(rows.size());
    for (size_t k = 0; k < rows.size(); ++k) by_orig[k] = k;
    std::stable_sort(by_orig.begin(), by_orig.end(), [&](size_t a, size_t b) {
      return t->events[rows[a]].orig_ts < t->events[rows[b]].orig_ts;
    });
    int64_t last_launch = INT64_MIN;
    for (size_t k : by_orig) {
      const EditEvent& e = t->events[rows[k]];
      const EditEvent* l = launch_of(e);
      if (l) last_launch = l->ts;
      key[k] = {l ? l->ts : last_launch, e.orig_ts};
    }
    std::vector<size_t> order(rows.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return key[a] < key[b]; });
    // The stream's own gap between queued activities (a GPU never runs two kernels back to back
    // with no gap), as measured on the unedited trace.
    const auto qg = t->queue_gap.find(static_cast<uint32_t>(tr));
    const int64_t queue_gap = qg != t->queue_gap.end() ? qg->second : 1000;
    int64_t prev_end = INT64_MIN, prev_orig_end = INT64_MIN;
    bool prev_added = false;
    for (size_t k : order) {
      EditEvent& e = t->events[rows[k]];
      int64_t start = e.orig_ts;
      if (const EditEvent* l = launch_of(e)) start = std::max(start, l->ts + e.launch_lat);
      if (prev_end != INT64_MIN) {
        // Two original events keep the overlap they had, or their gap up to twice the stream's
        // queue gap; anything added queues one queue gap behind.
        const int64_t orig_gap = e.orig_ts - prev_orig_end;
        const int64_t keep = prev_added || e.added ? queue_gap
                             : orig_gap < 0        ? orig_gap
                                                   : std::min(orig_gap, 2 * queue_gap);
        start = std::max(start, prev_end + keep);
      }
      for (const StreamBarrier& b : t->barriers) {
        if (b.track == tr && key[k].first >= b.launch_ts) {
          start = std::max(start, t->events[b.until_event].ts + t->events[b.until_event].dur);
        }
      }
      e.ts = start;
      prev_end = e.ts + e.dur;
      prev_orig_end = e.orig_ts + e.orig_dur;
      prev_added = e.added;
    }
    // Annotations on the GPU track follow the GPU events they cover.
    if (annotations[tr].empty()) continue;
    std::vector<std::pair<int64_t, int64_t>> delta;  // (orig_ts, ts - orig_ts)
    for (size_t r : rows)
      delta.push_back({t->events[r].orig_ts, t->events[r].ts - t->events[r].orig_ts});
    std::sort(delta.begin(), delta.end());
    for (size_t a : annotations[tr]) {
      EditEvent& e = t->events[a];
      auto first =
          std::lower_bound(delta.begin(), delta.end(), std::make_pair(e.orig_ts, INT64_MIN));
      auto last = std::lower_bound(delta.begin(), delta.end(),
                                   std::make_pair(e.orig_ts + e.orig_dur, INT64_MIN));
      int64_t d0 = first == delta.end() ? 0 : first->second;
      int64_t d1 = last == delta.begin() ? d0 : std::prev(last)->second;
      e.ts = e.orig_ts + d0;
      e.dur = std::max<int64_t>(0, e.orig_dur + d1 - d0);
    }
  }
}

// Barriers refer to events of other tracks: a second pass settles them.
void PlaceGpu(EditableTrace* t) {
  PlaceGpuOnce(t);
  if (!t->barriers.empty()) PlaceGpuOnce(t);
}

// The latest end of the GPU work launched before a time: GPU events that have a launch call, in
// launch order, with a running maximum of their ends.
class LaunchedGpuEnds {
 public:
  // |device_wide|: also the work of non-blocking streams (what a device synchronize awaits).
  LaunchedGpuEnds(const EditableTrace& t, bool device_wide) {
    const auto launch = LaunchByCorrelation(t);
    for (const EditEvent& e : t.events) {
      if (!IsGpuKind(e.kind) || e.correlation < 0) continue;
      if (!device_wide && std::find(t.nonblocking_tracks.begin(), t.nonblocking_tracks.end(),
                                    e.track) != t.nonblocking_tracks.end()) {
        continue;
      }
      auto it = launch.find(e.correlation);
      if (it != launch.end()) by_launch_.push_back({t.events[it->second].ts, e.ts + e.dur});
    }
    std::sort(by_launch_.begin(), by_launch_.end());
    for (size_t i = 1; i < by_launch_.size(); ++i) {
      by_launch_[i].second = std::max(by_launch_[i].second, by_launch_[i - 1].second);
    }
  }
  // False when nothing was launched before |ts|.
  bool Before(int64_t ts, int64_t* end) const {
    auto it = std::lower_bound(by_launch_.begin(), by_launch_.end(), std::make_pair(ts, INT64_MIN));
    if (it == by_launch_.begin()) return false;
    *end = std::prev(it)->second;
    return true;
  }

 private:
  std::vector<std::pair<int64_t, int64_t>> by_launch_;  // (launch ts, running max GPU end)
};

// What each kind of sync awaits: a device synchronize every stream's work, any other sync (a
// stream or event synchronize, a blocking copy) all but the non-blocking streams'.
struct AwaitedGpuEnds {
  explicit AwaitedGpuEnds(const EditableTrace& t) : device(t, true), streams(t, false) {}
  const LaunchedGpuEnds& For(const EditEvent& sync) const {
    return HasRuntimeFlag(sync.name, kRuntimeDeviceWideSync) ? device : streams;
  }
  LaunchedGpuEnds device, streams;
};

// The first synchronize call that returns before the GPU work launched before it has finished
// (beyond its original overrun); returns false when there is none.
bool FirstViolatedSync(const EditableTrace& t, const AwaitedGpuEnds& launched, size_t* row,
                       int64_t* needed_end) {
  int64_t best_ts = INT64_MAX;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const EditEvent& e = t.events[i];
    if (!IsLaunchKind(e.kind) || OnGpuTrack(t, e) || !IsSyncCall(e) || e.ts >= best_ts) continue;
    int64_t gpu_end = 0;
    if (!launched.For(e).Before(AwaitsLaunchesBefore(e), &gpu_end)) continue;
    const int64_t need = gpu_end - e.sync_slack;
    if (need > e.ts + e.dur) {
      best_ts = e.ts;
      *row = i;
      *needed_end = need;
    }
  }
  return best_ts != INT64_MAX;
}

// A synchronize call's own cost once nothing is left to wait for.
constexpr int64_t kSyncCallNs = 2000;

// The first synchronize call that waited in the unedited trace and now returns later than its
// awaited GPU work lets it (the CPU before it moved more than that work did), by over 1 us;
// |needed_end| is when it returns instead. Rows in |skip| are passed over.
bool FirstLateSync(const EditableTrace& t, const AwaitedGpuEnds& launched,
                   const std::vector<char>& skip, size_t* row, int64_t* needed_end) {
  for (size_t i = 0; i < t.events.size(); ++i) {
    const EditEvent& e = t.events[i];
    if (e.sync_return < 0 || skip[i] || !IsLaunchKind(e.kind) || OnGpuTrack(t, e)) continue;
    int64_t gpu_end = 0;
    if (!launched.For(e).Before(AwaitsLaunchesBefore(e), &gpu_end)) continue;
    const int64_t need =
        std::max(e.ts + std::min(e.dur, kSyncCallNs), gpu_end - e.sync_slack + e.sync_return);
    if (need + 1000 < e.ts + e.dur) {
      *row = i;
      *needed_end = need;
      return true;
    }
  }
  return false;
}

// True when shortening the call at |row| to end at |new_end| moves no other thread's event of its
// process into one that starts before it (an event that starts while the call runs).
bool CanShorten(const EditableTrace& t, size_t row, int64_t new_end) {
  const EditEvent& s = t.events[row];
  const std::string& pid = t.tracks[s.track].pid;
  const int64_t end = s.ts + s.dur;
  for (const EditEvent& e : t.events) {
    if (e.track == s.track || t.tracks[e.track].gpu || t.tracks[e.track].pid != pid) continue;
    if (e.ts > new_end && e.ts < end) return false;
  }
  return true;
}

}  // namespace

std::string EditableTrace::CatFor(EventKind kind) const {
  auto it = cat_names.find(kind);
  if (it != cat_names.end()) return it->second;
  switch (kind) {
    case EventKind::kCpuOp:
      return legacy ? "Operator" : "cpu_op";
    case EventKind::kPythonFunction:
      return "python_function";
    case EventKind::kUserAnnotation:
      return "user_annotation";
    case EventKind::kRuntime:
      return legacy ? "Runtime" : "cuda_runtime";
    case EventKind::kKernel:
      return legacy ? "Kernel" : "kernel";
    case EventKind::kMemcpy:
      return legacy ? "Memcpy" : "gpu_memcpy";
    case EventKind::kMemset:
      return legacy ? "Memset" : "gpu_memset";
    default:
      return "cpu_op";
  }
}

int32_t EditableTrace::StreamOf(uint32_t track) const {
  auto it = track_stream.find(track);
  if (it != track_stream.end()) return it->second;
  return tracks[track].tid_num != kNone ? static_cast<int32_t>(tracks[track].tid_num) : 0;
}

uint32_t EditableTrace::GpuTrack(int32_t device, int32_t stream) {
  for (size_t i = 0; i < tracks.size(); ++i) {
    if (tracks[i].gpu && tracks[i].device == device && tracks[i].tid_num == stream) {
      return static_cast<uint32_t>(i);
    }
  }
  Track t;
  t.pid = std::to_string(device);
  t.tid = std::to_string(stream);
  t.pid_num = device;
  t.tid_num = stream;
  t.name = "stream " + std::to_string(stream);
  t.gpu = true;
  t.device = device;
  tracks.push_back(t);
  return static_cast<uint32_t>(tracks.size() - 1);
}

EditableTrace ToEditable(const Trace& trace) {
  EditableTrace t;
  t.rank = trace.rank;
  t.world_size = trace.world_size;
  t.backend = trace.backend;
  t.tracks = trace.tracks;
  t.devices = trace.devices;
  const EventTable& ev = trace.events;
  t.events.resize(ev.size());
  for (size_t i = 0; i < ev.size(); ++i) {
    EditEvent& e = t.events[i];
    e.ts = ev.ts[i];
    e.dur = ev.dur[i];
    e.name = std::string(trace.Name(i));
    e.cat = std::string(trace.strings.Get(ev.cat[i]));
    e.kind = ev.kind[i];
    e.track = ev.track[i];
    e.stream = ev.stream[i];
    e.correlation = ev.correlation[i];
    e.external_id = ev.external_id[i];
    e.python_id = ev.PythonId(i);
    e.python_parent = ev.python_parent[i];
    e.bytes = ev.bytes[i];
    e.device = ev.device[i];
    e.call_stack = std::string(trace.strings.Get(ev.CallStack(i)));
    e.instant = ev.kind[i] == EventKind::kInstant;
    e.orig_ts = e.ts;
    e.orig_dur = e.dur;
    if (IsGpuKind(e.kind) && ev.link[i] >= 0) {
      e.launch_lat = std::clamp<int64_t>(e.ts - ev.ts[ev.link[i]], 0, 8000);
    }
    if (!e.cat.empty()) t.cat_names.emplace(e.kind, e.cat);
    if (IsGpuKind(e.kind) && e.stream >= 0) t.track_stream.emplace(e.track, e.stream);
    if (e.cat == "Operator" || e.cat == "Runtime" || e.cat == "Kernel") t.legacy = true;
    if (IsLaunchKind(e.kind) && e.name.rfind("hip", 0) == 0) t.amd = true;
    t.next_correlation = std::max(t.next_correlation, e.correlation + 1);
    t.next_external_id = std::max(t.next_external_id, e.external_id + 1);
    t.next_python_id = std::max(t.next_python_id, e.python_id + 1);
  }
  for (const DeviceInfo& d : trace.devices) {
    if (d.name.find("AMD") != std::string::npos || d.name.find("Instinct") != std::string::npos) {
      t.amd = true;
    }
  }
  // Each stream's queue gap, from activities that were queued behind the previous one (their
  // launch call started before it ended). Gaps of activities that waited for their launch are
  // the CPU's pace, not the GPU's: a launch-bound base has ~10 us of them, a backlog ~1-2 us.
  {
    std::map<uint32_t, std::vector<int64_t>> gaps;
    std::map<uint32_t, int64_t> prev_end;
    for (size_t i = 0; i < ev.size(); ++i) {  // rows are in time order
      if (!IsGpuKind(ev.kind[i]) || ev.kind[i] == EventKind::kGpuSync) continue;
      auto it = prev_end.find(ev.track[i]);
      const int32_t launch = ev.link[i];
      if (it != prev_end.end() && launch >= 0 && ev.ts[launch] < it->second) {
        const int64_t gap = ev.ts[i] - it->second;
        if (gap > 0 && gap <= kShortGpuGapNs) gaps[ev.track[i]].push_back(gap);
      }
      if (it == prev_end.end()) {
        prev_end[ev.track[i]] = ev.end(i);
      } else {
        it->second = std::max(it->second, ev.end(i));
      }
    }
    for (auto& [track, g] : gaps) {
      std::nth_element(g.begin(), g.begin() + g.size() / 2, g.end());
      t.queue_gap[track] = g[g.size() / 2];
    }
  }
  // Async copy calls that block: their copy is pageable.
  {
    const auto launch = LaunchByCorrelation(t);
    for (const EditEvent& g : t.events) {
      if (g.kind != EventKind::kMemcpy || g.correlation < 0 ||
          g.name.find("Pageable") == std::string::npos) {
        continue;
      }
      auto it = launch.find(g.correlation);
      if (it == launch.end()) continue;
      EditEvent& call = t.events[it->second];
      if (call.name.find("MemcpyAsync") != std::string::npos) call.blocking_copy = true;
    }
  }
  // Synchronize calls that the GPU already overran in the base (clock skew) keep that slack.
  const LaunchedGpuEnds launched(t, /*device_wide=*/true);
  for (EditEvent& e : t.events) {
    if (!IsLaunchKind(e.kind) || !IsSyncCall(e)) continue;
    int64_t gpu_end = 0;
    if (launched.Before(AwaitsLaunchesBefore(e), &gpu_end)) {
      e.sync_slack = std::max<int64_t>(0, gpu_end - (e.ts + e.dur));
      if (gpu_end > e.ts) e.sync_return = std::max<int64_t>(0, e.ts + e.dur - gpu_end);
    }
  }
  return t;
}

void ReflowGpu(EditableTrace* trace) {
  PlaceGpu(trace);
  size_t row = 0, last_row = SIZE_MAX;
  int64_t need = 0;
  int repeats = 0;
  std::vector<char> keep(trace->events.size(), 0);  // late syncs that cannot be shortened
  for (int guard = 0;; ++guard) {
    // A sync that returns before its work is done waits longer; then one that waited in the
    // unedited trace and now returns after its work is done (the CPU before it moved more than
    // that work) returns earlier. Every change moves the CPU after it, so both are redone.
    const AwaitedGpuEnds launched(*trace);  // one index of the GPU's ends for both searches
    bool extend = FirstViolatedSync(*trace, launched, &row, &need);
    if (!extend) {
      if (!FirstLateSync(*trace, launched, keep, &row, &need)) return;
      if (!CanShorten(*trace, row, need)) {
        keep[row] = 1;
        continue;
      }
    }
    // One sync fixed many times over: what it waits for moves with each fix (a cycle).
    repeats = row == last_row ? repeats + 1 : 0;
    last_row = row;
    if (guard >= 2000 || repeats >= 16) {
      ++trace->unsettled_reflows;
      return;
    }
    EditEvent& s = trace->events[row];
    const int64_t end = s.ts + s.dur;
    ShiftCpu(trace, s.track, end - 1, need - end);
    PlaceGpu(trace);
  }
}

void InsertCpuTime(EditableTrace* trace, uint32_t track, int64_t at_ns, int64_t dur_ns) {
  if (dur_ns <= 0) return;
  ShiftCpu(trace, track, at_ns, dur_ns);
  ReflowGpu(trace);
}

CpuBlock::CpuBlock(EditableTrace* trace, uint32_t cpu_track, int64_t at_ns)
    : trace_(trace), track_(cpu_track), at_(at_ns) {}

void CpuBlock::Py(const std::string& file, int line, const std::string& function) {
  EditEvent e;
  e.ts = cursor_;
  e.name = file + "(" + std::to_string(line) + "): " + function;
  e.kind = EventKind::kPythonFunction;
  e.cat = trace_->CatFor(e.kind);
  e.track = track_;
  e.python_id = trace_->next_python_id++;
  e.python_parent = py_stack_.empty() ? -1 : py_stack_.back();
  py_stack_.push_back(e.python_id);
  ext_stack_.push_back(ext_stack_.empty() ? -1 : ext_stack_.back());
  cpu_.push_back(std::move(e));
  open_.push_back(cpu_.size() - 1);
  cursor_ += 1000;
}

void CpuBlock::Op(const std::string& name, EventKind kind) {
  EditEvent e;
  e.ts = cursor_;
  e.name = name;
  e.kind = kind;
  e.cat = trace_->CatFor(kind);
  e.track = track_;
  e.external_id = trace_->next_external_id++;
  ext_stack_.push_back(e.external_id);
  cpu_.push_back(std::move(e));
  open_.push_back(cpu_.size() - 1);
  cursor_ += 1500;
}

void CpuBlock::End() {
  assert(!open_.empty());
  cursor_ += 800;
  EditEvent& e = cpu_[open_.back()];
  e.dur = cursor_ - e.ts;
  if (e.kind == EventKind::kPythonFunction) py_stack_.pop_back();
  open_.pop_back();
  ext_stack_.pop_back();
}

size_t CpuBlock::Launch(const std::string& runtime, int64_t call_ns, EventKind gpu_kind,
                        const std::string& gpu_name, int64_t gpu_ns, uint32_t gpu_track,
                        int64_t bytes) {
  const int64_t corr = AddRuntimeCall(runtime, call_ns);
  const int64_t ext = ext_stack_.empty() ? -1 : ext_stack_.back();
  const Track& gt = trace_->tracks[gpu_track];
  EditEvent g;
  g.launch_lat = std::min<int64_t>(call_ns, 4000);
  g.ts = cursor_ + g.launch_lat;
  g.dur = gpu_ns;
  g.name = gpu_name;
  g.kind = gpu_kind;
  g.cat = trace_->CatFor(gpu_kind);
  g.track = gpu_track;
  g.stream = trace_->StreamOf(gpu_track);
  g.device = static_cast<int16_t>(gt.device);
  g.correlation = corr;
  g.external_id = ext;
  g.bytes = bytes;
  gpu_.push_back(std::move(g));
  cursor_ += call_ns;
  return gpu_.size() - 1;
}

void CpuBlock::Runtime(const std::string& name, int64_t call_ns) {
  AddRuntimeCall(name, call_ns);
  cursor_ += call_ns;
}

int64_t CpuBlock::AddRuntimeCall(const std::string& name, int64_t call_ns) {
  EditEvent r;
  r.ts = cursor_;
  r.dur = call_ns;
  r.name = name;
  r.kind = EventKind::kRuntime;
  r.cat = trace_->CatFor(r.kind);
  r.track = track_;
  r.correlation = trace_->next_correlation++;
  r.external_id = ext_stack_.empty() ? -1 : ext_stack_.back();
  const int64_t corr = r.correlation;
  cpu_.push_back(std::move(r));
  return corr;
}

std::pair<int64_t, int64_t> CpuBlock::Commit(bool reflow) {
  while (!open_.empty()) End();
  const int64_t d = cursor_;
  ShiftCpu(trace_, track_, at_, d);
  commit_base_ = trace_->events.size();
  gpu_committed_ = gpu_.size();
  for (EditEvent& g : gpu_) {
    g.added = true;
    g.ts += at_;
    g.orig_ts = g.ts;
    g.orig_dur = g.dur;
    trace_->events.push_back(std::move(g));
  }
  for (EditEvent& c : cpu_) {
    c.added = true;
    c.ts += at_;
    c.orig_ts = c.ts;
    c.orig_dur = c.dur;
    trace_->events.push_back(std::move(c));
  }
  gpu_.clear();
  cpu_.clear();
  if (reflow) ReflowGpu(trace_);
  return {at_, at_ + d};
}

void Jitter(EditableTrace* trace, std::mt19937_64* rng, double amount) {
  std::uniform_real_distribution<double> scale(1.0 - amount, 1.0 + amount);
  for (EditEvent& e : trace->events) {
    if (IsGpuKind(e.kind)) e.dur = static_cast<int64_t>(static_cast<double>(e.dur) * scale(*rng));
  }
  // A few short CPU delays at random launch calls.
  std::vector<size_t> launches;
  for (size_t i = 0; i < trace->events.size(); ++i) {
    if (IsLaunchKind(trace->events[i].kind) && !trace->tracks[trace->events[i].track].gpu) {
      launches.push_back(i);
    }
  }
  for (int k = 0; k < 6 && !launches.empty(); ++k) {
    size_t i = launches[std::uniform_int_distribution<size_t>(0, launches.size() - 1)(*rng)];
    int64_t d = std::uniform_int_distribution<int64_t>(5000, 60000)(*rng);
    ShiftCpu(trace, trace->events[i].track, trace->events[i].ts, d);
  }
  // A shifted time base (whole microseconds, up to 10 s).
  int64_t off = std::uniform_int_distribution<int64_t>(1, 10000000)(*rng) * 1000;
  for (EditEvent& e : trace->events) {
    e.ts += off;
    e.orig_ts += off;
  }
  for (StreamBarrier& b : trace->barriers) b.launch_ts += off;
  ReflowGpu(trace);
}

std::string WriteKineto(const EditableTrace& t) {
  KinetoWriter w;
  w.Reserve(t.events.size() * 260 + 4096);
  w.BeginDocument();
  for (const DeviceInfo& d : t.devices) {
    KinetoDevice kd;
    kd.id = d.id;
    kd.name = d.name;
    kd.total_global_mem = std::max<int64_t>(d.total_memory, 0);
    kd.compute_major = d.compute_major;
    kd.compute_minor = d.compute_minor;
    kd.num_sms = d.num_sms;
    w.Device(kd);
  }
  w.DistributedInfo(t.backend.empty() ? "nccl" : t.backend, t.rank,
                    t.world_size < 1 ? 1 : t.world_size);
  auto pid_of = [](const Track& tr) { return IdOf(tr.pid, tr.pid_num); };
  auto tid_of = [](const Track& tr) { return IdOf(tr.tid, tr.tid_num); };
  // Metadata.
  std::vector<std::string> pids_done;
  for (const Track& tr : t.tracks) {
    if (std::find(pids_done.begin(), pids_done.end(), tr.pid) == pids_done.end()) {
      pids_done.push_back(tr.pid);
      w.Metadata("process_name", pid_of(tr), 0,
                 tr.gpu ? "GPU " + std::to_string(std::max(tr.device, 0)) : "python");
    }
    w.Metadata("thread_name", pid_of(tr), tid_of(tr),
               tr.name.empty() ? "thread " + tr.tid : tr.name);
  }
  std::vector<size_t> order(t.events.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return t.events[a].ts < t.events[b].ts; });
  std::unordered_map<int64_t, size_t> launch = LaunchByCorrelation(t);
  for (size_t oi = 0; oi < order.size(); ++oi) {
    const EditEvent& e = t.events[order[oi]];
    const Track& tr = t.tracks[e.track];
    KinetoArgs args;
    if (e.external_id >= 0) args.Int("External id", e.external_id);
    if (e.device >= 0) args.Int("device", e.device);
    if (e.stream >= 0) args.Int("stream", e.stream);
    if (e.correlation >= 0) args.Int("correlation", e.correlation);
    if (e.kind == EventKind::kGpuSync) {  // the columns a sync record reuses (trace.h)
      if (e.python_id >= 0) args.Int("wait_on_stream", e.python_id);
      if (e.bytes >= 0) args.Int("wait_on_cuda_event_record_corr_id", e.bytes);
    } else if (e.bytes >= 0) {
      args.Int("bytes", e.bytes);
    }
    if (e.python_id >= 0 && e.kind != EventKind::kGpuSync) {
      args.Int("Python id", e.python_id);
      args.Int("Python parent id", e.python_parent);
    }
    if (!e.call_stack.empty()) args.Str("Call stack", e.call_stack);
    if (e.instant) {
      w.Instant(e.cat, e.name, pid_of(tr), tid_of(tr), e.ts, args);
    } else {
      w.Complete(e.cat, e.name, pid_of(tr), tid_of(tr), e.ts, e.dur, args);
    }
    if (IsGpuKind(e.kind) && e.correlation >= 0) {
      auto it = launch.find(e.correlation);
      if (it != launch.end()) {
        const EditEvent& l = t.events[it->second];
        const Track& lt = t.tracks[l.track];
        w.FlowStart(e.correlation, pid_of(lt), tid_of(lt), l.ts);
        w.FlowFinish(e.correlation, pid_of(tr), tid_of(tr), e.ts);
      }
    }
  }
  w.EndDocument();
  return w.Take();
}

bool ValidationReport::ok_against(const ValidationReport& base) const {
  return rank_ok && skipped_events <= base.skipped_events &&
         negative_durations <= base.negative_durations && before_launch <= base.before_launch &&
         stream_overlaps <= base.stream_overlaps && missing_cat_or_dur <= base.missing_cat_or_dur &&
         gpu_without_ids <= base.gpu_without_ids;
}

std::string ValidationReport::Describe() const {
  char buf[320];
  std::snprintf(buf, sizeof(buf),
                "skipped %llu, negative dur %llu, GPU before launch %llu, stream overlaps %llu, "
                "missing cat/dur %llu, GPU without stream/correlation %llu, rank %s",
                static_cast<unsigned long long>(skipped_events),
                static_cast<unsigned long long>(negative_durations),
                static_cast<unsigned long long>(before_launch),
                static_cast<unsigned long long>(stream_overlaps),
                static_cast<unsigned long long>(missing_cat_or_dur),
                static_cast<unsigned long long>(gpu_without_ids), rank_ok ? "ok" : "missing");
  return buf;
}

ValidationReport ValidateTrace(const Trace& trace, const std::string& json_text) {
  ValidationReport r;
  const EventTable& ev = trace.events;
  r.skipped_events = trace.stats.total_skipped();
  std::vector<std::vector<size_t>> per_track(trace.tracks.size());
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev.dur[i] < 0) ++r.negative_durations;
    const EventKind k = ev.kind[i];
    if (k != EventKind::kInstant && k != EventKind::kTraceSpan &&
        (!(ev.flags[i] & kHasDur) || !(ev.flags[i] & kHasCat))) {
      ++r.missing_cat_or_dur;
    }
    if (!IsGpuKind(k) || k == EventKind::kGpuSync) continue;  // sync records have no stream
    if (ev.stream[i] < 0 || ev.correlation[i] < 0) ++r.gpu_without_ids;
    if (ev.link[i] >= 0 && ev.ts[i] < ev.ts[ev.link[i]]) ++r.before_launch;
    per_track[ev.track[i]].push_back(i);
  }
  for (auto& rows : per_track) {
    int64_t prev_end = INT64_MIN;
    for (size_t i : rows) {  // rows are sorted by ts; empty events overlap nothing
      if (ev.dur[i] > 0 && ev.ts[i] + 1000 < prev_end) ++r.stream_overlaps;
      prev_end = std::max(prev_end, ev.end(i));
    }
  }
  // HTA's rank regex: "rank":\s+(\d+)
  for (size_t p = json_text.find("\"rank\":"); p != std::string::npos;
       p = json_text.find("\"rank\":", p + 1)) {
    size_t q = p + 7;
    if (q < json_text.size() && (json_text[q] == ' ' || json_text[q] == '\t')) {
      while (q < json_text.size() && (json_text[q] == ' ' || json_text[q] == '\t')) ++q;
      if (q < json_text.size() && json_text[q] >= '0' && json_text[q] <= '9') {
        r.rank_ok = true;
        break;
      }
    }
  }
  return r;
}

TraceProfile ProfileTrace(const Trace& trace) {
  TraceProfile p;
  const EventTable& ev = trace.events;
  if (ev.size() == 0) return p;
  std::vector<double> kernel, delay;
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (size_t i = 0; i < ev.size(); ++i) {
    p.kind_share[EventKindName(ev.kind[i])] += 1.0;
    if (ev.kind[i] == EventKind::kKernel) {
      kernel.push_back(static_cast<double>(ev.dur[i]) / 1000.0);
      if (ev.link[i] >= 0)
        delay.push_back(static_cast<double>(ev.ts[i] - ev.ts[ev.link[i]]) / 1000.0);
    }
    if (IsGpuKind(ev.kind[i])) busy.push_back({ev.ts[i], ev.end(i)});
  }
  for (auto& [k, v] : p.kind_share) v /= static_cast<double>(ev.size());
  auto pct = [](std::vector<double>& v, double q) {
    if (v.empty()) return 0.0;
    size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
    return v[k];
  };
  p.kernel_us_p10 = pct(kernel, 0.1);
  p.kernel_us_p50 = pct(kernel, 0.5);
  p.kernel_us_p90 = pct(kernel, 0.9);
  p.launch_delay_us_p50 = pct(delay, 0.5);
  p.launch_delay_us_p90 = pct(delay, 0.9);
  p.events_per_step = trace.steps.empty() ? static_cast<double>(ev.size())
                                          : static_cast<double>(ev.size()) /
                                                static_cast<double>(trace.steps.size());
  std::sort(busy.begin(), busy.end());
  int64_t covered = 0, cur_s = 0, cur_e = INT64_MIN;
  for (auto& [s, e] : busy) {
    if (s > cur_e) {
      if (cur_e != INT64_MIN) covered += cur_e - cur_s;
      cur_s = s;
      cur_e = e;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (cur_e != INT64_MIN) covered += cur_e - cur_s;
  const int64_t span = trace.span_end() - trace.span_start();
  p.gpu_busy_share =
      span > 0 ? std::min(1.0, static_cast<double>(covered) / static_cast<double>(span)) : 0;
  return p;
}

}  // namespace ttap
