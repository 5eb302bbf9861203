// Group commit for any backend: items submitted while a batch is in flight wait and go together in the next one,
// so N concurrent callers cost about one round trip instead of N; each caller gets its own result.
// Prints:
//   flush of 1: a
//   flush of 3: bb, ccc, dddd
//   results: 1, 2, 3, 4
import { GroupCommit } from '@stratus/sql';

// The flush writes a whole batch at once (one multi-row INSERT, one pipeline) and answers per item.
const lengths = new GroupCommit<string, number>(async (items) => {
  console.log(`flush of ${items.length}: ${items.join(', ')}`);
  await new Promise((resolve) => setTimeout(resolve, 10)); // the round trip
  return items.map((item) => item.length);
});

const first = lengths.submit('a'); // a lone caller waits only a microtask
await Promise.resolve(); // its flush is now in flight
const rest = ['bb', 'ccc', 'dddd'].map((item) => lengths.submit(item));
const results = await Promise.all([first, ...rest]);
console.log(`results: ${results.join(', ')}`);
