// The VS Code extension as VS Code runs it, without VS Code: editors/vscode/out/extension.js is
// loaded with npm's real vscode-languageclient under a stand-in `vscode` module (the API surface
// the two use, with VS Code's rule that registering a command id twice throws), and activated on
// a copy of the fixture workspace with the real `ttap lsp`. Checks: activation succeeds (it
// used to fail: the client registered the server's command ids, which the extension registers
// too), diagnostics reach the diagnostic collection, the summary command opens a document,
// restart works, deactivate does not throw; and with a missing binary, activation still
// succeeds, the status bar says so and the commands answer with the reason.
// Usage: node vscode_extension_test.mjs TTAP REPO [EXTENSION_JS]
import { cpSync, mkdtempSync } from "node:fs";
import { createRequire } from "node:module";
import Module from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [ttap, repo, bundle] = process.argv.slice(2);  // bundle: the extension.js to load
const extDir = join(repo, "editors/vscode");
const require = createRequire(join(extDir, "package.json"));

let passed = 0, failed = 0;
const check = (cond, what) => { if (cond) passed++; else { failed++; console.error(`FAILED: ${what}`); } };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(pred, ms, what) {
  for (let t = 0; t < ms; t += 50) { if (pred()) return true; await sleep(50); }
  check(false, `timed out: ${what}`);
  return false;
}

// ---- the stand-in vscode module ----
class Disposable {
  constructor(fn) { this.fn = fn; }
  static from(...ds) { return new Disposable(() => ds.forEach((d) => d?.dispose?.())); }
  dispose() { this.fn?.(); this.fn = undefined; }
}
class EventEmitter {
  constructor() { this.listeners = new Set(); this.event = (l) => { this.listeners.add(l); return new Disposable(() => this.listeners.delete(l)); }; }
  fire(e) { for (const l of [...this.listeners]) l(e); }
  dispose() { this.listeners.clear(); }
}
class Uri {
  constructor(scheme, p) { this.scheme = scheme; this.path = p; this.fsPath = p; this.authority = ""; this.query = ""; this.fragment = ""; }
  static file(p) { return new Uri("file", p); }
  static parse(s) { return s.startsWith("file://") ? new Uri("file", decodeURIComponent(s.slice(7))) : new Uri(s.split(":")[0], s.slice(s.indexOf(":") + 1)); }
  toString() { return this.scheme === "file" ? "file://" + this.path.split("/").map(encodeURIComponent).join("/") : `${this.scheme}:${this.path}`; }
  with(c) { return new Uri(c.scheme ?? this.scheme, c.path ?? this.path); }
  toJSON() { return this.toString(); }
}
class Position { constructor(line, character) { this.line = line; this.character = character; } }
class Range {
  constructor(a, b, c, d) {
    if (typeof a === "number") { this.start = new Position(a, b); this.end = new Position(c, d); } else { this.start = a; this.end = b; }
  }
}
class Diagnostic { constructor(range, message, severity) { this.range = range; this.message = message; this.severity = severity; } }
class Location { constructor(uri, range) { this.uri = uri; this.range = range; } }
class ThemeColor { constructor(id) { this.id = id; } }
class MarkdownString { constructor(v = "") { this.value = v; } appendMarkdown(s) { this.value += s; return this; } }
class Hover { constructor(contents, range) { this.contents = contents; this.range = range; } }
class CancellationTokenSource { constructor() { this.token = { isCancellationRequested: false, onCancellationRequested: () => new Disposable() }; } cancel() { this.token.isCancellationRequested = true; } dispose() {} }

const state = { commands: new Map(), diagnostics: new Map(), opened: [], errors: [], statusText: "", config: {}, folder: "",
                executed: [], errorChoice: undefined, remoteName: undefined, providers: new Map() };
const anyFn = () => new Disposable();
// Anything the test does not model: a callable, constructible object whose members are more of it.
function loose(name) {
  const fn = function () { return loose(`${name}()`); };
  return new Proxy(fn, {
    get: (t, k) => (k === Symbol.toPrimitive ? () => 0 : k === "then" ? undefined : k === "dispose" ? () => {} : loose(`${name}.${String(k)}`)),
    construct: () => loose(`new ${name}`),
  });
}
function members(obj, name) {
  return new Proxy(obj, { get: (t, k) => (k in t ? t[k] : typeof k === "symbol" ? undefined : loose(`${name}.${k}`)) });
}
function configuration(section) {
  return {
    get: (key, dflt) => { const v = state.config[section ? `${section}.${key}` : key]; return v === undefined ? dflt : v; },
    has: () => false, inspect: () => undefined, update: async () => {},
  };
}
const vscode = members({
  version: "1.95.0",
  Disposable, EventEmitter, Uri, Position, Range, Diagnostic, Location, ThemeColor, MarkdownString, Hover, CancellationTokenSource,
  DiagnosticSeverity: { Error: 0, Warning: 1, Information: 2, Hint: 3 },
  StatusBarAlignment: { Left: 1, Right: 2 },
  ViewColumn: { Active: -1, One: 1 },
  ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
  commands: members({
    registerCommand: (id, fn) => {
      if (state.commands.has(id)) throw new Error(`command '${id}' already exists`);
      state.commands.set(id, fn);
      return new Disposable(() => state.commands.delete(id));
    },
    executeCommand: async (id, ...args) => {
      if (state.commands.has(id)) return state.commands.get(id)(...args);
      state.executed.push([id, ...args]);  // VS Code's own commands (openSettings, ...)
      return undefined;
    },
    getCommands: async () => [...state.commands.keys()],
  }, "commands"),
  window: members({
    createOutputChannel: (name) => members({ name, append() {}, appendLine() {}, replace() {}, clear() {}, show() {}, hide() {}, dispose() {} }, "output"),
    createStatusBarItem: () => {
      const item = { show() {}, hide() {}, dispose() {} };
      Object.defineProperty(item, "text", { get: () => state.statusText, set: (v) => { state.statusText = v; } });
      return item;
    },
    showErrorMessage: async (m) => { state.errors.push(m); return state.errorChoice; },
    showWarningMessage: async () => undefined,
    showInformationMessage: async () => undefined,
    showTextDocument: async (doc) => { state.opened.push(doc); return {}; },
    createTextEditorDecorationType: () => new Disposable(),
    onDidChangeActiveTextEditor: anyFn, onDidChangeVisibleTextEditors: anyFn, onDidChangeTextEditorSelection: anyFn,
    visibleTextEditors: [], activeTextEditor: undefined, tabGroups: members({ all: [], onDidChangeTabs: anyFn, onDidChangeTabGroups: anyFn }, "tabGroups"),
  }, "window"),
  workspace: members({
    getConfiguration: configuration,
    get workspaceFolders() { return [{ uri: Uri.file(state.folder), name: "ws", index: 0 }]; },
    getWorkspaceFolder: () => ({ uri: Uri.file(state.folder), name: "ws", index: 0 }),
    textDocuments: [], notebookDocuments: [],
    openTextDocument: async (o) => (o instanceof Uri && state.providers.has(o.scheme)
                                      ? { uri: o, content: state.providers.get(o.scheme).provideTextDocumentContent(o) } : o),
    registerTextDocumentContentProvider: (scheme, provider) => {
      state.providers.set(scheme, provider);
      return new Disposable(() => state.providers.delete(scheme));
    },
    onDidOpenTextDocument: anyFn, onDidCloseTextDocument: anyFn, onDidChangeTextDocument: anyFn, onDidSaveTextDocument: anyFn,
    onWillSaveTextDocument: anyFn, onDidChangeConfiguration: anyFn, onDidChangeWorkspaceFolders: anyFn,
    onDidCreateFiles: anyFn, onDidRenameFiles: anyFn, onDidDeleteFiles: anyFn, onWillCreateFiles: anyFn, onWillRenameFiles: anyFn, onWillDeleteFiles: anyFn,
    onDidOpenNotebookDocument: anyFn, onDidCloseNotebookDocument: anyFn, onDidChangeNotebookDocument: anyFn, onDidSaveNotebookDocument: anyFn,
    createFileSystemWatcher: () => ({ onDidCreate: anyFn, onDidChange: anyFn, onDidDelete: anyFn, dispose() {} }),
    isTrusted: true,
  }, "workspace"),
  languages: members({
    createDiagnosticCollection: (name) => ({
      name,
      set: (uri, diags) => { if (Array.isArray(uri)) uri.forEach(([u, d]) => state.diagnostics.set(u.toString(), d)); else state.diagnostics.set(uri.toString(), diags ?? []); },
      delete: (uri) => state.diagnostics.delete(uri.toString()),
      clear: () => state.diagnostics.clear(), forEach() {}, get: (uri) => state.diagnostics.get(uri.toString()), has: () => false, dispose() {},
    }),
    match: () => 10,
    onDidChangeDiagnostics: anyFn,
  }, "languages"),
  env: members({ appName: "stand-in", language: "en", machineId: "x", sessionId: "x", uiKind: 1, openExternal: async () => true,
                 get remoteName() { return state.remoteName; } }, "env"),
  extensions: members({ getExtension: () => undefined, all: [], onDidChange: anyFn }, "extensions"),
}, "vscode");

const originalLoad = Module._load;
Module._load = function (request, ...rest) { return request === "vscode" ? vscode : originalLoad.call(this, request, ...rest); };

function context() {
  return { subscriptions: [], asAbsolutePath: (p) => join(extDir, p), extensionPath: extDir, globalState: members({ get: () => undefined, update: async () => {} }, "globalState"), workspaceState: members({ get: () => undefined, update: async () => {} }, "workspaceState") };
}

const ws = mkdtempSync(join(tmpdir(), "ttap-vscode-"));
cpSync(join(repo, "tests/data/lsp_workspace"), ws, { recursive: true });
state.folder = ws;

// 1. The real server: activation, diagnostics, summary, restart, deactivate.
state.config = { "ttap.serverPath": ttap, "ttap.model.enabled": false };
const ext = require(bundle ?? join(extDir, "out/extension.js"));
const ctx = context();
let activated = true;
try { await ext.activate(ctx); } catch (e) { activated = false; check(false, `activate threw: ${e.message}`); }
check(activated, "activation succeeds");
for (const id of ["ttap.rescan", "ttap.showTraceSummary", "ttap.restart", "ttap.showOutput"]) check(state.commands.has(id), `command ${id} registered`);
const trainUri = Uri.file(join(ws, "train.py")).toString();
await until(() => (state.diagnostics.get(trainUri) ?? []).length > 0, 20000, "diagnostics for train.py");
const diags = state.diagnostics.get(trainUri) ?? [];
check(diags.some((d) => String(d.code?.value ?? d.code) === "TTA001"), "a TTA001 diagnostic reaches the collection");
await until(() => /ready/.test(state.statusText), 20000, "status bar says ready");
await state.commands.get("ttap.showTraceSummary")();
// A Markdown preview of a read-only virtual document (not an untitled one that asks to be saved).
const preview = state.executed.find(([id]) => id === "markdown.showPreview");
check(preview && preview[1].scheme === "ttap-summary", "the summary opens as a Markdown preview of a ttap-summary: document");
const provider = state.providers.get("ttap-summary");
check(provider && /TTA001/.test(provider.provideTextDocumentContent(preview?.[1]) ?? ""), "the summary lists TTA001");
await state.commands.get("ttap.restart")();
await until(() => /ready/.test(state.statusText), 20000, "ready again after a restart");
let deactivated = true;
try { await ext.deactivate(); } catch (e) { deactivated = false; }
check(deactivated, "deactivate does not throw");
for (const d of ctx.subscriptions) d?.dispose?.();

// 2. A missing binary: activation still succeeds and says why.
state.config = { "ttap.serverPath": join(ws, "no-such-ttap") };
state.errors = [];
const ctx2 = context();
let activated2 = true;
try { await ext.activate(ctx2); } catch (e) { activated2 = false; check(false, `activate threw without a binary: ${e.message}`); }
check(activated2, "activation without a binary succeeds");
check(/no server/.test(state.statusText), `the status bar says there is no server (${state.statusText})`);
check(state.errors.some((m) => /does not exist/.test(m)), "an error names the missing binary");
state.errors = [];
await state.commands.get("ttap.rescan")();
check(state.errors.some((m) => /does not exist/.test(m)), "a command answers with the reason");
try { await ext.deactivate(); } catch (e) { check(false, "deactivate without a server threw"); }
for (const d of ctx2.subscriptions) d?.dispose?.();

// 3. "Open Settings" on that error finds ttap.serverPath: the User tab locally, the Remote tab in
// a remote window (the setting is machine-overridable: the User tab shows nothing there).
for (const [remote, command] of [[undefined, "workbench.action.openSettings"],
                                 ["ssh-remote", "workbench.action.openRemoteSettings"]]) {
  state.remoteName = remote;
  state.errorChoice = "Open Settings";
  state.executed = [];
  const c = context();
  await ext.activate(c);
  const opened = state.executed.find(([id]) => id.startsWith("workbench.action.open"));
  check(opened && opened[0] === command, `Open Settings runs ${command} (${JSON.stringify(opened)})`);
  check(opened && JSON.stringify(opened[1]).includes("ttap.serverPath"), "with the ttap.serverPath query");
  try { await ext.deactivate(); } catch (e) { /* no server */ }
  for (const d of c.subscriptions) d?.dispose?.();
}
state.remoteName = undefined;
state.errorChoice = undefined;

console.log(`vscode extension: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
