import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { randomId } from '@stratus/core';
import { type ChildHandle, postgresForSuite, redisForSuite, runChild } from '@stratus/testkit';

const PROCESSES = 4;
const ATTEMPTS = 40; // per process and limiter: 160 attempts at a limit of 50
const IN_FLIGHT = 8;
const LIMIT = 50;
const child = new URL('./fixtures/distributed-child.ts', import.meta.url);

interface Report {
  type: 'done';
  admitted: Record<string, number>;
  refused: Record<string, number>;
}

/** Starts the processes, lets them all go at once, and sums what each limiter admitted. */
async function hammer(kind: 'redis' | 'postgres', url: string): Promise<Report[]> {
  const runId = `rl-${randomId(6)}`;
  const children: ChildHandle[] = Array.from({ length: PROCESSES }, () =>
    runChild(child, { args: [kind, url, runId, String(ATTEMPTS), String(IN_FLIGHT)], lifetimeMs: 60_000 }),
  );
  try {
    const isType = (type: string) => (message: unknown) => (message as { type?: string }).type === type;
    await Promise.all(children.map((c) => c.nextMessage(isType('ready'), 30_000)));
    for (const c of children) c.send({ go: true });
    return await Promise.all(children.map((c) => c.nextMessage<Report>(isType('done'), 30_000)));
  } finally {
    await Promise.all(children.map((c) => c.stop()));
  }
}

function assertExactlyTheLimit(reports: Report[]): void {
  const algorithms = Object.keys(reports[0]!.admitted);
  assert.equal(algorithms.length, 6);
  for (const algorithm of algorithms) {
    const admitted = reports.reduce((sum, report) => sum + report.admitted[algorithm]!, 0);
    const refused = reports.reduce((sum, report) => sum + report.refused[algorithm]!, 0);
    assert.equal(admitted, LIMIT, `${algorithm} admitted ${admitted} of ${PROCESSES * ATTEMPTS}`);
    assert.equal(admitted + refused, PROCESSES * ATTEMPTS, `${algorithm} answered every attempt`);
  }
}

const redis = await redisForSuite('rate-limit-distributed');
describe(`${PROCESSES} processes sharing limits through Redis`, { skip: redis.skip }, () => {
  after(() => redis.release());
  test(`every algorithm admits exactly ${LIMIT} of ${PROCESSES * ATTEMPTS} concurrent attempts`, async () => {
    assertExactlyTheLimit(await hammer('redis', redis.url as string));
  });
});

const postgres = await postgresForSuite('rate-limit-distributed');
describe(`${PROCESSES} processes sharing limits through PostgreSQL`, { skip: postgres.skip }, () => {
  after(() => postgres.release());
  test(`every algorithm admits exactly ${LIMIT} of ${PROCESSES * ATTEMPTS} concurrent attempts`, async () => {
    assertExactlyTheLimit(await hammer('postgres', postgres.url as string));
  });
});
