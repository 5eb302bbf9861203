import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { isOrderToken, orderToken } from './order-token.js';
import { OWNER_SECRET_FILE, ownerTokenFor, ownerTokenSecret, verifyOwnerToken } from './owner-token.js';

const directory = mkdtempSync(join(tmpdir(), 'conference-owner-token-'));
after(() => rmSync(directory, { recursive: true, force: true }));

describe('the owner token secret', () => {
  test('OWNER_TOKEN_SECRET when configured', () => {
    const configured = 'x'.repeat(32);
    assert.deepEqual(
      ownerTokenSecret({ ownerTokenSecret: configured, dataDir: join(directory, 'unused') }),
      Buffer.from(configured),
    );
  });

  test('else one generated on first start, kept in the data directory (0600) and used again after a restart', () => {
    const dataDir = join(directory, 'embedded');
    const first = ownerTokenSecret({ ownerTokenSecret: undefined, dataDir });
    assert.ok(first.length >= 32);
    assert.equal(statSync(join(dataDir, OWNER_SECRET_FILE)).mode & 0o777, 0o600);
    const token = ownerTokenFor('c1', 'ABC123', 2_000, first);
    const order = orderToken('o1', first);
    // A restart reads the same secret: the owner's token and the order's still hold.
    const again = ownerTokenSecret({ ownerTokenSecret: undefined, dataDir });
    assert.deepEqual(again, first);
    assert.equal(verifyOwnerToken(token, again, 1_000)?.conferenceId, 'c1');
    assert.ok(isOrderToken('o1', order, again));
    assert.notDeepEqual(
      ownerTokenSecret({ ownerTokenSecret: undefined, dataDir: join(directory, 'other') }),
      first,
    );
  });

  test('a kept secret that is too short is refused', () => {
    const dataDir = join(directory, 'short');
    ownerTokenSecret({ ownerTokenSecret: undefined, dataDir });
    writeFileSync(join(dataDir, OWNER_SECRET_FILE), 'short');
    assert.throws(
      () => ownerTokenSecret({ ownerTokenSecret: undefined, dataDir }),
      (error: unknown) => error instanceof InvalidOptionsError && error.option === 'OWNER_TOKEN_SECRET',
    );
  });
});
