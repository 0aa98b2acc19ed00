// KinetoWriter (kineto_writer.h): the Kineto JSON text of the simulator and of WriteKineto.
#include "bench/harness/kineto_writer.h"

#include <cstdio>

namespace ttap {

std::string JsonEscape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char ch : s) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      o += '\\';
      o += ch;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", u);
      o += buf;
    } else {
      o += ch;
    }
  }
  return o;
}

std::string MicrosText(int64_t ns) {
  char buf[48];
  const char* sign = ns < 0 ? "-" : "";
  const uint64_t a = ns < 0 ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  std::snprintf(buf, sizeof(buf), "%s%llu.%03llu", sign, static_cast<unsigned long long>(a / 1000),
                static_cast<unsigned long long>(a % 1000));
  return buf;
}

void KinetoId::AppendTo(std::string* out) const {
  if (is_text_) {
    *out += '"';
    *out += JsonEscape(text_);
    *out += '"';
  } else {
    *out += std::to_string(num_);
  }
}

// ---- KinetoArgs ----

void KinetoArgs::Key(const char* key) {
  if (!text_.empty()) text_ += ", ";
  text_ += '"';
  text_ += JsonEscape(key);
  text_ += "\": ";
}

KinetoArgs& KinetoArgs::Int(const char* key, int64_t value) {
  Key(key);
  text_ += std::to_string(value);
  return *this;
}

KinetoArgs& KinetoArgs::Str(const char* key, const std::string& value) {
  Key(key);
  text_ += '"';
  text_ += JsonEscape(value);
  text_ += '"';
  return *this;
}

KinetoArgs& KinetoArgs::Fixed(const char* key, double value) {
  Key(key);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%f", value);
  text_ += buf;
  return *this;
}

KinetoArgs& KinetoArgs::Ints(const char* key, std::initializer_list<int64_t> values) {
  Key(key);
  text_ += '[';
  bool first = true;
  for (int64_t v : values) {
    if (!first) text_ += ", ";
    first = false;
    text_ += std::to_string(v);
  }
  text_ += ']';
  return *this;
}

// ---- KinetoWriter ----

void KinetoWriter::BeginDocument(DeviceList layout) {
  s_ += "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [";
  layout_ = layout;
  part_ = Part::kDevices;
}

void KinetoWriter::Device(const KinetoDevice& d) {
  if (layout_ == DeviceList::kOnePerLine) {
    s_ += any_device_ ? ",\n    " : "\n    ";
  } else if (any_device_) {
    s_ += ", ";
  }
  any_device_ = true;
  s_ += "{\"id\": " + std::to_string(d.id) + ", \"name\": \"" + JsonEscape(d.name) +
        "\", \"totalGlobalMem\": " + std::to_string(d.total_global_mem) +
        ", \"computeMajor\": " + std::to_string(d.compute_major) +
        ", \"computeMinor\": " + std::to_string(d.compute_minor);
  auto optional = [&](const char* key, const std::optional<int64_t>& v) {
    if (v) s_ += ", \"" + std::string(key) + "\": " + std::to_string(*v);
  };
  optional("maxThreadsPerBlock", d.max_threads_per_block);
  optional("maxThreadsPerMultiprocessor", d.max_threads_per_multiprocessor);
  optional("regsPerBlock", d.regs_per_block);
  optional("warpSize", d.warp_size);
  optional("sharedMemPerBlock", d.shared_mem_per_block);
  s_ += ", \"numSms\": " + std::to_string(d.num_sms) + "}";
}

void KinetoWriter::CloseDevices() {
  if (part_ != Part::kDevices) return;
  s_ += any_device_ && layout_ == DeviceList::kOnePerLine ? "\n  ],\n" : "],\n";
  part_ = Part::kHead;
}

void KinetoWriter::DistributedInfo(const std::string& backend, int64_t rank, int64_t world_size) {
  CloseDevices();
  // HTA finds the rank with the regex "rank":\s+(\d+): keep the space.
  s_ += "  \"distributedInfo\": {\"backend\": \"" + JsonEscape(backend) +
        "\", \"rank\": " + std::to_string(rank) +
        ", \"world_size\": " + std::to_string(world_size) + "},\n";
}

void KinetoWriter::NextEvent() {
  if (part_ != Part::kEvents) {
    CloseDevices();
    s_ += "  \"traceEvents\": [\n";
    part_ = Part::kEvents;
  }
  if (events_++ > 0) s_ += ",\n";
  s_ += "  {";
}

void KinetoWriter::Metadata(const char* what, const KinetoId& pid, const KinetoId& tid,
                            const std::string& name, std::optional<int64_t> ts_ns) {
  NextEvent();
  s_ += "\"name\": \"" + JsonEscape(what) + "\", \"ph\": \"M\", \"ts\": ";
  s_ += ts_ns ? MicrosText(*ts_ns) : "0";
  s_ += ", \"pid\": ";
  pid.AppendTo(&s_);
  s_ += ", \"tid\": ";
  tid.AppendTo(&s_);
  s_ += ", \"args\": {\"name\": \"" + JsonEscape(name) + "\"}}";
}

void KinetoWriter::Common(const std::string& cat, const std::string& name, const KinetoId& pid,
                          const KinetoId& tid, int64_t ts_ns) {
  s_ +=
      "\", \"cat\": \"" + JsonEscape(cat) + "\", \"name\": \"" + JsonEscape(name) + "\", \"pid\": ";
  pid.AppendTo(&s_);
  s_ += ", \"tid\": ";
  tid.AppendTo(&s_);
  s_ += ", \"ts\": ";
  s_ += MicrosText(ts_ns);
}

void KinetoWriter::Args(const KinetoArgs& args) {
  if (!args.empty()) s_ += ", \"args\": {" + args.text() + "}";
  s_ += '}';
}

void KinetoWriter::Complete(const std::string& cat, const std::string& name, const KinetoId& pid,
                            const KinetoId& tid, int64_t ts_ns, int64_t dur_ns,
                            const KinetoArgs& args) {
  NextEvent();
  s_ += "\"ph\": \"X";
  Common(cat, name, pid, tid, ts_ns);
  s_ += ", \"dur\": ";
  s_ += MicrosText(dur_ns);
  Args(args);
}

void KinetoWriter::Instant(const std::string& cat, const std::string& name, const KinetoId& pid,
                           const KinetoId& tid, int64_t ts_ns, const KinetoArgs& args) {
  NextEvent();
  s_ += "\"ph\": \"i";
  Common(cat, name, pid, tid, ts_ns);
  s_ += ", \"s\": \"t\"";
  Args(args);
}

void KinetoWriter::Flow(char ph, int64_t id, const KinetoId& pid, const KinetoId& tid,
                        int64_t ts_ns) {
  NextEvent();
  s_ += "\"ph\": \"";
  s_ += ph;
  Common("ac2g", "ac2g", pid, tid, ts_ns);
  s_ += ", \"id\": " + std::to_string(id);
  if (ph == 'f') s_ += ", \"bp\": \"e\"";
  s_ += '}';
}

void KinetoWriter::FlowStart(int64_t id, const KinetoId& pid, const KinetoId& tid, int64_t ts_ns) {
  Flow('s', id, pid, tid, ts_ns);
}

void KinetoWriter::FlowFinish(int64_t id, const KinetoId& pid, const KinetoId& tid, int64_t ts_ns) {
  Flow('f', id, pid, tid, ts_ns);
}

void KinetoWriter::EndDocument(const std::string& trace_name) {
  if (part_ != Part::kEvents) {
    CloseDevices();
    s_ += "  \"traceEvents\": [\n";
  }
  s_ += events_ > 0 ? "\n  ],\n" : "  ],\n";
  if (!trace_name.empty()) s_ += "  \"traceName\": \"" + JsonEscape(trace_name) + "\",\n";
  s_ += "  \"displayTimeUnit\": \"ms\"\n}\n";
  part_ = Part::kDone;
}

}  // namespace ttap
