// Ids: UUIDv7 for records (they sort by creation time, which keeps B-tree indexes compact) and short random hex
// ids for lock tokens and instance names.
// Prints:
//   a UUIDv7 has 36 characters and version 7
//   ids made later sort later: true
//   made at 2026-01-01T00:00:00.000Z, it starts with 019b76da-a800-7
//   randomId() has 16 hex characters, randomId(4) has 8
import { randomId, uuidv7 } from '@stratus/core';

const id = uuidv7();
console.log(`a UUIDv7 has ${id.length} characters and version ${id[14]}`);

const earlier = uuidv7(Date.UTC(2026, 0, 1));
const later = uuidv7(Date.UTC(2026, 0, 1) + 1);
console.log(`ids made later sort later: ${earlier < later}`);
console.log(`made at 2026-01-01T00:00:00.000Z, it starts with ${earlier.slice(0, 15)}`);

console.log(`randomId() has ${randomId().length} hex characters, randomId(4) has ${randomId(4).length}`);
