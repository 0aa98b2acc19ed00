// TorchTraceAP for VS Code: starts `ttap lsp` over stdio with vscode-languageclient, forwards
// the `ttap.*` settings, and shows the server's `ttap/status` in the status bar.
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions, TransportKind } from "vscode-languageclient/node";

let client: LanguageClient | undefined;

function serverPath(context: vscode.ExtensionContext): string {
  const configured = vscode.workspace.getConfiguration("ttap").get<string>("serverPath", "");
  if (configured) return configured;
  const bundled = context.asAbsolutePath(path.join("bin", "linux-x64", "ttap"));
  if (process.platform === "linux" && process.arch === "x64" && fs.existsSync(bundled)) return bundled;
  return "ttap";
}

function settings(): object {
  const c = vscode.workspace.getConfiguration("ttap");
  return {
    traceGlobs: c.get("traceGlobs"),
    rank: c.get("rank"),
    windows: c.get("windows"),
    thresholds: c.get("thresholds"),
    pathMaps: c.get("pathMaps"),
    userFramesInclude: c.get("userFramesInclude"),
    userFramesExclude: c.get("userFramesExclude"),
    llm: { baseUrl: c.get("llm.baseUrl"), model: c.get("llm.model"), apiKeyEnv: c.get("llm.apiKeyEnv") },
    model: {
      enabled: c.get("model.enabled"),
      path: c.get("model.path"),
      device: c.get("model.device"),
      threshold: c.get("model.threshold"),
    },
  };
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const command = serverPath(context);
  const serverOptions: ServerOptions = {
    run: { command, args: ["lsp"], transport: TransportKind.stdio },
    debug: { command, args: ["lsp"], transport: TransportKind.stdio },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file", language: "python" }],
    initializationOptions: settings(),
    synchronize: { configurationSection: "ttap" },
  };
  client = new LanguageClient("ttap", "TorchTraceAP", serverOptions, clientOptions);

  const status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  status.text = "$(pulse) ttap";
  status.command = "ttap.showTraceSummary";
  status.show();
  context.subscriptions.push(status);

  await client.start();
  client.onNotification("ttap/status", (p: { state: string; trace?: string; rank?: number; findings?: number }) => {
    const findings = p.findings !== undefined ? ` · ${p.findings} findings` : "";
    status.text = `$(pulse) ttap: ${p.state}${findings}`;
    status.tooltip = p.trace ? `${p.trace} (rank ${p.rank ?? 0})` : "no trace yet";
  });
  context.subscriptions.push(
    vscode.commands.registerCommand("ttap.rescan", () =>
      client?.sendRequest("workspace/executeCommand", { command: "ttap.rescan", arguments: [] })),
    vscode.commands.registerCommand("ttap.showTraceSummary", async () => {
      const r = (await client?.sendRequest("workspace/executeCommand", { command: "ttap.showTraceSummary", arguments: [] })) as { markdown?: string } | undefined;
      if (r?.markdown) {
        const doc = await vscode.workspace.openTextDocument({ content: r.markdown, language: "markdown" });
        await vscode.window.showTextDocument(doc, { preview: true });
      }
    }),
  );
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
