// TorchTraceAP for VS Code: starts `ttap lsp` over stdio with vscode-languageclient, forwards
// the `ttap.*` settings, and shows the server's `ttap/status` in the status bar. The commands
// are registered before the server starts, so a missing or failing binary still leaves them
// answering (with what is wrong) and a status bar that says so; the server's own command ids
// (ttap.server.*) differ from these, since the client registers every id the server lists.
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions, TransportKind } from "vscode-languageclient/node";

let client: LanguageClient | undefined;
let output: vscode.OutputChannel|undefined;
let status: vscode.StatusBarItem|undefined;
let startError: string|undefined;

// The configured binary, else the bundled one (linux-x64), else `ttap` on PATH; undefined when
// none exists.
function serverPath(context: vscode.ExtensionContext): string|undefined {
  const configured = vscode.workspace.getConfiguration("ttap").get<string>("serverPath", "");
  if (configured) return fs.existsSync(configured) ? configured : undefined;
  const bundled = context.asAbsolutePath(path.join("bin", "linux-x64", "ttap"));
  if (process.platform === "linux" && process.arch === "x64" && fs.existsSync(bundled)) return bundled;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, 'ttap');
    if (dir && fs.existsSync(candidate)) return candidate;
  }
  return undefined;
}

function settings(): object {
  const c = vscode.workspace.getConfiguration("ttap");
  return {
    traceGlobs: c.get('traceGlobs'),
    rank: c.get('rank'),
    windows: c.get('windows'),
    thresholds: c.get('thresholds'),
    pathMaps: c.get('pathMaps'),
    userFramesInclude: c.get('userFramesInclude'),
    userFramesExclude: c.get('userFramesExclude'),
    llm: {
      enabled: c.get('llm.enabled'),
      baseUrl: c.get('llm.baseUrl'),
      model: c.get('llm.model'),
      apiKeyEnv: c.get('llm.apiKeyEnv'),
      authHeader: c.get('llm.authHeader'),
      maxDrafts: c.get('llm.maxDrafts'),
      timeoutSeconds: c.get('llm.timeoutSeconds'),
    },
    model: {
      enabled: c.get('model.enabled'),
      path: c.get('model.path'),
      device: c.get('model.device'),
      threshold: c.get('model.threshold'),
    },
  };
}

function showStatus(text: string, tooltip: string, error = false): void {
  if (!status) return;
  status.text = text;
  status.tooltip = tooltip;
  status.backgroundColor =
      error ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
}

async function startServer(context: vscode.ExtensionContext): Promise<void> {
  const command = serverPath(context);
  if (!command) {
    const configured = vscode.workspace.getConfiguration('ttap').get<string>('serverPath', '');
    startError = configured ?
        `ttap.serverPath names ${configured}, which does not exist.` :
        'No ttap binary: none is bundled for this platform and none is on PATH. Build it (scripts/build.sh) and set ttap.serverPath.';
    showStatus('$(error) ttap: no server', startError, true);
    const choice =
        await vscode.window.showErrorMessage(`TorchTraceAP: ${startError}`, 'Open Settings');
    if (choice === 'Open Settings') await openServerPathSetting();
    return;
  }
  const serverOptions: ServerOptions = {
    run: { command, args: ["lsp"], transport: TransportKind.stdio },
    debug: { command, args: ["lsp"], transport: TransportKind.stdio },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{scheme: 'file', language: 'python'}],
    initializationOptions: settings(),
    synchronize: {configurationSection: 'ttap'},
    outputChannel: output,
  };
  client = new LanguageClient("ttap", "TorchTraceAP", serverOptions, clientOptions);
  showStatus('$(sync~spin) ttap: starting', command);
  try {
    await client.start();
  } catch (e) {
    startError = `${command} did not start: ${e instanceof Error ? e.message : String(e)}`;
    showStatus('$(error) ttap: server failed', startError, true);
    output?.appendLine(startError);
    client = undefined;
    return;
  }
  startError = undefined;
  showStatus('$(pulse) ttap', command);
  client.onNotification(
      'ttap/status',
      (p: {
        state: string; trace?: string; rank?: number; findings?: number; findings_total?: number;
        detail?: string
      }) => {
        // `findings` is what the Problems view shows (one per code and line, info and above);
        // the tooltip says how many there are in all (hints and findings without a line too).
        const findings = p.findings !== undefined ? ` · ${p.findings} findings` : '';
        const total = p.findings_total !== undefined ?
            ` · ${p.findings_total} in all, hints and repeats on a line included` :
            '';
        showStatus(
            `$(pulse) ttap: ${p.state}${findings}`,
            p.trace ? `${p.trace} (rank ${p.rank ?? 0})${total}` : p.detail ?? 'no trace yet');
      });
}

// ttap.serverPath is machine-overridable: in a remote window (SSH, WSL, containers, code-server)
// it shows on the Remote tab only, where the User tab finds nothing.
async function openServerPathSetting(): Promise<void> {
  if (vscode.env.remoteName) {
    await vscode.commands.executeCommand(
        'workbench.action.openRemoteSettings', {query: 'ttap.serverPath'});
  } else {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'ttap.serverPath');
  }
}

async function stopServer(): Promise<void> {
  const c = client;
  client = undefined;
  if (!c) return;
  try {
    await c.stop();
  } catch (e) {
    output?.appendLine(`stopping the server: ${e instanceof Error ? e.message : String(e)}`);
  }
}

// Runs a server command, or says why there is no server.
async function serverCommand(id: string): Promise<unknown> {
  if (!client) {
    void vscode.window.showErrorMessage(
        `TorchTraceAP: ${startError ?? 'the server is not running.'}`);
    return undefined;
  }
  return client.sendRequest('workspace/executeCommand', {command: id, arguments: []});
}

// The trace summary as a read-only virtual document (scheme ttap-summary), shown as a Markdown
// preview: no "Untitled-1" that asks to be saved when closed.
const SUMMARY_URI = 'ttap-summary:/trace-summary.md';
class SummaryProvider implements vscode.TextDocumentContentProvider {
  private markdown = '';
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  provideTextDocumentContent(): string {
    return this.markdown;
  }
  set(markdown: string, uri: vscode.Uri): void {
    this.markdown = markdown;
    this.changed.fire(uri);
  }
}
const summary = new SummaryProvider();

async function showSummary(markdown: string): Promise<void> {
  const uri = vscode.Uri.parse(SUMMARY_URI);
  summary.set(markdown, uri);
  try {
    await vscode.commands.executeCommand('markdown.showPreview', uri);
  } catch {
    // Without VS Code's Markdown extension: the read-only source.
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri),
                                         {preview: true});
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel('TorchTraceAP');
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  status.command = "ttap.showTraceSummary";
  status.show();
  context.subscriptions.push(
      output,
      status,
      vscode.workspace.registerTextDocumentContentProvider('ttap-summary', summary),
      vscode.commands.registerCommand('ttap.rescan', () => serverCommand('ttap.server.rescan')),
      vscode.commands.registerCommand(
          'ttap.showTraceSummary',
          async () => {
            const r = (await serverCommand('ttap.server.showTraceSummary')) as {markdown?: string} |
                undefined;
            if (r?.markdown) await showSummary(r.markdown);
          }),
      vscode.commands.registerCommand(
          'ttap.restart',
          async () => {
            await stopServer();
            await startServer(context);
          }),
      vscode.commands.registerCommand('ttap.showOutput', () => output?.show(true)),
      vscode.workspace.onDidChangeConfiguration(async (e) => {
        if (e.affectsConfiguration('ttap.serverPath')) {
          await stopServer();
          await startServer(context);
        }
      }),
  );
  await startServer(context);
}

export async function deactivate(): Promise<void> {
  await stopServer();
}
