import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseWrk } from './processes.js';

const OUTPUT = `Running 5s test @ http://127.0.0.1:40001/
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.52ms  512.33us  14.02ms   91.10%
    Req/Sec    32.51k     1.20k   34.10k    80.00%
  Latency Distribution
     50%    1.44ms
     75%    1.62ms
     90%    1.91ms
     99%    3.85ms
  161752 requests in 5.00s, 184.09MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 4
Requests/sec:  32345.67
Transfer/sec:     36.81MB
`;

describe('parseWrk', () => {
  it('reads the rate, the percentiles in any unit and every error wrk counts', () => {
    assert.deepEqual(parseWrk(OUTPUT), { requestsPerSec: 32345.67, p50Ms: 1.44, p99Ms: 3.85, errors: 7 });
  });

  it('throws on output without a rate', () => {
    assert.throws(() => parseWrk('unable to connect to 127.0.0.1:1 Connection refused'), /Requests/);
  });
});
