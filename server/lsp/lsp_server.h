// LspServer: the language server session. The reader thread (Run) decodes and dispatches every
// message and never blocks: trace loading, rule analysis and the learned window scorer (opened
// once per session on a helper thread) run off the reader thread and publish
// immutable snapshots; hovers, code actions and diagnostics read the latest snapshot. Every
// request gets exactly one reply (ReplyOnce). stdout (or the socket) carries only protocol;
// logs go to stderr and window/logMessage. Called by `ttap lsp` (lsp_main.cpp) per connection.
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
};

// Runs one session on |framer| until `exit` or the end of the stream; returns the process exit
// code the LSP spec asks for (0 after shutdown, 1 otherwise).
int RunSession(Framer* framer, const ServerOptions& options);

}  // namespace ttap::lsp
