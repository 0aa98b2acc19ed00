// Python frame parsing; see python_frames.h.
#include "mapping/python_frames.h"

#include "analysis/model/trace_queries.h"

namespace ttap {

bool ParsePythonFrame(std::string_view text, PythonFrame* frame) {
  // Find "(digits): " scanning from the right of the path part.
  size_t close = text.find("): ");
  while (close != std::string_view::npos) {
    size_t open = text.rfind('(', close);
    if (open != std::string_view::npos && open + 1 < close) {
      std::string_view digits = text.substr(open + 1, close - open - 1);
      bool ok = !digits.empty() && digits.size() < 10;
      int line = 0;
      for (char c : digits) {
        if (!ok || c < '0' || c > '9') {
          ok = false;
          break;
        }
        line = line * 10 + (c - '0');
      }
      if (ok && open > 0) {
        frame->file = std::string(text.substr(0, open));
        frame->line = line;
        frame->function = std::string(text.substr(close + 3));
        return true;
      }
    }
    close = text.find("): ", close + 1);
  }
  return false;
}

std::vector<PythonFrame> ParseCallStack(std::string_view text) {
  std::vector<PythonFrame> frames;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t semi = text.find(';', pos);
    std::string_view part =
        text.substr(pos, semi == std::string_view::npos ? std::string_view::npos : semi - pos);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    PythonFrame f;
    if (!part.empty() && ParsePythonFrame(part, &f)) frames.push_back(std::move(f));
    if (semi == std::string_view::npos) break;
    pos = semi + 1;
  }
  return frames;
}

namespace {

// "Trainer.train_step" -> "train_step"; "" for "" and "<lambda>"-like names.
std::string LastName(std::string_view fn) {
  if (fn.empty() || fn.front() == '<') return "";
  const size_t dot = fn.rfind('.');
  return std::string(dot == std::string_view::npos ? fn : fn.substr(dot + 1));
}

}  // namespace

std::string CalleeOfFrame(const Trace& trace, size_t row, int frame_index) {
  if (frame_index < 0) return "";
  const EventTable& ev = trace.events;
  int32_t f =
      ev.kind[row] == EventKind::kPythonFunction ? static_cast<int32_t>(row) : ev.Frame(row);
  int parsed = 0;
  std::string_view inner;  // the last python event passed, built-ins included
  for (int guard = 0; f >= 0 && guard < 4096; ++guard) {
    PythonFrame pf;
    const std::string_view name = trace.Name(f);
    if (ParsePythonFrame(name, &pf)) {
      if (parsed == frame_index) return LastName(PythonCallOf(inner));
      ++parsed;
    }
    inner = name;
    f = ev.Frame(f);
  }
  if (parsed > 0) return "";
  const std::vector<PythonFrame> frames = FramesOf(trace, row);
  if (frame_index == 0 || frame_index >= static_cast<int>(frames.size())) return "";
  return LastName(frames[frame_index - 1].function);
}

std::vector<PythonFrame> FramesOf(const Trace& trace, size_t row) {
  const EventTable& ev = trace.events;
  std::vector<PythonFrame> frames;
  int32_t f =
      ev.kind[row] == EventKind::kPythonFunction ? static_cast<int32_t>(row) : ev.Frame(row);
  for (int guard = 0; f >= 0 && guard < 4096; ++guard) {
    PythonFrame pf;
    if (ParsePythonFrame(trace.Name(f), &pf)) frames.push_back(std::move(pf));
    f = ev.Frame(f);
  }
  if (!frames.empty()) return frames;
  for (int32_t r = static_cast<int32_t>(row), guard = 0; r >= 0 && guard < 4096; ++guard) {
    if (ev.CallStack(r) != kEmptyString) return ParseCallStack(trace.strings.Get(ev.CallStack(r)));
    r = ev.parent[r];
  }
  // A GPU activity: the frames of its launch.
  if (IsGpuKind(ev.kind[row]) && ev.link[row] >= 0) return FramesOf(trace, ev.link[row]);
  return frames;
}

}  // namespace ttap
