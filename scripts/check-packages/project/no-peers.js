// Run in the fresh project before any optional peer is installed: the packages must load without them.
import assert from 'node:assert/strict';

for (const peer of ['pg', 'ioredis', 'better-sqlite3', '@opentelemetry/api', 'pino']) {
  await assert.rejects(
    import(peer),
    { code: 'ERR_MODULE_NOT_FOUND' },
    `${peer} is installed: the check proves nothing`,
  );
}
for (const name of [
  'core',
  'sql',
  'resilience',
  'messaging',
  'data',
  'eventsourcing',
  'coordination',
  'edge',
]) {
  const module = await import(`@stratus/${name}`);
  assert.ok(Object.keys(module).length > 0, `@stratus/${name} exports nothing`);
}
const { Messaging, openMessageBackend } = await import('@stratus/messaging');
const messaging = new Messaging({ backend: openMessageBackend('memory:') });
await messaging.createQueue('jobs');
await messaging.queue('jobs').send({ n: 1 });
assert.equal((await messaging.queue('jobs').receive()).length, 1);
await messaging.close();
console.log('loaded without pg, ioredis, better-sqlite3, @opentelemetry/api and pino');
