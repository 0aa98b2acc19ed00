// LspServer: the language server session. The reader thread (Run) decodes every message, applies
// document edits (cheap: the parse waits until something needs the tree, then reuses the last
// one) and honours $/cancelRequest; it never blocks. A request thread answers requests and
// notifications in arrival order (a trace summary runs on its own thread). Trace loading, rules
// and the learned window scorer run on a worker and publish immutable snapshots that hold what
// hovers, code actions, diagnostics and the summary read; the trace's events are released after
// analysis. A watch thread sleeps on inotify (dir_watcher.h) or polls. Every request gets exactly
// one reply (ReplyOnce). stdout (or the socket) carries only protocol; logs go to stderr and
// window/logMessage. The session ends at `exit`, at the end of the stream, or when the client's
// process (initialize's processId) is gone. Called by `ttap lsp` (lsp_main.cpp) per connection.
#pragma once

#include <memory>
#include <string>

#include "server/lsp/framer.h"

namespace ttap::lsp {

struct ServerOptions {
  int poll_interval_ms = 1000;  // own trace watching when the client cannot register watchers
  // Exit when the editor process (initialize's processId) is gone, as the spec asks; off under
  // --listen, where one process serves many sessions (a dead client's socket ends its session).
  bool exit_with_client_process = true;
  // --listen's token: when set, a connection's first message must be `initialize` with
  // initializationOptions.token equal to it, else the session ends (the connection closes).
  std::string token;
};

// Runs one session on |framer| until `exit` or the end of the stream; returns the process exit
// code the LSP spec asks for (0 after shutdown, 1 otherwise).
int RunSession(Framer* framer, const ServerOptions& options);

}  // namespace ttap::lsp
