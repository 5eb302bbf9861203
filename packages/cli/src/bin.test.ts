import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

// The bin as npm links it: plain node, no loader and no stratus-source condition of its own. Here, in the repository,
// it runs the sources (the tarball check in scripts/check-packages.ts runs it from an install, on the build).
const bin = fileURLToPath(new URL('../bin/stratus.js', import.meta.url));
const run = promisify(execFile);

describe('bin/stratus.js', () => {
  it('prints the usage for --help', async () => {
    const { stdout } = await run(process.execPath, [bin, '--help']);
    assert.match(stdout, /^Usage: stratus <command> \[options\]\n/);
  });

  it('passes the arguments on and exits with the command’s code', async () => {
    const { stdout } = await run(process.execPath, [bin, 'queues', '--backend', 'memory:']);
    assert.equal(stdout, 'No queues.\n');
    await assert.rejects(
      run(process.execPath, [bin, 'bogus']),
      (error: { code?: number; stderr?: string }) => {
        assert.equal(error.code, 2);
        assert.match(error.stderr ?? '', /^Unknown command "bogus"\n\nUsage: stratus/);
        return true;
      },
    );
  });
});
