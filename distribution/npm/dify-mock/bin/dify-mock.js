#!/usr/bin/env node
'use strict';
// `npx dify-mock …`: runs the prebuilt binary with the same arguments, passes
// signals on (so Ctrl-C and `kill` reach the server, which then ends its
// streams cleanly) and exits with its exit code.
const { spawn } = require('node:child_process');
const { binaryPath } = require('../index.js');

let exe;
try {
  exe = binaryPath();
} catch (err) {
  console.error(err.message);
  process.exit(1);
}
const child = spawn(exe, process.argv.slice(2), { stdio: 'inherit', windowsHide: true });
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => child.kill(sig));
}
child.on('error', (err) => {
  console.error(`dify-mock: cannot run ${exe}: ${err.message}`);
  process.exit(1);
});
child.on('exit', (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
