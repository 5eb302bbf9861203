// @fastify/http-proxy as its README shows it: one prefix-less proxy to the upstream given as argv[2], its defaults
// otherwise (undici, 128 connections), logging off. Prints READY <url>.
import proxy from '@fastify/http-proxy';
import Fastify from 'fastify';

const [upstream] = process.argv.slice(2);
if (upstream === undefined) throw new Error('usage: fastify-proxy.ts <upstream url>');
const app = Fastify({ logger: false });
await app.register(proxy, { upstream });
const url = await app.listen({ port: 0, host: '127.0.0.1' });
console.log(`READY ${url}`);
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
