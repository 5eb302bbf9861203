import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { runChild } from './processes.js';
import { waitUntil } from './virtual-clock.js';

const fixture = new URL('./fixtures/child.ts', import.meta.url);

type Message = { type: string; [key: string]: unknown };
const ofType = (type: string) => (m: unknown) => (m as Message).type === type;

/** The process state letter from /proc (R, S, T for stopped, ...). */
function procState(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.charAt(stat.lastIndexOf(')') + 2);
}

function isRunning(pid: number): boolean {
  try {
    return !'ZX'.includes(procState(pid));
  } catch {
    return false;
  }
}

describe('runChild', () => {
  it('runs a .ts file from sources with args and env, reads lines and JSON messages, sees the exit code', async () => {
    const child = runChild(fixture, { args: ['--mode', 'a'], env: { FIXTURE_VALUE: 'v1' } });
    const ready = await child.nextMessage<Message>(ofType('ready'));
    assert.deepEqual(ready, { type: 'ready', pid: child.pid, args: ['--mode', 'a'], env: 'v1' });
    assert.equal(await child.nextLine((l) => l.startsWith('plain')), 'plain line, not JSON');
    child.send({ ping: 1 });
    child.send({ ping: 2 });
    assert.deepEqual(await child.nextMessage(), { type: 'pong', ping: 1 });
    assert.deepEqual(await child.nextMessage((m) => (m as Message).ping === 2), { type: 'pong', ping: 2 });
    child.send({ exit: 3 });
    assert.deepEqual(await child.exited, { code: 3, signal: null });
    assert.deepEqual(child.exit, { code: 3, signal: null });
    assert.match(child.stderr, /child: started/);
    assert.equal(child.messages.length, 3);
    assert.equal(child.kill('SIGKILL'), false);
  });

  it('SIGKILL mid-way: the exit shows the signal and waiting for more output fails at once', async () => {
    const child = runChild(fixture);
    await child.nextMessage(ofType('ready'));
    child.send({ tick: true });
    await child.nextMessage((m) => ofType('tick')(m) && ((m as Message).n as number) >= 3);
    assert.equal(child.kill('SIGKILL'), true);
    assert.deepEqual(await child.exited, { code: null, signal: 'SIGKILL' });
    await assert.rejects(
      child.nextMessage(ofType('never')),
      /ended \(code null, signal SIGKILL\) before the awaited message/,
    );
  });

  it('SIGSTOP freezes the child and SIGCONT resumes it; stop() ends it gracefully with SIGTERM', async () => {
    const child = runChild(fixture);
    await child.nextMessage(ofType('ready'));
    child.kill('SIGSTOP');
    await waitUntil(() => procState(child.pid) === 'T');
    child.send({ ping: 'while stopped' });
    child.kill('SIGCONT');
    assert.deepEqual(await child.nextMessage(ofType('pong')), { type: 'pong', ping: 'while stopped' });
    child.kill('SIGSTOP');
    await waitUntil(() => procState(child.pid) === 'T');
    // stop() resumes a stopped child so it can act on SIGTERM.
    assert.deepEqual(await child.stop(), { code: 0, signal: null });
    assert.ok(child.messages.some(ofType('terminating')));
  });

  it('waits are bounded and say what the child printed', async () => {
    const child = runChild(fixture);
    await child.nextMessage(ofType('ready'));
    await assert.rejects(child.nextMessage(ofType('never'), 30), (error: Error) => {
      assert.match(error.message, /timed out after 30 ms waiting for a message from child \d+/);
      assert.match(error.message, /child: started/);
      return true;
    });
    await child.stop();
  });

  it('children of a process die when it exits', async () => {
    const parent = runChild(fixture, { args: ['--spawn-child'] });
    const { pid } = await parent.nextMessage<{ pid: number }>(ofType('grandchild'));
    await waitUntil(() => isRunning(pid));
    parent.send({ exit: 0 });
    assert.deepEqual(await parent.exited, { code: 0, signal: null });
    await waitUntil(() => !isRunning(pid));
  });

  it('kills a child that outlives its lifetime', async () => {
    // The fixture never exits on its own: whatever it managed to do by then, the lifetime ends it.
    const child = runChild(fixture, { lifetimeMs: 200 });
    assert.deepEqual(await child.exited, { code: null, signal: 'SIGKILL' });
  });
});
