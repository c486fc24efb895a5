// VS Code client for the pipec language server: starts `pipec lsp` and talks LSP over its stdio.
// Install vscode-languageclient with `npm install` in this folder before packaging (see docs/editors.md).
'use strict';

const vscode = require('vscode');
const { LanguageClient, TransportKind } = require('vscode-languageclient/node');

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration('pipec');
  const command = config.get('path', 'pipec');
  const args = ['lsp', ...config.get('extraArgs', [])];

  const serverOptions = {
    run: { command, args, transport: TransportKind.stdio },
    debug: { command, args, transport: TransportKind.stdio },
  };
  const clientOptions = {
    documentSelector: [{ scheme: 'file', language: 'pipe' }, { scheme: 'untitled', language: 'pipe' }],
    synchronize: {
      fileEvents: vscode.workspace.createFileSystemWatcher('**/*.pipe'),
    },
  };

  client = new LanguageClient('pipec', 'pipec language server', serverOptions, clientOptions);
  context.subscriptions.push({ dispose: () => (client ? client.stop() : undefined) });
  client.start().catch((err) => {
    vscode.window.showErrorMessage(
      `Could not start the pipec language server (\`${command} lsp\`): ${err.message || err}. ` +
        'Set "pipec.path" to the pipec executable.');
  });

  context.subscriptions.push(
    vscode.commands.registerCommand('pipec.restartServer', async () => {
      if (client) {
        await client.restart();
      }
    }));
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
