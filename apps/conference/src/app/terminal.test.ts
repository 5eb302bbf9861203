import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatLogLine, terminalDestination, whereToGo } from './terminal.js';

describe('terminal output', () => {
  it('formats a pino line as time, level, message and fields', () => {
    const line = JSON.stringify({
      level: 30,
      time: Date.UTC(2026, 10, 27, 9, 5, 7),
      pid: 1,
      hostname: 'h',
      msg: 'conference system ready',
      role: 'all',
      backgroundThread: true,
    });
    assert.equal(
      formatLogLine(line),
      '09:05:07 info  conference system ready role=all backgroundThread=true',
    );
  });

  it('passes a line that is not JSON through unchanged', () => {
    assert.equal(formatLogLine('plain text'), 'plain text');
  });

  it('writes each record of a chunk on its own line', () => {
    const written: string[] = [];
    const destination = terminalDestination({ write: (text) => written.push(text) });
    destination.write(
      `${JSON.stringify({ level: 40, time: 0, msg: 'a' })}\n${JSON.stringify({ level: 50, time: 0, msg: 'b' })}\n`,
    );
    assert.deepEqual(written, ['00:00:00 warn  a\n', '00:00:00 error b\n']);
  });

  it('says where the sites, the API, health and metrics are', () => {
    const text = whereToGo('0.0.0.0', 3000);
    for (const path of ['/', '/manage', '/api', '/api/openapi.json', '/health/ready', '/metrics'])
      assert.ok(text.includes(`http://localhost:3000${path}`), path);
    assert.ok(whereToGo('::1', 8080).includes('http://[::1]:8080/manage'));
  });
});
