// Content-Length framing; see framer.h.
#include "server/lsp/framer.h"

#include <algorithm>
#include <cctype>

namespace ttap::lsp {

bool Framer::Fill() {
  if (pos_ > 0 && pos_ >= buffer_.size() / 2) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  char chunk[65536];
  size_t n = channel_->Read(chunk, sizeof(chunk));
  if (n == 0) return false;
  buffer_.append(chunk, n);
  return true;
}

bool Framer::ReadLine(std::string* line) {
  while (true) {
    size_t nl = buffer_.find('\n', pos_);
    if (nl != std::string::npos) {
      size_t end = nl > pos_ && buffer_[nl - 1] == '\r' ? nl - 1 : nl;
      line->assign(buffer_, pos_, end - pos_);
      pos_ = nl + 1;
      return true;
    }
    if (buffer_.size() - pos_ > 8192) {  // a header line this long is garbage: drop it
      pos_ = buffer_.size();
      line->assign("<overlong header line>");
      return true;
    }
    if (!Fill()) return false;
  }
}

Framer::ReadResult Framer::Read(std::string* body, std::string* error) {
  long long length = -1;
  bool bad = false;
  std::string why;
  std::string line;
  int lines = 0;
  while (true) {
    if (!ReadLine(&line)) return ReadResult::kEof;
    if (line.empty()) {
      if (lines == 0) continue;  // stray blank lines between messages
      break;
    }
    ++lines;
    size_t colon = line.find(':');
    if (colon == std::string::npos) {
      bad = true;
      why = "malformed header line";
      continue;
    }
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t") + 1);
    if (name == "content-length") {
      if (length >= 0) {
        bad = true;
        why = "duplicate Content-Length header";
        continue;
      }
      if (value.empty() || value.size() > 18 ||
          !std::all_of(value.begin(), value.end(),
                       [](unsigned char c) { return std::isdigit(c); })) {
        bad = true;
        why = "Content-Length is not a number";
        continue;
      }
      length = std::stoll(value);
    }
  }
  if (length < 0 && !bad) {
    bad = true;
    why = "missing Content-Length header";
  }
  if (bad && length < 0) {
    *error = why;
    return ReadResult::kBadHeader;
  }
  // Oversized: skip the body to stay in step.
  if (static_cast<size_t>(length) > max_content_) {
    size_t left = static_cast<size_t>(length);
    while (left > 0) {
      size_t avail = buffer_.size() - pos_;
      if (avail == 0 && !Fill()) return ReadResult::kEof;
      avail = buffer_.size() - pos_;
      size_t take = std::min(avail, left);
      pos_ += take;
      left -= take;
    }
    *error = "Content-Length " + std::to_string(length) + " is over the limit of " +
             std::to_string(max_content_) + " bytes";
    return ReadResult::kTooLarge;
  }
  while (buffer_.size() - pos_ < static_cast<size_t>(length)) {
    if (!Fill()) return ReadResult::kEof;  // truncated stream
  }
  body->assign(buffer_, pos_, static_cast<size_t>(length));
  pos_ += static_cast<size_t>(length);
  if (bad) {
    *error = why;
    return ReadResult::kBadHeader;
  }
  return ReadResult::kMessage;
}

bool Framer::Write(const std::string& body) {
  std::string frame = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  std::lock_guard<std::mutex> lock(write_mu_);
  return channel_->Write(frame.data(), frame.size());
}

}  // namespace ttap::lsp
