import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { randomId, uuidv7 } from './ids.js';

describe('ids', () => {
  it('uuidv7 is an RFC 9562 version 7 UUID carrying its millisecond timestamp', () => {
    const id = uuidv7(0x0123_4567_89ab);
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(id.slice(0, 13), '01234567-89ab');
  });

  it('uuidv7 sorts by time and does not repeat', () => {
    const earlier = uuidv7(1_700_000_000_000);
    const later = uuidv7(1_700_000_000_001);
    assert.ok(earlier < later);
    const seen = new Set(Array.from({ length: 20_000 }, () => uuidv7(1_700_000_000_000)));
    assert.equal(seen.size, 20_000, 'ids minted in one millisecond differ (and span pool refills)');
  });

  it('randomId gives hex of the requested size without repeats', () => {
    assert.match(randomId(), /^[0-9a-f]{16}$/);
    assert.match(randomId(3), /^[0-9a-f]{6}$/);
    assert.equal(new Set(Array.from({ length: 20_000 }, () => randomId())).size, 20_000);
  });
});
