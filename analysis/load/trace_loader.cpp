// The loading pipeline: reader thread (ByteSource + JsonSplitter) -> bounded queue -> parse
// workers (EventParser) -> BuildTrace. See trace_loader.h.
#include "analysis/load/trace_loader.h"

#include <dirent.h>
#include <simdjson.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>

#include "analysis/base/parallel.h"
#include "analysis/load/byte_source.h"
#include "analysis/load/event_parser.h"
#include "analysis/load/json_splitter.h"
#include "analysis/load/trace_builder.h"

namespace ttap {

namespace {

constexpr size_t kPadding = simdjson::SIMDJSON_PADDING + 16;
constexpr size_t kMaxElementBytes = size_t{256} << 20;

struct Buffer {
  std::unique_ptr<char[]> data;
  size_t capacity = 0;  // usable bytes (padding excluded)
  void Allocate(size_t cap) {
    data.reset(new char[cap + kPadding]);
    std::memset(data.get() + cap, 0, kPadding);
    capacity = cap;
  }
};

// Recycles chunk buffers between the reader and the workers: fresh allocations would be fresh
// pages (page faults and zeroing for every byte of the trace).
class BufferPool {
 public:
  explicit BufferPool(size_t keep) : keep_(keep) {}
  Buffer Acquire(size_t min_capacity) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = 0; i < free_.size(); ++i) {
        if (free_[i].capacity >= min_capacity) {
          Buffer b = std::move(free_[i]);
          free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
          return b;
        }
      }
    }
    Buffer b;
    b.Allocate(min_capacity);
    return b;
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    free_.clear();
  }
  void Release(Buffer&& b) {
    std::lock_guard<std::mutex> lock(mu_);
    if (b.data && free_.size() < keep_) free_.push_back(std::move(b));
  }

 private:
  std::mutex mu_;
  std::vector<Buffer> free_;
  size_t keep_;
};

struct Batch {
  size_t index = 0;
  Buffer buffer;
  size_t length = 0;
  uint64_t base = 0;
  std::vector<JsonSplitter::Range> ranges;
};

// A bounded multi-producer multi-consumer queue of batches.
class BatchQueue {
 public:
  explicit BatchQueue(size_t limit) : limit_(limit) {}
  void Push(Batch b) {
    std::unique_lock<std::mutex> lock(mu_);
    not_full_.wait(lock, [&] { return queue_.size() < limit_; });
    queue_.push_back(std::move(b));
    not_empty_.notify_one();
  }
  bool Pop(Batch* b) {
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait(lock, [&] { return !queue_.empty() || closed_; });
    if (queue_.empty()) return false;
    *b = std::move(queue_.front());
    queue_.pop_front();
    not_full_.notify_one();
    return true;
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<Batch> queue_;
  size_t limit_;
  bool closed_ = false;
};

StatusOr<std::unique_ptr<Trace>> LoadFromSource(ByteSource* src, const std::string& name,
                                                const LoadOptions& options) {
  int threads = options.threads > 0 ? options.threads : static_cast<int>(HardwareThreads());
  const size_t chunk = std::max<size_t>(options.chunk_bytes, 4096);

  JsonSplitter splitter({"deviceProperties", "distributedInfo", "baseTimeNanoseconds",
                         "schemaVersion", "displayTimeUnit"});
  TopLevelValues top;
  std::vector<PartialTable> parts;
  std::mutex parts_mu;

  auto store_part = [&](size_t index, PartialTable&& part) {
    std::lock_guard<std::mutex> lock(parts_mu);
    if (parts.size() <= index) parts.resize(index + 1);
    parts[index] = std::move(part);
  };
  BufferPool pool(static_cast<size_t>(threads) + 1);
  auto parse_batch = [&](EventParser* parser, Batch* b) {
    PartialTable part;
    parser->ParseBatch(b->buffer.data.get(), b->buffer.capacity + kPadding, b->ranges, b->base,
                       &part);
    pool.Release(std::move(b->buffer));
    SortPartial(&part);
    store_part(b->index, std::move(part));
  };

  BatchQueue queue(1);  // each worker holds one batch; one more waits
  WorkerGroup workers;
  // However this function leaves, the queue is closed before the workers are joined (destroyed
  // in reverse order): a worker waiting for a batch would otherwise never return.
  struct CloseQueue {
    BatchQueue* queue;
    ~CloseQueue() { queue->Close(); }
  } close_queue{&queue};
  std::unique_ptr<EventParser> inline_parser;
  if (threads > 1) {
    workers.Start(static_cast<size_t>(threads), [&](size_t) {
      EventParser parser;
      Batch b;
      while (queue.Pop(&b)) parse_batch(&parser, &b);
    });
  } else {
    inline_parser = std::make_unique<EventParser>();
  }

  const auto load_start = std::chrono::steady_clock::now();
  Status error;
  uint64_t json_bytes = 0;
  size_t batch_index = 0;
  // A buffer holds the unfinished tail of the previous chunk plus one new chunk.
  const size_t buffer_size = chunk + chunk / 4;
  Buffer buf = pool.Acquire(buffer_size);
  size_t len = 0;
  std::vector<JsonSplitter::Range> ranges;
  std::vector<JsonSplitter::TopLevelValue> values;
  while (true) {
    if (options.cancel.cancelled()) {
      error = Status::Error(name + ": cancelled");
      break;
    }
    if (buf.capacity - len < chunk) {
      if (len > kMaxElementBytes) {
        error = Status::Error(name + ": an event larger than 256 MiB at byte " +
                              std::to_string(splitter.base()));
        break;
      }
      Buffer bigger;
      bigger.Allocate(len + chunk + len / 2);
      std::memcpy(bigger.data.get(), buf.data.get(), len);
      buf = std::move(bigger);
    }
    auto n = src->Read(buf.data.get() + len, chunk);
    if (!n.ok()) {
      error = n.status();
      break;
    }
    bool at_eof = *n == 0;
    len += *n;
    json_bytes += *n;
    ranges.clear();
    values.clear();
    auto result = splitter.Scan(buf.data.get(), len, at_eof, &ranges, &values);
    for (auto& v : values) {
      top[v.key].assign(buf.data.get() + v.range.begin, v.range.end - v.range.begin);
    }
    if (result == JsonSplitter::Result::kError) {
      error = Status::Error(name + ": " + splitter.error());
      break;
    }
    size_t keep = splitter.KeepFrom();
    if (!ranges.empty()) {
      Batch b;
      b.index = batch_index++;
      b.length = len;
      b.base = splitter.base();
      b.ranges = ranges;
      Buffer next = pool.Acquire(std::max(buffer_size, (len - keep) + chunk));
      std::memcpy(next.data.get(), buf.data.get() + keep, len - keep);
      b.buffer = std::move(buf);
      buf = std::move(next);
      if (threads > 1) {
        queue.Push(std::move(b));
      } else {
        parse_batch(inline_parser.get(), &b);
      }
    } else if (keep > 0) {
      std::memmove(buf.data.get(), buf.data.get() + keep, len - keep);
    }
    len -= keep;
    splitter.Rebase(keep);
    if (at_eof) break;
  }
  queue.Close();
  workers.Join();
  // The chunk buffers are done with: give their memory back before the build peaks.
  buf = Buffer();
  pool.Clear();
  std::vector<JsonSplitter::Range>().swap(ranges);
  if (!error.ok()) return error;
  if (!splitter.saw_trace_events()) {
    return Status::Error(name + ": not a trace: no \"traceEvents\" array in the top-level object");
  }

  auto trace = std::make_unique<Trace>();
  trace->load_phases.emplace_back(
      "read+split+parse",
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start)
          .count());
  trace->path = name;
  trace->bare_array = splitter.bare_array();
  Status built = BuildTrace(&parts, top, options.window_count, threads, trace.get());
  if (!built.ok()) return Status::Error(name + ": " + built.message());
  if (!options.keep_flows) std::vector<FlowEvent>().swap(trace->flows);  // they served the links
  trace->events.ReleaseDefaultColumns();
  if (!options.keep_rewrite_columns) {
    std::vector<StringId>().swap(trace->events.cat);
    std::vector<int64_t>().swap(trace->events.external_id);
    std::vector<int32_t>().swap(trace->events.python_parent);  // the frames are built
  }
  trace->stats.json_bytes = json_bytes;
  if (trace->rank_source.empty()) {
    int r = RankFromFileName(name);
    trace->rank = r >= 0 ? r : 0;
    trace->rank_source = r >= 0 ? "file name" : "default";
  }
  return trace;
}

}  // namespace

StatusOr<std::unique_ptr<Trace>> LoadTrace(const std::string& path, const LoadOptions& options) {
  TTAP_ASSIGN_OR_RETURN(auto src, ByteSource::Open(path));
  return LoadFromSource(src.get(), path, options);
}

StatusOr<std::unique_ptr<Trace>> LoadTraceFromMemory(std::string_view data, const std::string& name,
                                                     const LoadOptions& options) {
  TTAP_ASSIGN_OR_RETURN(auto src, ByteSource::OpenMemory(data, name));
  return LoadFromSource(src.get(), name, options);
}

std::vector<std::string> ListTraceFiles(const std::string& dir) {
  std::vector<std::string> files;
  DIR* d = opendir(dir.c_str());
  if (!d) return files;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    auto ends = [&](const char* suf) {
      size_t l = std::strlen(suf);
      return n.size() >= l && n.compare(n.size() - l, l, suf) == 0;
    };
    if (!(ends(".json") || ends(".json.gz"))) continue;
    std::string full = dir + (dir.empty() || dir.back() == '/' ? "" : "/") + n;
    struct stat st;
    if (stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode)) files.push_back(full);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  return files;
}

TraceRankHint PeekTraceRank(const std::string& path, size_t max_bytes) {
  TraceRankHint hint;
  auto src = ByteSource::Open(path);
  if (!src.ok()) return hint;
  std::string head(max_bytes, '\0');
  size_t got = 0;
  while (got < max_bytes) {
    auto n = (*src)->Read(head.data() + got, max_bytes - got);
    if (!n.ok() || *n == 0) break;
    got += *n;
  }
  head.resize(got);
  const size_t info = head.find("\"distributedInfo\"");
  if (info == std::string::npos) return hint;
  const size_t end = head.find('}', info);
  const std::string_view body =
      std::string_view(head).substr(info, end == std::string::npos ? 512 : end - info);
  auto number_after = [&](std::string_view key) {
    const size_t k = body.find(key);
    if (k == std::string_view::npos) return -1;
    size_t p = body.find(':', k + key.size());
    if (p == std::string_view::npos) return -1;
    ++p;
    while (p < body.size() && (body[p] == ' ' || body[p] == '\n' || body[p] == '\t')) ++p;
    int v = 0, digits = 0;
    while (p < body.size() && body[p] >= '0' && body[p] <= '9' && digits < 9) {
      v = v * 10 + (body[p++] - '0');
      ++digits;
    }
    return digits > 0 ? v : -1;
  };
  hint.rank = number_after("\"rank\"");
  hint.world_size = number_after("\"world_size\"");
  return hint;
}

int RankFromFileName(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  for (size_t pos = base.find("rank"); pos != std::string_view::npos;
       pos = base.find("rank", pos + 1)) {
    size_t i = pos + 4;
    if (i < base.size() && (base[i] == '-' || base[i] == '_')) ++i;
    if (i < base.size() && base[i] >= '0' && base[i] <= '9') {
      int r = 0;
      while (i < base.size() && base[i] >= '0' && base[i] <= '9' && r < 100000000) {
        r = r * 10 + (base[i++] - '0');
      }
      return r;
    }
  }
  return -1;
}

}  // namespace ttap
