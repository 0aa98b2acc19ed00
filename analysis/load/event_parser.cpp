// EventParser implementation (simdjson on-demand, no exceptions); see event_parser.h.
#include "analysis/load/event_parser.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>

#include "analysis/base/string_util.h"
#include "analysis/load/timestamp.h"

namespace ttap {

namespace od = simdjson::ondemand;

EventKind KindFromCategory(std::string_view c) {
  if (c == "cpu_op" || c == "Operator") return EventKind::kCpuOp;
  if (c == "python_function") return EventKind::kPythonFunction;
  if (c == "user_annotation") return EventKind::kUserAnnotation;
  if (c == "gpu_user_annotation") return EventKind::kGpuUserAnnotation;
  if (c == "cuda_runtime" || c == "Runtime") return EventKind::kRuntime;
  if (c == "cuda_driver") return EventKind::kDriver;
  if (c == "kernel" || c == "Kernel" || c == "mtia_ccp_events") return EventKind::kKernel;
  if (c == "gpu_memcpy" || c == "Memcpy") return EventKind::kMemcpy;
  if (c == "gpu_memset" || c == "Memset") return EventKind::kMemset;
  if (c == "cuda_sync") return EventKind::kGpuSync;
  if (c == "Trace") return EventKind::kTraceSpan;
  return EventKind::kOther;
}

bool IsLegacyAnnotationName(std::string_view name) {
  return name.find("::") == std::string_view::npos &&
         (name.find('#') != std::string_view::npos || StartsWith(name, "## "));
}

namespace {

// The size of one element of a profiler "dtype" arg (c10's scalar type names); 1 when unknown.
int64_t DtypeBytes(std::string_view d) {
  if (d == "Double" || d == "Long" || d == "ComplexFloat") return 8;
  if (d == "Float" || d == "Int" || d == "ComplexHalf") return 4;
  if (d == "BFloat16" || d == "Half" || d == "Short") return 2;
  return 1;  // Byte, Char, Bool, the float8 types
}

// The ops whose recorded inputs can say that they convert a tensor's memory layout.
bool IsLayoutCopyCandidate(std::string_view name) {
  return name == "aten::contiguous" || name == "aten::clone";
}

// "Input Strides": [[25088, 49, 7, 1], []]: the first input's strides (rank 4 or 5).
void ReadFirstStrides(od::value& v, int64_t* strides, int* rank) {
  od::array outer;
  if (v.get_array().get(outer)) return;
  for (auto first : outer) {
    od::array inner;
    if (first.get_array().get(inner)) return;
    int n = 0;
    for (auto x : inner) {
      int64_t s;
      if (x.get_int64().get(s) || n >= 5) return;
      strides[n++] = s;
    }
    *rank = n;
    return;
  }
}

// "Concrete Inputs": ["", "2"]: the memory format argument (0 contiguous, 1 preserve,
// 2 channels_last, 3 channels_last_3d).
void ReadMemoryFormat(od::value& v, int64_t* format) {
  od::array a;
  if (v.get_array().get(a)) return;
  int k = 0;
  for (auto x : a) {
    if (k++ != 1) continue;
    std::string_view s;
    if (!x.get_string().get(s) && s.size() == 1 && s[0] >= '0' && s[0] <= '3') *format = s[0] - '0';
    return;
  }
}

// NCHW strides (the channel stride is not the innermost) asked to become channels_last, or
// channels_last strides (channel stride 1 and the width stride the channel count) asked to
// become contiguous.
bool ConvertsLayout(const int64_t* strides, int rank, int64_t format) {
  if (rank != 4 && rank != 5) return false;
  const bool channels_last = strides[1] == 1 && strides[rank - 1] > 1;
  const bool contiguous = strides[rank - 1] == 1 && strides[1] > 1;
  return (format == 2 || format == 3) ? contiguous : format == 0 && channels_last;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

// Reads an integer that may be written as an integer, a float or a numeric string. Returns false
// for null, other types and garbage.
bool ReadInt(od::value v, int64_t* out) {
  od::json_type t;
  if (v.type().get(t)) return false;
  if (t == od::json_type::number) {
    int64_t i;
    if (!v.get_int64().get(i)) {
      *out = i;
      return true;
    }
    uint64_t u;
    if (!v.get_uint64().get(u)) {
      *out = static_cast<int64_t>(u & 0x7fffffffffffffffull);
      return true;
    }
    double d;
    if (!v.get_double().get(d) && std::isfinite(d) && std::fabs(d) < 9e18) {
      *out = static_cast<int64_t>(d);
      return true;
    }
    return false;
  }
  if (t == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return false;
    return ParseDecimalInt64(s, out);
  }
  return false;
}

// pid/tid as written: number text or string contents.
bool ReadIdText(od::value v, std::string_view* out, std::string* scratch) {
  od::json_type t;
  if (v.type().get(t)) return false;
  if (t == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return false;
    scratch->assign(s);
    *out = *scratch;
    return true;
  }
  if (t == od::json_type::number) {
    scratch->assign(TrimRight(v.raw_json_token()));
    *out = *scratch;
    return true;
  }
  return false;
}

}  // namespace

namespace {

// What one event says, as read by EventReader::ReadFields (views into the batch's buffer).
struct EventFields {
  char ph = 0;
  std::string_view name, cat, ts_text, dur_text, pid, tid, call_stack, flow_id_text;
  bool has_name = false, has_cat = false, has_ts = false, has_dur = false;
  bool has_pid = false, has_tid = false;
  int64_t correlation = kNone, external = kNone, stream = kNone, bytes = kNone, flow_id = kNone;
  int64_t py_id = kNone, py_parent = kNone, device = kNone;
  int64_t wait_stream = kNone, wait_record = kNone;  // cuda_sync: what a wait waits for
  // A collective kernel's message ("In msg nelems", "Out msg nelems", "dtype"): its bytes.
  int64_t in_nelems = kNone, out_nelems = kNone, element_bytes = 1;
  // aten::contiguous / aten::clone: the first input's strides and the memory format asked for.
  int64_t in_strides[5] = {0, 0, 0, 0, 0};
  int in_rank = -1;
  int64_t memory_format = kNone;
};

// Reads one batch's events into a PartialTable: each element's fields, then the event, flow,
// metadata or counter it is, or the reason it is skipped (counted in the batch's ImportStats).
class EventReader : public EventFields {
 public:
  EventReader(PartialTable* out, uint64_t base) : out_(out), base_(base) {}

  // The fields of |obj|; nullptr, or why the event is skipped.
  const char* ReadFields(od::object obj) {
    static_cast<EventFields&>(*this) = EventFields{};
    meta_value_.clear();
    const char* bad = nullptr;
    for (auto field : obj) {
      std::string_view key;
      if (field.unescaped_key().get(key)) {
        bad = "invalid key";
        break;
      }
      od::value v;
      if (field.value().get(v)) {
        bad = "invalid value";
        break;
      }
      if (key == "ph") {
        std::string_view s;
        if (v.get_string().get(s) || s.empty()) {
          bad = "invalid ph";
          break;
        }
        ph = s[0];
      } else if (key == "name") {
        if (v.get_string().get(name)) {
          // Some writers put numbers in name: keep their text. A broken string skips the event.
          od::json_type nt;
          if (v.type().get(nt) || nt != od::json_type::number) {
            bad = "invalid name";
            break;
          }
          name = TrimRight(v.raw_json_token());
        }
        has_name = true;
      } else if (key == "cat") {
        if (v.get_string().get(cat)) {
          bad = "invalid cat";
          break;
        }
        has_cat = true;
      } else if (key == "ts") {
        ts_text = TrimRight(v.raw_json_token());
        has_ts = true;
      } else if (key == "dur") {
        dur_text = TrimRight(v.raw_json_token());
        has_dur = true;
      } else if (key == "pid") {
        if (!ReadIdText(v, &pid, &pid_s_)) {
          bad = "invalid pid";
          break;
        }
        has_pid = true;
      } else if (key == "tid") {
        if (!ReadIdText(v, &tid, &tid_s_)) {
          bad = "invalid tid";
          break;
        }
        has_tid = true;
      } else if (key == "id") {
        if (!ReadInt(v, &flow_id)) {
          flow_id = static_cast<int64_t>(
              std::hash<std::string_view>()(TrimRight(v.raw_json_token())) >> 1);
        }
      } else if (key == "args") {
        od::object args;
        if (v.get_object().get(args)) continue;  // args of another type: ignore
        for (auto af : args) {
          std::string_view ak;
          if (af.unescaped_key().get(ak)) {
            bad = "invalid args";
            break;
          }
          od::value av;
          if (af.value().get(av)) {
            bad = "invalid args";
            break;
          }
          switch (ak.size()) {
            case 11:
              if (ak == "correlation")
                ReadInt(av, &correlation);
              else if (ak == "External id" || ak == "external id")
                ReadInt(av, &external);
              break;
            case 6:
              if (ak == "stream") {
                if (!ReadInt(av, &stream)) stream = kNone;
              } else if (ak == "device") {
                ReadInt(av, &device);
              } else if (ak == "labels") {
                std::string_view s;
                if (!av.get_string().get(s)) meta_value_.assign(s);
              }
              break;
            case 5:
              if (ak == "bytes") {
                ReadInt(av, &bytes);
              } else if (ak == "dtype") {
                std::string_view d;
                if (!av.get_string().get(d)) element_bytes = DtypeBytes(d);
              }
              break;
            case 9:
              if (ak == "Python id") ReadInt(av, &py_id);
              break;
            case 33:
              if (ak == "wait_on_cuda_event_record_corr_id") ReadInt(av, &wait_record);
              break;
            case 16:
              if (ak == "Python parent id") ReadInt(av, &py_parent);
              break;
            case 10:
              if (ak == "Call stack") {
                if (av.get_string().get(call_stack)) call_stack = {};
              } else if (ak == "sort_index") {
                int64_t si;
                if (ReadInt(av, &si) && meta_value_.empty()) meta_value_ = std::to_string(si);
              }
              break;
            case 4:
              if (ak == "name") {
                std::string_view s;
                if (!av.get_string().get(s)) meta_value_.assign(s);
              }
              break;
            case 13:
              if (ak == "Input Strides" && IsLayoutCopyCandidate(name)) {
                ReadFirstStrides(av, in_strides, &in_rank);
              } else if (ak == "In msg nelems") {
                ReadInt(av, &in_nelems);
              }
              break;
            case 14:
              if (ak == "wait_on_stream") {
                ReadInt(av, &wait_stream);
              } else if (ak == "Out msg nelems") {
                ReadInt(av, &out_nelems);
              }
              break;
            case 15:
              if (ak == "Concrete Inputs" && IsLayoutCopyCandidate(name)) {
                ReadMemoryFormat(av, &memory_format);
              }
              break;
            default:
              break;
          }
        }
        if (bad) break;
      }
    }
    return bad;
  }

  // Stores the event whose fields were read last (|offset|: where it starts in the batch).
  void Store(size_t offset) {
    EventTable& t = out_->events;
    if (ph == 0) {
      Skip("missing ph", offset);
      return;
    }

    if (ph == 'M') {
      out_->stats.metadata++;
      if (has_name) out_->metadata.push_back({TrackOf(), std::string(name), meta_value_});
      return;
    }
    if (ph == 'C') {
      out_->stats.counters++;
      return;
    }
    int64_t ts = 0, dur = 0;
    bool frac_ts = false, frac_dur = false;
    if (!has_ts) {
      Skip("missing ts", offset);
      return;
    }
    TimeParse tp = ParseMicrosToNanos(ts_text, &ts, &frac_ts);
    if (tp == TimeParse::kOk && (ts < kMinTimestampNs || ts > kMaxTimestampNs)) {
      tp = TimeParse::kOutOfRange;
    }
    if (tp != TimeParse::kOk) {
      Skip(tp == TimeParse::kOutOfRange ? "ts out of range" : "invalid ts", offset);
      return;
    }
    if (ph == 's' || ph == 'f' || ph == 't') {
      out_->stats.flows++;
      if (flow_id == kNone) {
        Skip("flow without id", offset);
        return;
      }
      out_->flows.push_back(
          {flow_id, ts, TrackOf(), ph, has_cat ? out_->strings.Intern(cat) : kEmptyString});
      return;
    }
    bool instant = ph == 'i' || ph == 'I';
    if (ph != 'X' && !instant) {
      Skip(ph == 'B' || ph == 'E' ? "begin/end events (unsupported phase)" : "unsupported phase",
           offset);
      return;
    }
    if (has_dur) {
      tp = ParseMicrosToNanos(dur_text, &dur, &frac_dur);
      if (tp != TimeParse::kOk) {
        Skip(tp == TimeParse::kOutOfRange ? "dur out of range" : "invalid dur", offset);
        return;
      }
      if (dur < 0) {
        Skip("negative dur", offset);
        return;
      }
      if (ts > kMaxTimestampNs - dur) {
        Skip("ts + dur out of range", offset);
        return;
      }
    }
    StringId cat_id = has_cat ? out_->strings.Intern(cat) : kEmptyString;
    EventKind kind;
    if (instant) {
      kind = EventKind::kInstant;
    } else if (!has_cat) {
      // The legacy profiler's EventList.export_chrome_trace writes its ops without a category on
      // pid "CPU functions": they are the CPU's ops (record_function blocks among them).
      kind = has_pid && pid == "CPU functions"
                 ? (IsLegacyAnnotationName(name) ? EventKind::kUserAnnotation : EventKind::kCpuOp)
                 : EventKind::kOther;
    } else {
      kind = KindFromCategory(cat);
      if (kind == EventKind::kOther) out_->stats.CountUnknownCategory(cat);
      if (kind == EventKind::kCpuOp && cat == "Operator" && IsLegacyAnnotationName(name)) {
        kind = EventKind::kUserAnnotation;
      }
    }
    t.ts.push_back(ts);
    t.dur.push_back(dur);
    t.name.push_back(out_->strings.Intern(name));
    t.cat.push_back(cat_id);
    t.kind.push_back(kind);
    t.flags.push_back(static_cast<uint8_t>(
        (has_dur ? kHasDur : 0) | (has_cat ? kHasCat : 0) | (frac_ts || frac_dur ? kFracTs : 0) |
        (ConvertsLayout(in_strides, in_rank, memory_format) ? kLayoutCopy : 0)));
    t.track.push_back(TrackOf());
    t.stream.push_back(
        stream == kNone ? -1
                        : static_cast<int32_t>(std::clamp<int64_t>(stream, INT32_MIN, INT32_MAX)));
    t.correlation.push_back(correlation);
    t.external_id.push_back(external);
    t.call_stack.push_back(call_stack.empty() ? kEmptyString : out_->strings.Intern(call_stack));
    if (kind == EventKind::kKernel && bytes == kNone && (in_nelems >= 0 || out_nelems >= 0) &&
        std::max(in_nelems, out_nelems) <= INT64_MAX / 8) {
      bytes = std::max(in_nelems, out_nelems) * element_bytes;  // a collective's message
    }
    if (kind == EventKind::kGpuSync) {
      // A sync record has no Python id and no bytes: those columns say what it waits for.
      py_id = wait_stream >= 0 && wait_stream <= INT32_MAX ? wait_stream : kNone;
      bytes = wait_record >= 0 ? wait_record : kNone;
    }
    t.python_id.push_back(static_cast<int32_t>(py_id));
    t.python_parent.push_back(static_cast<int32_t>(py_parent));
    t.bytes.push_back(bytes);
    t.device.push_back(device >= 0 && device < INT16_MAX ? static_cast<int16_t>(device) : -1);
  }

  void Skip(const char* reason, size_t offset) {
    out_->stats.skipped[reason]++;
    uint64_t at = base_ + offset;
    if (at < out_->first_error_offset) {
      out_->first_error_offset = at;
      out_->stats.first_error = std::string(reason) + " (event at byte " + std::to_string(at) + ")";
    }
  }

 private:
  // Track id (pid, tid) local to the batch.
  uint32_t TrackOf() {
    std::string key;
    key.reserve(pid.size() + tid.size() + 1);
    key.append(has_pid ? pid : std::string_view());
    key.push_back('\x1f');
    key.append(has_tid ? tid : std::string_view());
    auto it = out_->track_index.find(key);
    if (it != out_->track_index.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(out_->track_keys.size());
    out_->track_keys.emplace_back(std::string(has_pid ? pid : std::string_view()),
                                  std::string(has_tid ? tid : std::string_view()));
    out_->track_index.emplace(std::move(key), id);
    return id;
  }

  PartialTable* out_;
  uint64_t base_;
  std::string pid_s_, tid_s_, meta_value_;  // buffers reused from event to event
};

}  // namespace

struct EventParser::Impl {
  od::parser parser;
};

EventParser::EventParser() : impl_(new Impl()) {}
EventParser::~EventParser() = default;

void EventParser::ParseBatch(const char* buf, size_t capacity,
                             const std::vector<JsonSplitter::Range>& ranges, uint64_t base,
                             PartialTable* out) {
  out->events.Reserve(ranges.size());
  EventReader reader(out, base);
  for (const auto& r : ranges) {
    out->stats.elements++;
    od::document doc;
    if (impl_->parser.iterate(buf + r.begin, r.end - r.begin, capacity - r.begin).get(doc)) {
      reader.Skip("invalid JSON", r.begin);
      continue;
    }
    od::object obj;
    if (doc.get_object().get(obj)) {
      reader.Skip("event is not an object", r.begin);
      continue;
    }
    if (const char* bad = reader.ReadFields(obj)) {
      reader.Skip(bad, r.begin);
      continue;
    }
    reader.Store(r.begin);
  }
  out->stats.events = out->events.size();
}

}  // namespace ttap
