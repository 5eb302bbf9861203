// The Stratus gateway as the bench runs it: its own process, one route to the upstream given as argv[2], no listener
// on its events (no access log). Prints READY <url>.
import { startGateway } from '@stratus/edge';

const [upstream] = process.argv.slice(2);
if (upstream === undefined) throw new Error('usage: stratus-gateway.ts <upstream url>');
const gateway = await startGateway({
  config: { upstreams: { app: { targets: [upstream] } }, routes: [{ upstream: 'app' }] },
  port: 0,
});
console.log(`READY ${gateway.url}`);
process.once('SIGTERM', () => void gateway.close().then(() => process.exit(0)));
