// BuildTrace and SortPartial; see trace_builder.h.
#include "analysis/load/trace_builder.h"

#include <malloc.h>
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "analysis/base/parallel.h"
#include "analysis/base/string_util.h"

namespace ttap {

namespace {

template <typename T>
void Release(std::vector<T>* v) {
  std::vector<T>().swap(*v);
}
void Release(NarrowInt64Column* v) { v->Release(); }

template <typename T, typename V>
void SetAt(std::vector<T>* column, size_t i, V v) {
  (*column)[i] = v;
}
void SetAt(NarrowInt64Column* column, size_t i, int64_t v) { column->Set(i, v); }

// A column (std::vector or NarrowInt64Column) in |order|.
template <typename Column>
void Permute(Column* column, const std::vector<uint32_t>& order) {
  if (column->empty()) return;
  Column out;
  out.resize(order.size());
  for (size_t i = 0; i < order.size(); ++i) SetAt(&out, i, (*column)[order[i]]);
  column->swap(out);
}

void ReadTopLevel(const TopLevelValues& top, Trace* trace) {
  simdjson::dom::parser parser;
  auto it = top.find("distributedInfo");
  if (it != top.end()) {
    simdjson::dom::element e;
    if (!parser.parse(it->second).get(e) && e.is_object()) {
      int64_t v;
      if (!e["rank"].get_int64().get(v) && v >= 0 && v < INT32_MAX) {
        trace->rank = static_cast<int32_t>(v);
        trace->rank_source = "distributedInfo";
      }
      if (!e["world_size"].get_int64().get(v)) trace->world_size = static_cast<int32_t>(v);
      std::string_view s;
      if (!e["backend"].get_string().get(s)) trace->backend = std::string(s);
    }
  }
  it = top.find("baseTimeNanoseconds");
  if (it != top.end()) {
    simdjson::dom::element e;
    int64_t v;
    if (!parser.parse(it->second).get(e) && !e.get_int64().get(v)) trace->base_time_ns = v;
  }
  it = top.find("deviceProperties");
  if (it != top.end()) {
    simdjson::dom::element e;
    simdjson::dom::array arr;
    if (!parser.parse(it->second).get(e) && !e.get_array().get(arr)) {
      for (auto d : arr) {
        if (!d.is_object()) continue;
        DeviceInfo info;
        int64_t v;
        std::string_view s;
        info.id = !d["id"].get_int64().get(v) ? static_cast<int32_t>(v)
                                              : static_cast<int32_t>(trace->devices.size());
        if (!d["name"].get_string().get(s)) info.name = std::string(s);
        if (!d["computeMajor"].get_int64().get(v)) info.compute_major = static_cast<int32_t>(v);
        if (!d["computeMinor"].get_int64().get(v)) info.compute_minor = static_cast<int32_t>(v);
        if (!d["totalGlobalMem"].get_int64().get(v)) info.total_memory = v;
        if (!d["numSms"].get_int64().get(v)) info.num_sms = static_cast<int32_t>(v);
        trace->devices.push_back(std::move(info));
      }
    }
  }
}

bool ParseStepNumber(std::string_view name, int64_t* number) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix) return false;
  return ParseDecimalInt64(name.substr(kPrefix.size()), number);
}

}  // namespace

void SortPartial(PartialTable* part) {
  EventTable& t = part->events;
  const size_t n = t.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  bool sorted = true;
  for (size_t i = 1; i < n && sorted; ++i) {
    sorted = t.ts[i - 1] < t.ts[i] || (t.ts[i - 1] == t.ts[i] && t.dur[i - 1] >= t.dur[i]);
  }
  if (sorted) return;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return t.ts[a] < t.ts[b] || (t.ts[a] == t.ts[b] && t.dur[a] > t.dur[b]);
  });
  Permute(&t.ts, order);
  Permute(&t.dur, order);
  Permute(&t.name, order);
  Permute(&t.cat, order);
  Permute(&t.kind, order);
  Permute(&t.flags, order);
  Permute(&t.track, order);
  Permute(&t.stream, order);
  Permute(&t.correlation, order);
  Permute(&t.external_id, order);
  Permute(&t.call_stack, order);
  Permute(&t.python_id, order);
  Permute(&t.python_parent, order);
  Permute(&t.bytes, order);
  Permute(&t.device, order);
}

namespace {

// 1. Strings and tracks: batch-local ids -> trace ids (|string_map|, |track_map| per batch), the
// batches' import statistics, metadata and flows; returns the number of events.
size_t RemapStringsAndTracks(std::vector<PartialTable>& parts, Trace* trace,
                             std::vector<std::vector<StringId>>* string_map_out,
                             std::vector<std::vector<uint32_t>>* track_map_out) {
  std::vector<std::vector<StringId>>& string_map = *string_map_out;
  std::vector<std::vector<uint32_t>>& track_map = *track_map_out;
  string_map.resize(parts.size());
  track_map.resize(parts.size());
  std::unordered_map<std::string, uint32_t> track_index;
  size_t total = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    PartialTable& part = parts[p];
    total += part.events.size();
    auto& smap = string_map[p];
    smap.resize(part.strings.size());
    for (StringId i = 0; i < part.strings.size(); ++i)
      smap[i] = trace->strings.Intern(part.strings.Get(i));
    auto& tmap = track_map[p];
    tmap.resize(part.track_keys.size());
    for (size_t i = 0; i < part.track_keys.size(); ++i) {
      const auto& [pid, tid] = part.track_keys[i];
      std::string key = pid + '\x1f' + tid;
      auto it = track_index.find(key);
      if (it == track_index.end()) {
        Track tr;
        tr.pid = pid;
        tr.tid = tid;
        int64_t v;
        if (ParseDecimalInt64(pid, &v)) tr.pid_num = v;
        if (ParseDecimalInt64(tid, &v)) tr.tid_num = v;
        it = track_index.emplace(key, static_cast<uint32_t>(trace->tracks.size())).first;
        trace->tracks.push_back(std::move(tr));
      }
      tmap[i] = it->second;
    }
    // Import statistics.
    ImportStats& s = trace->stats;
    s.elements += part.stats.elements;
    s.events += part.stats.events;
    s.metadata += part.stats.metadata;
    s.flows += part.stats.flows;
    s.counters += part.stats.counters;
    for (auto& [k, v] : part.stats.skipped) s.skipped[k] += v;
    for (auto& [k, v] : part.stats.unknown_categories) s.CountUnknownCategory(k, v);
    s.unknown_categories_other += part.stats.unknown_categories_other;
    if (s.first_error.empty()) s.first_error = part.stats.first_error;
    for (auto& m : part.metadata) {
      Track& tr = trace->tracks[tmap[m.track]];
      if (m.name == "thread_name" || (m.name == "process_name" && tr.name.empty()))
        tr.name = m.value;
      if (m.name == "process_labels" && tr.name.empty()) tr.name = m.value;
    }
    for (auto& f : part.flows) {
      trace->flows.push_back({f.id, f.ts, tmap[f.track], f.phase, smap[f.cat]});
    }
    std::vector<FlowEvent>().swap(part.flows);
    // The batch's strings and track keys are no longer needed once remapped.
    part.strings = StringPool();
    part.track_index = {};
    part.track_keys = {};
    part.metadata = {};
  }
  return total;
}

// 2. K-way merge of the locally sorted batches into one order: (batch << 32) | row per event.
std::vector<uint64_t> MergeOrder(const std::vector<PartialTable>& parts, size_t total) {
  std::vector<uint64_t> order;
  order.reserve(total);
  struct Head {
    int64_t ts, dur;
    uint32_t part, row;
  };
  auto later = [](const Head& a, const Head& b) {
    if (a.ts != b.ts) return a.ts > b.ts;
    if (a.dur != b.dur) return a.dur < b.dur;
    return a.part > b.part || (a.part == b.part && a.row > b.row);
  };
  std::priority_queue<Head, std::vector<Head>, decltype(later)> heap(later);
  for (uint32_t p = 0; p < parts.size(); ++p) {
    if (parts[p].events.size()) heap.push({parts[p].events.ts[0], parts[p].events.dur[0], p, 0});
  }
  while (!heap.empty()) {
    Head h = heap.top();
    heap.pop();
    order.push_back((uint64_t{h.part} << 32) | h.row);
    const EventTable& t = parts[h.part].events;
    uint32_t next = h.row + 1;
    // Run of rows from the same batch that stay ahead of the heap's best.
    while (next < t.size() &&
           (heap.empty() || !later(Head{t.ts[next], t.dur[next], h.part, next}, heap.top()))) {
      order.push_back((uint64_t{h.part} << 32) | next);
      ++next;
    }
    if (next < t.size()) heap.push({t.ts[next], t.dur[next], h.part, next});
  }
  return order;
}

// 3. Gathers each column in merged order, freeing the batch columns as it goes.
void GatherColumns(std::vector<PartialTable>& parts, std::vector<uint64_t>* order_in, size_t total,
                   const std::vector<std::vector<StringId>>& string_map,
                   const std::vector<std::vector<uint32_t>>& track_map, int threads, Trace* trace) {
  const std::vector<uint64_t>& order = *order_in;
  EventTable& ev = trace->events;
  auto gather = [&](auto member, auto map) {
    auto& dst = ev.*member;
    dst.resize(total);
    for (size_t i = 0; i < total; ++i) {
      uint32_t p = static_cast<uint32_t>(order[i] >> 32);
      uint32_t r = static_cast<uint32_t>(order[i]);
      SetAt(&dst, i, map(p, (parts[p].events.*member)[r]));
    }
    for (auto& part : parts) Release(&(part.events.*member));
  };
  auto same = [](uint32_t, auto v) { return v; };
  auto str = [&](uint32_t p, StringId v) { return string_map[p][v]; };
  // Columns are independent: two halves of similar size run on two threads when allowed.
  auto first_half = [&] {
    gather(&EventTable::ts, same);
    gather(&EventTable::dur, same);
    gather(&EventTable::correlation, same);
    gather(&EventTable::name, str);
    gather(&EventTable::kind, same);
    gather(&EventTable::flags, same);
    gather(&EventTable::track, [&](uint32_t p, uint32_t v) { return track_map[p][v]; });
  };
  auto second_half = [&] {
    gather(&EventTable::external_id, same);
    gather(&EventTable::bytes, same);
    gather(&EventTable::cat, str);
    gather(&EventTable::stream, same);
    gather(&EventTable::call_stack, str);
    gather(&EventTable::python_id, same);
    gather(&EventTable::python_parent, same);
    gather(&EventTable::device, same);
  };
  RunBoth(static_cast<size_t>(std::max(threads, 1)), first_half, second_half);
  Release(order_in);
  parts.clear();
  std::sort(trace->flows.begin(), trace->flows.end(),
            [](const FlowEvent& a, const FlowEvent& b) { return a.ts < b.ts; });
}

// A row that ends at most this much after an open entry is inside it: integer-microsecond
// timestamps round a child's end past its parent's.
constexpr int64_t kNestingSlackNs = 1000;
// An ill-nested row goes in below at most this many entries it outlives; past that (a hostile
// staircase of rows, each outliving all the open ones) it goes on top, so that a thread's rows
// cost O(1) each, not O(open entries).
constexpr size_t kMaxOutlivedEntries = 64;

// 4. The per-thread call hierarchy (depth, parent) and each row's enclosing Python frame.
void BuildHierarchy(Trace* trace) {
  EventTable& ev = trace->events;
  const size_t total = ev.size();
  ev.depth.assign(total, 0);
  ev.parent.assign(total, -1);
  ev.frame.assign(total, -1);
  ev.link.assign(total, -1);
  {
    struct Open {
      int64_t end;
      int32_t row;
      int32_t latest;         // the entry opened last at or below this one in the stack
      int32_t latest_python;  // ... the python_function opened last, -1
    };
    // Each thread's open entries, their ends non-increasing from the bottom up, so that they
    // pop when they end. A row's parent is the open entry opened last and its Python frame the
    // python_function opened last: the top entry and its innermost frame, unless an ill-nested
    // entry went in below the top. An entry that starts inside others but outlives them
    // (ProfilerStep#N opens inside the Python frames of prof.step()'s record_function.__enter__
    // and runs on after they return; nccl:coalesced outlives the frame that opened it) goes in
    // below the ones it outlives, and takes its own parent and frame from the entries that
    // contain it whole (the training loop, not __enter__).
    std::vector<std::vector<Open>> stacks(trace->tracks.size());
    for (size_t i = 0; i < total; ++i) {
      auto& st = stacks[ev.track[i]];
      const int64_t ts = ev.ts[i];
      while (!st.empty() && st.back().end <= ts) st.pop_back();
      const bool opens = ev.kind[i] != EventKind::kInstant && ev.dur[i] > 0;
      const int64_t end = ev.end(i);
      size_t under = st.size();  // entries that contain row i whole: st[0, under)
      if (opens) {
        while (under > 0 && st[under - 1].end + kNestingSlackNs < end &&
               st.size() - under < kMaxOutlivedEntries) {
          --under;
        }
        if (under > 0 && st[under - 1].end + kNestingSlackNs < end) under = st.size();
      }
      // The entries row i starts in: all open ones, or for an ill-nested row those it is in.
      const Open* in = under == st.size() ? (st.empty() ? nullptr : &st.back())
                                          : (under > 0 ? &st[under - 1] : nullptr);
      if (in != nullptr) {
        ev.parent[i] = in->latest;
        ev.frame[i] = in->latest_python;
        ev.depth[i] = static_cast<uint16_t>(std::min<size_t>(under, UINT16_MAX));
      }
      if (!opens) continue;
      const int32_t row = static_cast<int32_t>(i);
      const bool python = ev.kind[i] == EventKind::kPythonFunction;
      st.insert(st.begin() + static_cast<std::ptrdiff_t>(under),
                Open{end, row, row, python ? row : ev.frame[i]});
      // Rows come in start order: the entries it went in below opened before it.
      for (size_t k = under + 1; k < st.size(); ++k) {
        st[k].latest = row;
        const int32_t below = st[k - 1].latest_python;
        const bool own = ev.kind[st[k].row] == EventKind::kPythonFunction &&
                         (below < 0 || ev.ts[st[k].row] >= ev.ts[below]);
        st[k].latest_python = own ? st[k].row : below;
      }
    }
  }
}

// 5. CPU launch <-> GPU activity, by correlation id (else by ac2g flow).
void LinkLaunches(Trace* trace) {
  EventTable& ev = trace->events;
  const size_t total = ev.size();
  {
    std::vector<std::pair<int64_t, int32_t>> launches;
    for (size_t i = 0; i < total; ++i) {
      if (IsLaunchKind(ev.kind[i]) && ev.correlation[i] >= 0) {
        launches.emplace_back(ev.correlation[i], static_cast<int32_t>(i));
      }
    }
    std::sort(launches.begin(), launches.end());
    uint64_t unlinked = 0;
    for (size_t i = 0; i < total; ++i) {
      if (!IsGpuKind(ev.kind[i])) continue;
      int64_t c = ev.correlation[i];
      auto it = std::lower_bound(launches.begin(), launches.end(), std::make_pair(c, INT32_MIN));
      if (c < 0 || it == launches.end() || it->first != c) {
        ++unlinked;
        continue;
      }
      ev.link[i] = it->second;
      if (ev.link[it->second] < 0) ev.link[it->second] = static_cast<int32_t>(i);
    }
    // Traces whose GPU activity carries no correlation id (early ROCm exports) link the launch
    // and its activity only by an ac2g flow: its start at the call, its end at the activity.
    if (unlinked > 0 && !trace->flows.empty()) {
      auto key = [](uint32_t track, int64_t ts) {
        return (static_cast<uint64_t>(track) << 44) ^ static_cast<uint64_t>(ts);
      };
      std::unordered_map<uint64_t, int32_t> launch_at;  // (track, ts) -> launch row
      for (size_t i = 0; i < total; ++i) {
        if (IsLaunchKind(ev.kind[i]) && ev.link[i] < 0) {
          launch_at.emplace(key(ev.track[i], ev.ts[i]), static_cast<int32_t>(i));
        }
      }
      std::unordered_map<int64_t, int32_t> launch_of_flow;  // flow id -> launch row
      for (const FlowEvent& f : trace->flows) {
        if (f.phase != 's') continue;
        auto it = launch_at.find(key(f.track, f.ts));
        if (it != launch_at.end()) launch_of_flow.emplace(f.id, it->second);
      }
      std::unordered_map<uint64_t, int64_t> flow_end_at;  // (track, ts) -> flow id
      for (const FlowEvent& f : trace->flows) {
        if (f.phase == 'f' && launch_of_flow.count(f.id))
          flow_end_at.emplace(key(f.track, f.ts), f.id);
      }
      for (size_t i = 0; i < total && !flow_end_at.empty(); ++i) {
        if (!IsGpuKind(ev.kind[i]) || ev.link[i] >= 0) continue;
        auto f = flow_end_at.find(key(ev.track[i], ev.ts[i]));
        if (f == flow_end_at.end()) continue;
        const int32_t launch = launch_of_flow[f->second];
        if (ev.link[launch] >= 0) continue;
        ev.link[i] = launch;
        ev.link[launch] = static_cast<int32_t>(i);
        --unlinked;
      }
    }
    trace->stats.gpu_without_launch = unlinked;
  }
}

// 6. GPU tracks and the devices they run on.
void AssignDevices(Trace* trace) {
  EventTable& ev = trace->events;
  const size_t total = ev.size();
  for (size_t i = 0; i < total; ++i) {
    if (ev.kind[i] == EventKind::kKernel || ev.kind[i] == EventKind::kMemcpy ||
        ev.kind[i] == EventKind::kMemset) {
      Track& tr = trace->tracks[ev.track[i]];
      if (!tr.gpu && ev.device[i] >= 0) tr.device = ev.device[i];
      tr.gpu = true;
    }
  }
  const size_t properties_count = trace->devices.size();
  for (Track& tr : trace->tracks) {
    if (!tr.gpu) continue;
    // args.device when the activities carry it, else the pid (Kineto writes the device as pid).
    if (tr.device < 0) {
      tr.device = tr.pid_num >= 0 && tr.pid_num < 1024 ? static_cast<int32_t>(tr.pid_num) : 0;
    }
    auto d = std::find_if(trace->devices.begin(), trace->devices.end(),
                          [&](const DeviceInfo& di) { return di.id == tr.device; });
    if (d == trace->devices.end()) {
      DeviceInfo info;
      // One visible device whose properties carry another index (HIP/CUDA_VISIBLE_DEVICES):
      // the properties still describe it.
      if (properties_count == 1) info = trace->devices.front();
      info.id = tr.device;
      trace->devices.push_back(info);
      d = trace->devices.end() - 1;
    }
    d->used = true;
  }
}

// FindSteps ignores the markers when they cover under 1/kMarkedShareDivisor of the CPU ops'
// span, if that span is at least kUnmarkedWorkMinNs.
constexpr int64_t kMarkedShareDivisor = 20;
constexpr int64_t kUnmarkedWorkMinNs = 1000000;

// 7. Steps: CPU-side ProfilerStep#N, extended to the end of the GPU work they launched. The
// first event of each number counts (a set, not a scan of the steps so far: 100k steps).
void FindSteps(Trace* trace) {
  EventTable& ev = trace->events;
  const size_t total = ev.size();
  std::unordered_set<int64_t> step_numbers;
  for (size_t i = 0; i < total; ++i) {
    if (ev.kind[i] != EventKind::kUserAnnotation && ev.kind[i] != EventKind::kCpuOp) continue;
    int64_t number;
    if (!ParseStepNumber(trace->Name(i), &number)) continue;
    if (!step_numbers.insert(number).second) continue;
    Step s;
    s.number = number;
    s.event = static_cast<int32_t>(i);
    s.cpu_start = ev.ts[i];
    s.cpu_end = ev.end(i);
    s.gpu_end = s.cpu_end;
    trace->steps.push_back(s);
  }
  std::sort(trace->steps.begin(), trace->steps.end(),
            [](const Step& a, const Step& b) { return a.cpu_start < b.cpu_start; });
  // Step markers that cover almost none of the CPU's ops do not mark the loop: profiling
  // without a schedule, `with profile() as prof: train(); prof.step()` records one ProfilerStep
  // around the last prof.step() call only (microseconds), all the work before it. Such a trace
  // is read as one without markers (its steps inferred, or the whole run).
  if (!trace->steps.empty()) {
    int64_t cpu_first = INT64_MAX, cpu_last = INT64_MIN;
    // The ops' span: not Python frames or runtime calls, which a final device sync or the
    // profiler's own exit stretch past the loop.
    for (size_t i = 0; i < total; ++i) {
      if (ev.kind[i] != EventKind::kCpuOp) continue;
      cpu_first = std::min(cpu_first, ev.ts[i]);
      cpu_last = std::max(cpu_last, ev.end(i));
    }
    // In doubles: a hostile trace's clock may span all of int64.
    double marked = 0;
    for (const Step& st : trace->steps) {
      marked += static_cast<double>(st.cpu_end) - static_cast<double>(st.cpu_start);
    }
    const double span = cpu_first <= cpu_last
                            ? static_cast<double>(cpu_last) - static_cast<double>(cpu_first)
                            : 0.0;
    if (span >= kUnmarkedWorkMinNs && marked * kMarkedShareDivisor < span) {
      trace->stats.step_markers_ignored = trace->steps.size();
      trace->steps.clear();
    }
  }
  {
    std::vector<int64_t> starts, cpu_ends;
    for (const Step& st : trace->steps) {
      starts.push_back(st.cpu_start);
      cpu_ends.push_back(st.cpu_end);
    }
    const std::vector<int64_t> gpu_ends = EndsOfLaunchedGpuWork(ev, starts, cpu_ends);
    for (size_t s = 0; s < trace->steps.size(); ++s) trace->steps[s].gpu_end = gpu_ends[s];
  }
}

// Steps never overlap: a step's GPU tail ends where the next step begins (that work belongs to
// the next step's time line; counting it twice would double every per-step figure).
void SeparateSteps(Trace* trace) {
  for (Step& st : trace->steps) st.gpu_work_end = st.gpu_end;
  for (size_t s = 0; s + 1 < trace->steps.size(); ++s) {
    Step& st = trace->steps[s];
    st.gpu_end = std::min(st.gpu_end, std::max(st.cpu_end, trace->steps[s + 1].cpu_start));
  }
}

}  // namespace

Status BuildTrace(std::vector<PartialTable>* parts_in, const TopLevelValues& top, int window_count,
                  int threads, Trace* trace) {
  std::vector<PartialTable>& parts = *parts_in;
  auto phase_start = std::chrono::steady_clock::now();
  auto phase = [&](const char* name) {
    auto now = std::chrono::steady_clock::now();
    trace->load_phases.emplace_back(
        name, std::chrono::duration<double, std::milli>(now - phase_start).count());
    phase_start = now;
  };
  ReadTopLevel(top, trace);
  std::vector<std::vector<StringId>> string_map;
  std::vector<std::vector<uint32_t>> track_map;
  const size_t total = RemapStringsAndTracks(parts, trace, &string_map, &track_map);
  if (total > UINT32_MAX / 2) return Status::Error("too many events (over 2^31)");
#ifdef __GLIBC__
  // The workers' batch string pools were many small blocks in per-thread arenas; hand the pages
  // back before the gather below reaches the load's peak.
  malloc_trim(0);
#endif
  phase("strings and tracks");
  std::vector<uint64_t> order = MergeOrder(parts, total);
  phase("merge order");
  GatherColumns(parts, &order, total, string_map, track_map, threads, trace);
  phase("gather columns");
  BuildHierarchy(trace);
  phase("hierarchy");
  LinkLaunches(trace);
  phase("links");
  AssignDevices(trace);
  phase("devices");
  FindSteps(trace);
  phase("steps");
  SeparateSteps(trace);
  BuildWindows(trace, window_count);
  phase("windows");
  return Status::Ok();
}

}  // namespace ttap
