// The one writer of the Kineto trace JSON that the research harness produces: the simulator
// (trace_sim.cpp) and the injected copies of real traces (WriteKineto, trace_edit.cpp) both stream
// their document through KinetoWriter, which owns the skeleton (schemaVersion, deviceProperties,
// distributedInfo, traceEvents, traceName, displayTimeUnit), the event syntax (metadata, complete,
// instant and ac2g flow events), exact microsecond timestamps and JSON string escaping.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

namespace ttap {

// |s| escaped for a JSON string: quote, backslash and control characters (\u00XX).
std::string JsonEscape(const std::string& s);
// |ns| as microseconds with three exact decimals ("1712195495519689.047"; negative values too).
std::string MicrosText(int64_t ns);

// A pid or tid as the trace writes it: a number (67844), or a string ("Traces").
class KinetoId {
 public:
  KinetoId(int64_t num) : num_(num) {}  // implicit: most ids are plain numbers
  static KinetoId Text(std::string text) {
    KinetoId id(0);
    id.text_ = std::move(text);
    id.is_text_ = true;
    return id;
  }
  void AppendTo(std::string* out) const;

 private:
  int64_t num_ = 0;
  std::string text_;
  bool is_text_ = false;
};

// One deviceProperties entry. The optional keys are written only when set (the simulator sets
// them; copies of real traces keep what the loader read, which has none of them).
struct KinetoDevice {
  int64_t id = 0;
  std::string name;
  int64_t total_global_mem = 0;
  int64_t compute_major = 0, compute_minor = 0;
  std::optional<int64_t> max_threads_per_block, max_threads_per_multiprocessor, regs_per_block,
      warp_size, shared_mem_per_block;
  int64_t num_sms = 0;
};

// The args object of an event, built key by key in the order of the calls.
class KinetoArgs {
 public:
  KinetoArgs& Int(const char* key, int64_t value);
  KinetoArgs& Str(const char* key, const std::string& value);
  // A number with six decimals ("%f", as std::to_string(double) writes it).
  KinetoArgs& Fixed(const char* key, double value);
  KinetoArgs& Ints(const char* key, std::initializer_list<int64_t> values);  // [a, b, c]
  bool empty() const { return text_.empty(); }
  const std::string& text() const { return text_; }  // the members, without braces

 private:
  void Key(const char* key);
  std::string text_;
};

// Streams one Kineto document into a string. Call order: BeginDocument, Device*,
// DistributedInfo (optional), then events (Metadata, Complete, Instant, FlowStart, FlowFinish) in
// any order, then EndDocument; Take() returns the text. Times are nanoseconds, written as exact
// microseconds (MicrosText).
class KinetoWriter {
 public:
  // How the deviceProperties list is laid out: the simulator's one device inline ("[{...}]"),
  // the copies of real traces one device per line. Either way the same parsed content; kept so
  // that both writers' bytes (and `ttap stats`'s json_bytes) stay what they were.
  enum class DeviceList { kInline, kOnePerLine };

  void Reserve(size_t bytes) { s_.reserve(bytes); }
  void BeginDocument(DeviceList layout = DeviceList::kOnePerLine);
  void Device(const KinetoDevice& d);
  void DistributedInfo(const std::string& backend, int64_t rank, int64_t world_size);
  // A process_name / thread_name (|what|) metadata event; without |ts_ns| its ts is a plain 0.
  void Metadata(const char* what, const KinetoId& pid, const KinetoId& tid, const std::string& name,
                std::optional<int64_t> ts_ns = std::nullopt);
  // A complete ("X") event; the args object is left out when |args| is empty.
  void Complete(const std::string& cat, const std::string& name, const KinetoId& pid,
                const KinetoId& tid, int64_t ts_ns, int64_t dur_ns, const KinetoArgs& args);
  // A thread-scoped instant ("i", "s": "t") event.
  void Instant(const std::string& cat, const std::string& name, const KinetoId& pid,
               const KinetoId& tid, int64_t ts_ns, const KinetoArgs& args);
  // The two ends of an ac2g flow (launch call -> GPU activity), |id| its correlation; the finish
  // binds to the enclosing slice ("bp": "e"). Keys: ph, cat, name, pid, tid, ts as every event,
  // then id.
  void FlowStart(int64_t id, const KinetoId& pid, const KinetoId& tid, int64_t ts_ns);
  void FlowFinish(int64_t id, const KinetoId& pid, const KinetoId& tid, int64_t ts_ns);
  // Closes traceEvents; |trace_name|, when not empty, is written as traceName.
  void EndDocument(const std::string& trace_name = std::string());
  std::string Take() { return std::move(s_); }

 private:
  enum class Part { kNone, kDevices, kHead, kEvents, kDone };
  void CloseDevices();
  void NextEvent();  // opens traceEvents or separates from the previous event
  void Common(const std::string& cat, const std::string& name, const KinetoId& pid,
              const KinetoId& tid, int64_t ts_ns);
  void Args(const KinetoArgs& args);
  void Flow(char ph, int64_t id, const KinetoId& pid, const KinetoId& tid, int64_t ts_ns);

  std::string s_;
  Part part_ = Part::kNone;
  DeviceList layout_ = DeviceList::kOnePerLine;
  bool any_device_ = false;
  size_t events_ = 0;
};

}  // namespace ttap
