// The session's documents (see session.h): the buffers the editor has open, edited as typed
// (incremental re-parses; the findings' lines move with the edits, apart from the snapshot), and
// SourceFor, which the features read a file through (the buffer, or the file on disk).
#include "server/lsp/session.h"

namespace ttap::lsp {

void Session::OnDidOpen(const proto::DidOpenTextDocumentParams& params) {
  const proto::TextDocumentItem& td = params.textDocument;
  Document d;
  d.path = UriToPath(td.uri);
  d.version = td.version.value_or(0);
  d.text = td.text;
  d.lone_cr = HasLoneCarriageReturn(d.text);
  {
    std::lock_guard<std::mutex> lock(docs_mu_);
    docs_[td.uri] = std::move(d);
  }
  QueuePublish(td.uri);
}

void Session::OnDidChange(const proto::DidChangeTextDocumentParams& params) {
  const proto::VersionedTextDocumentIdentifier& td = params.textDocument;
  std::unique_lock<std::mutex> docs_lock(docs_mu_);
  auto it = docs_.find(td.uri);
  if (it == docs_.end()) return;
  Document& d = it->second;
  for (const proto::TextDocumentContentChangeEvent& change : params.contentChanges) {
    const std::string& text = change.text;
    if (!change.range) {
      d.text = text;
      d.parsed.reset();  // parsed afresh
      d.edits_since_parse.clear();
      d.hint = LineHint{};
      d.lone_cr = HasLoneCarriageReturn(d.text);
      continue;
    }
    SourcePosition a = change.range->start.ToSource();
    SourcePosition b = change.range->end.ToSource();
    if (b.line < a.line || (b.line == a.line && b.character < a.character)) b = a;
    uint32_t ba, bb;
    if (!d.lone_cr) {
      // From the previous edit's line: typing costs the lines in between, not the buffer.
      TSPoint pa, pb;
      ba = ByteOffsetFrom(d.text, &d.hint, a, caps_.encoding, &pa);
      const LineHint at_a = d.hint;
      bb = std::max(ba, ByteOffsetFrom(d.text, &d.hint, b, caps_.encoding, &pb));
      if (bb == ba) pb = pa;
      if (d.parsed) d.edits_since_parse.push_back(DescribeEditAt(ba, bb, pa, pb, text));
      d.hint = at_a;  // the edit's own line starts where it did
    } else {
      ba = ByteOffsetInText(d.text, a, caps_.encoding);
      bb = std::max(ba, ByteOffsetInText(d.text, b, caps_.encoding));
      if (d.parsed) d.edits_since_parse.push_back(DescribeEdit(d.text, ba, bb, text));
    }
    d.text.replace(ba, bb - ba, text);
    if (!d.lone_cr && text.find('\r') != std::string::npos) {
      d.lone_cr = HasLoneCarriageReturn(d.text);  // a '\r' typed, or one now split from its '\n'
    }
    // Findings below the edit move with their lines.
    int added = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    int delta = added - (b.line - a.line);
    if (delta != 0) {
      auto locked = scheduler_.LockState();
      const std::vector<Placed>* analysed = nullptr;
      if (locked->snapshot) {
        auto f = locked->snapshot->by_file.find(d.path);
        if (f != locked->snapshot->by_file.end()) analysed = &f->second;
      }
      if (analysed) {
        std::vector<int>& lines = locked->moved_lines[d.path];
        if (lines.size() != analysed->size()) {
          lines.clear();
          for (const Placed& p : *analysed) lines.push_back(p.line);
        }
        for (int& line : lines) {
          if (line - 1 > b.line || (line - 1 == b.line && b.character == 0 && a.line < b.line))
            line += delta;
        }
      }
    }
  }
  d.version = td.version.value_or(d.version + 1);
  docs_lock.unlock();
  QueuePublish(td.uri, /*after_edit=*/true);
}

void Session::OnDidClose(const proto::DidCloseTextDocumentParams& params) {
  std::lock_guard<std::mutex> lock(docs_mu_);
  auto it = docs_.find(params.textDocument.uri);
  if (it == docs_.end()) return;
  sources_.Forget(it->second.path);
  docs_.erase(it);
}

std::shared_ptr<const PythonSource> Session::SourceFor(const std::string& path, int64_t* version,
                                                       int exact_through, int* edited_from) {
  if (edited_from) *edited_from = INT_MAX;
  // The buffer's text, its last parse and the edits since, copied out so the reader thread can
  // go on applying edits while this parses.
  std::shared_ptr<const PythonSource> base;
  std::string text;
  std::vector<BufferEdit> edits;
  std::string uri;
  int64_t copied_version = 0;
  {
    std::lock_guard<std::mutex> lock(docs_mu_);
    for (const auto& [u, d] : docs_) {
      if (d.path != path) continue;
      if (version) *version = d.version;
      if (d.parsed && d.edits_since_parse.empty()) return d.parsed;
      if (d.parsed && exact_through >= 0) {
        int first = INT_MAX;
        for (const BufferEdit& e : d.edits_since_parse) {
          first = std::min(first, static_cast<int>(e.start_point.row));
        }
        if (first > exact_through) {
          if (edited_from) *edited_from = first;
          return d.parsed;
        }
      }
      uri = u;
      base = d.parsed;
      text = d.text;
      edits = d.edits_since_parse;
      copied_version = d.version;
      break;
    }
  }
  if (uri.empty()) {
    if (version) *version = -1;
    return sources_.GetFile(path);
  }
  auto parsed = base ? PythonSource::Reparse(*base, std::move(text), edits)
                     : PythonSource::Parse(std::move(text));
  std::lock_guard<std::mutex> lock(docs_mu_);
  auto it = docs_.find(uri);
  if (it == docs_.end()) return parsed;
  Document& d = it->second;
  // Kept as the next parse's base when the buffer did not change under it in a way the queued
  // edits do not describe; edits that arrived meanwhile stay queued for the next parse.
  if (base && d.parsed == base && d.edits_since_parse.size() >= edits.size()) {
    d.parsed = parsed;
    d.edits_since_parse.erase(d.edits_since_parse.begin(),
                              d.edits_since_parse.begin() + edits.size());
  } else if (!base && !d.parsed && d.version == copied_version) {
    d.parsed = parsed;
    d.edits_since_parse.clear();
  }
  return parsed;
}

}  // namespace ttap::lsp
