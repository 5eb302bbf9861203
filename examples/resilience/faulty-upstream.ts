// A faulty HTTP upstream (@stratus/testkit): a real server on a free loopback port whose replies follow a script
// (statuses with Retry-After, slow replies, stalls, connection resets), to test HTTP clients and their policies.
// Here a retry gets past a 503 answer and a reset connection to the third reply.
// Prints:
//   status 200 after 3 requests: {"price":42}
//   replies: 503 x1, reset x1, 200 x1
import { constantBackoff } from '@stratus/core';
import { retry } from '@stratus/resilience';
import { reply, startFaultyUpstream } from '@stratus/testkit';

const upstream = await startFaultyUpstream({
  script: { sequence: [reply.unavailable(), reply.reset(), reply.ok({ price: 42 })] },
});

// A 503 response is a transient result and a reset a transient error: both are retried by default.
const response = await retry({ backoff: constantBackoff(10) }).execute(({ signal }) =>
  fetch(`${upstream.url}/price`, { signal }),
);
console.log(`status ${response.status} after ${upstream.requests} requests: ${await response.text()}`);
const { counts } = upstream;
console.log(`replies: 503 x${counts['503']}, reset x${counts.reset}, 200 x${counts['200']}`);
await upstream.close();
