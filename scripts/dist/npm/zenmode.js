#!/usr/bin/env node
// The `zenmode` command of the npm package: runs the binary that the
// package for this platform (an optional dependency, installed only where
// it fits) carries, passing arguments, standard streams and exit status.
'use strict';

const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');

const platformPackage = `zenmode-${process.platform}-${process.arch}`;

function binary() {
  if (process.env.ZENMODE_BINARY) return process.env.ZENMODE_BINARY;
  try {
    return require.resolve(`${platformPackage}/bin/zenmode`);
  } catch (_) {
    return null;
  }
}

const path = binary();
if (!path) {
  console.error(
    `zenmode: no binary for ${process.platform}-${process.arch}: the package ${platformPackage} is not installed ` +
      '(npm installs it beside zenmode where it exists; it is skipped with --omit=optional or on a platform without a build). ' +
      `Try: npm install ${platformPackage}`
  );
  process.exit(1);
}
try {
  // A packer may have dropped the executable bit.
  fs.accessSync(path, fs.constants.X_OK);
} catch (_) {
  try {
    fs.chmodSync(path, 0o755);
  } catch (_) {}
}

const child = spawn(path, process.argv.slice(2), { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => child.kill(signal));
}
child.on('error', (error) => {
  console.error(`zenmode: cannot start ${path}: ${error.message}`);
  process.exit(1);
});
child.on('exit', (code, signal) => {
  process.exit(signal ? 128 + (os.constants.signals[signal] || 1) : code);
});
