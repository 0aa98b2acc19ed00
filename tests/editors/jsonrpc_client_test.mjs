// A second real client: npm's vscode-languageserver-protocol (vscode-jsonrpc underneath) drives
// `ttap lsp` over stdio and over TCP (`--socket=PORT`, where the client listens), on a copy of
// the fixture workspace: initialize, diagnostics pushed for train.py, hover, code action,
// shutdown/exit. Usage: node jsonrpc_client_test.mjs TTAP REPO
import { spawn } from "node:child_process";
import { cpSync, mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [ttap, repo] = process.argv.slice(2);
const require = createRequire(join(repo, "editors/vscode/package.json"));
const proto = require("vscode-languageserver-protocol/node");

let passed = 0, failed = 0;
const check = (cond, what) => { if (cond) passed++; else { failed++; console.error(`FAILED: ${what}`); } };

async function session(connection, label) {
  const ws = mkdtempSync(join(tmpdir(), "ttap-jsonrpc-"));
  cpSync(join(repo, "tests/data/lsp_workspace"), ws, { recursive: true });
  const uri = `file://${ws}/train.py`;
  const diagnostics = new Promise((resolve) => {
    connection.onNotification(proto.PublishDiagnosticsNotification.type, (p) => {
      if (p.uri === uri && p.diagnostics.length > 0) resolve(p.diagnostics);
    });
  });
  connection.onRequest("client/registerCapability", () => null);
  connection.onRequest("window/workDoneProgress/create", () => null);
  connection.listen();
  const init = await connection.sendRequest(proto.InitializeRequest.type, {
    processId: process.pid, rootUri: `file://${ws}`, capabilities: { window: { workDoneProgress: true } },
    workspaceFolders: [{ uri: `file://${ws}`, name: "ws" }],
  });
  check(init.capabilities.hoverProvider === true, `${label}: initialize`);
  await connection.sendNotification(proto.InitializedNotification.type, {});
  const diags = await Promise.race([diagnostics, new Promise((r) => setTimeout(() => r(null), 30000))]);
  check(diags && diags.some((d) => d.code === "TTA001" && d.range.start.line === 11), `${label}: TTA001 on line 12`);
  const hover = await connection.sendRequest(proto.HoverRequest.type, { textDocument: { uri }, position: { line: 11, character: 2 } });
  check(hover && /TTA001/.test(hover.contents.value) && /ms/.test(hover.contents.value), `${label}: hover with numbers`);
  const actions = await connection.sendRequest(proto.CodeActionRequest.type, {
    textDocument: { uri }, range: { start: { line: 11, character: 0 }, end: { line: 11, character: 1 } }, context: { diagnostics: [] },
  });
  check(Array.isArray(actions) && actions.some((a) => a.isPreferred && a.edit), `${label}: preferred quick fix`);
  await connection.sendRequest(proto.ShutdownRequest.type);
  await connection.sendNotification(proto.ExitNotification.type);
}

// stdio
{
  const child = spawn(ttap, ["lsp", "--stdio"], { stdio: ["pipe", "pipe", "inherit"] });
  const connection = proto.createProtocolConnection(new proto.StreamMessageReader(child.stdout), new proto.StreamMessageWriter(child.stdin));
  await session(connection, "stdio");
  const code = await new Promise((r) => child.on("exit", r));
  check(code === 0, `stdio: exit code 0 after shutdown (got ${code})`);
  connection.dispose();
}
// TCP: the client listens, the server connects (vscode-languageclient's socket transport).
{
  const server = createServer();
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const port = server.address().port;
  const accepted = new Promise((r) => server.once("connection", r));
  const child = spawn(ttap, ["lsp", `--socket=${port}`], { stdio: ["ignore", "inherit", "inherit"] });
  const socket = await accepted;
  const connection = proto.createProtocolConnection(new proto.SocketMessageReader(socket), new proto.SocketMessageWriter(socket));
  await session(connection, "tcp");
  const code = await new Promise((r) => child.on("exit", r));
  check(code === 0, `tcp: exit code 0 after shutdown (got ${code})`);
  connection.dispose();
  socket.destroy();
  server.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
