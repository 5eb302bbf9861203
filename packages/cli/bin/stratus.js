#!/usr/bin/env node
// The `stratus` command. An installed package runs its compiled dist/. In the Stratus repository the TypeScript
// sources sit beside this file and nothing is built, so it runs them through tsx, as `npm run demo` does: in a
// child process, since the stratus-source condition and tsx must also reach the worker threads the code starts.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const source = fileURLToPath(new URL('../src/main.ts', import.meta.url));

if (existsSync(source)) {
  const child = spawn(
    process.execPath,
    ['--conditions=stratus-source', '--import', import.meta.resolve('tsx'), source, ...args],
    { stdio: 'inherit' },
  );
  // Ctrl-C reaches the child from the terminal already; SIGTERM and SIGHUP (reload, for `stratus gateway`) sent to
  // this process alone are passed on.
  const ignore = () => {};
  const forward = (signal) => child.kill(signal);
  process.on('SIGINT', ignore);
  process.on('SIGTERM', forward);
  process.on('SIGHUP', forward);
  child.on('exit', (code, signal) => {
    process.off('SIGINT', ignore);
    process.off('SIGTERM', forward);
    process.off('SIGHUP', forward);
    if (signal === null) process.exit(code ?? 1);
    process.kill(process.pid, signal);
  });
} else {
  const { runCommand } = await import('../dist/main.js');
  runCommand(args);
}
