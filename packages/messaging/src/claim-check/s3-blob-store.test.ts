/**
 * The S3 store against s3rver (a local S3-compatible server on a temporary directory). s3rver checks the form of
 * a V4 Authorization header and the access key (S3RVER) but not the signature itself: sigv4.test.ts proves the
 * signer on AWS's worked examples.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, stat, utimes } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { type ChildHandle, runChild } from '@stratus/testkit';
import { blobStoreContract } from './blob-store.contract.js';
import { BlobStoreClosedError } from './errors.js';
import { S3BlobStore, type S3BlobStoreOptions, S3RequestError } from './s3-blob-store.js';

const BUCKET = 'claims';
let directory: string;
let server: ChildHandle;
let endpoint: string;
let sequence = 0;

before(async () => {
  directory = await mkdtemp(join(tmpdir(), 'stratus-s3rver-'));
  server = runChild(new URL('./fixtures/s3rver-server.ts', import.meta.url), {
    args: [directory, BUCKET],
    nodeArgs: ['--openssl-legacy-provider'],
    lifetimeMs: 120_000,
  });
  const { port } = await server.nextMessage<{ port: number }>(undefined, 15_000);
  endpoint = `http://127.0.0.1:${port}`;
});
after(async () => {
  await server.stop();
  await rm(directory, { recursive: true, force: true, maxRetries: 10 });
});

function options(overrides: Partial<S3BlobStoreOptions> = {}): S3BlobStoreOptions {
  return {
    endpoint,
    bucket: BUCKET,
    region: 'us-east-1',
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    keyPrefix: `t${++sequence}/`,
    ...overrides,
  };
}

blobStoreContract('s3 (s3rver)', async () => {
  const settings = options();
  const prefix = settings.keyPrefix as string;
  return {
    store: new S3BlobStore(settings),
    // s3rver's Last-Modified is the modification time of its object file. It may still be finishing that file after
    // answering the PUT, which moves the time forward again: set it until it stays (bounded).
    backdate: async (key, at) => {
      const parts = `${prefix}${key}`.split('/');
      const file = join(directory, BUCKET, ...parts.slice(0, -1), `${parts.at(-1)}._S3rver_object`);
      for (let attempt = 0; attempt < 50; attempt++) {
        await utimes(file, at / 1000, at / 1000);
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (Math.abs((await stat(file)).mtimeMs - at) < 1) return;
      }
      throw new Error(`could not backdate ${file}`);
    },
    cleanup: () => rm(join(directory, BUCKET, prefix), { recursive: true, force: true, maxRetries: 10 }),
  };
});

describe('S3BlobStore', () => {
  it('signs every request with SigV4: credential scope, payload hash, session token, Content-MD5 on deletes', async () => {
    const seen: { method: string; url: string; headers: Record<string, string> }[] = [];
    const recording: typeof fetch = (url, init) => {
      seen.push({
        method: String(init?.method),
        url: String(url),
        headers: init?.headers as Record<string, string>,
      });
      return fetch(url, init);
    };
    const store = new S3BlobStore(
      options({ sessionToken: 'session-token', fetch: recording, keyPrefix: 'signed/' }),
    );
    const body = new TextEncoder().encode('payload');
    await store.put('k', body);
    await store.list({ limit: 5 });
    await store.delete(['k']);
    assert.deepEqual(
      seen.map((r) => `${r.method} ${r.url.slice(endpoint.length)}`),
      ['PUT /claims/signed/k', 'GET /claims?list-type=2&max-keys=5&prefix=signed%2F', 'POST /claims?delete='],
    );
    for (const { headers } of seen) {
      assert.match(
        headers.authorization ?? '',
        /^AWS4-HMAC-SHA256 Credential=S3RVER\/\d{8}\/us-east-1\/s3\/aws4_request, SignedHeaders=[a-z0-9;-]*x-amz-security-token, Signature=[0-9a-f]{64}$/,
      );
      assert.equal(headers['x-amz-security-token'], 'session-token');
      assert.match(headers['x-amz-date'] ?? '', /^\d{8}T\d{6}Z$/);
    }
    assert.equal(seen[0]?.headers['x-amz-content-sha256'], createHash('sha256').update(body).digest('hex'));
    assert.match(seen[2]?.headers.authorization ?? '', /SignedHeaders=content-md5;content-type;host;/);
    assert.match(seen[2]?.headers['content-md5'] ?? '', /^[A-Za-z0-9+/]{22}==$/);
  });

  it('addresses the bucket in the host name when forcePathStyle is false', async () => {
    const port = new URL(endpoint).port;
    const urls: string[] = [];
    // The host names are not in DNS, and fetch will not override Host: send through node:http to s3rver.
    const viaLoopback: typeof fetch = (url, init) => {
      const target = new URL(String(url));
      urls.push(target.href);
      return new Promise((resolve, reject) => {
        const outgoing = request(
          {
            host: '127.0.0.1',
            port: target.port,
            method: init?.method,
            path: target.pathname + target.search,
            headers: { ...(init?.headers as Record<string, string>), host: target.host },
          },
          (incoming) => {
            const chunks: Buffer[] = [];
            incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
            incoming.on('end', () => {
              const status = incoming.statusCode ?? 500;
              const body = status === 204 ? null : Buffer.concat(chunks);
              resolve(new Response(body, { status, headers: incoming.headers as Record<string, string> }));
            });
          },
        );
        outgoing.on('error', reject);
        outgoing.end(init?.body as Uint8Array | undefined);
      });
    };
    const store = new S3BlobStore(
      options({ endpoint: `http://s3.example.test:${port}`, forcePathStyle: false, fetch: viaLoopback }),
    );
    await store.put('virtual/1', new Uint8Array([1, 2]));
    assert.deepEqual(await store.get('virtual/1'), new Uint8Array([1, 2]));
    assert.deepEqual(
      (await store.list({ limit: 5 })).blobs.map((b) => b.key),
      ['virtual/1'],
    );
    await store.delete(['virtual/1']);
    assert.equal(await store.get('virtual/1'), undefined);
    const prefix = store.keyPrefix;
    assert.deepEqual(urls, [
      `http://claims.s3.example.test:${port}/${prefix}virtual/1`,
      `http://claims.s3.example.test:${port}/${prefix}virtual/1`,
      `http://claims.s3.example.test:${port}/?list-type=2&max-keys=5&prefix=${encodeURIComponent(prefix)}`,
      `http://claims.s3.example.test:${port}/?delete=`,
      `http://claims.s3.example.test:${port}/${prefix}virtual/1`,
    ]);
  });

  it('keeps stores with different key prefixes apart and skips objects it cannot have written', async () => {
    const a = new S3BlobStore(options({ keyPrefix: 'apart-a/' }));
    const b = new S3BlobStore(options({ keyPrefix: 'apart-b/' }));
    await a.put('k', new Uint8Array([1]));
    assert.equal(await b.get('k'), undefined);
    assert.deepEqual((await b.list({ limit: 10 })).blobs, []);
    // Another writer's object whose name is no valid blob key (unsigned: s3rver accepts anonymous writes).
    const foreign = await fetch(`${endpoint}/${BUCKET}/apart-a/odd%20name`, { method: 'PUT', body: 'x' });
    assert.equal(foreign.status, 200);
    assert.deepEqual(
      (await a.list({ limit: 10 })).blobs.map((blob) => blob.key),
      ['k'],
    );
    const whole = new S3BlobStore(options({ keyPrefix: '' }));
    assert.deepEqual(
      (await whole.list({ prefix: 'apart-', limit: 10 })).blobs.map((blob) => blob.key),
      ['apart-a/k'],
    );
  });

  it('turns S3 error answers into S3RequestError with the status and S3 code', async () => {
    const missingBucket = new S3BlobStore(options({ bucket: 'no-such-bucket' }));
    for (const call of [
      () => missingBucket.get('k'),
      () => missingBucket.put('k', new Uint8Array([1])),
      () => missingBucket.list({ limit: 1 }),
    ]) {
      await assert.rejects(call(), (error: unknown) => {
        assert.ok(error instanceof S3RequestError);
        assert.equal(error.status, 404);
        assert.equal(error.s3Code, 'NoSuchBucket');
        return true;
      });
    }
    const stranger = new S3BlobStore(options({ accessKeyId: 'UNKNOWN' }));
    await assert.rejects(stranger.get('k'), (error: unknown) => {
      assert.ok(error instanceof S3RequestError);
      assert.equal(error.status, 403);
      assert.equal(error.s3Code, 'InvalidAccessKeyId');
      return true;
    });
  });

  it('throws when DeleteObjects reports keys it could not delete', async () => {
    const answer =
      '<?xml version="1.0" encoding="UTF-8"?><DeleteResult><Error><Key>p/k</Key><Code>AccessDenied</Code>' +
      '<Message>Access Denied</Message></Error></DeleteResult>';
    const store = new S3BlobStore(options({ fetch: async () => new Response(answer, { status: 200 }) }));
    await assert.rejects(store.delete(['k']), (error: unknown) => {
      assert.ok(error instanceof S3RequestError);
      assert.equal(error.s3Code, 'AccessDenied');
      assert.match(error.message, /could not delete "p\/k": Access Denied/);
      return true;
    });
  });

  describe('against a server that never answers', () => {
    let silent: Server;
    let silentEndpoint: string;
    before(async () => {
      silent = createServer(() => {});
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      silentEndpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    });
    after(async () => {
      // Stop accepting first: a connection the server took after closeAllConnections kept close waiting forever.
      const closed = new Promise((resolve) => silent.close(resolve));
      silent.closeAllConnections();
      await closed;
    });

    it('gives up after requestTimeoutMs', async () => {
      const store = new S3BlobStore(options({ endpoint: silentEndpoint, requestTimeoutMs: 50 }));
      await assert.rejects(store.get('k'), (error: unknown) => {
        assert.ok(error instanceof S3RequestError);
        assert.equal(error.s3Code, 'Timeout');
        assert.equal(error.status, undefined);
        return true;
      });
    });

    it('aborts requests in flight on close', async () => {
      const store = new S3BlobStore(options({ endpoint: silentEndpoint }));
      const pending = store.get('k');
      await new Promise((resolve) => setImmediate(resolve));
      await store.close();
      await assert.rejects(pending, BlobStoreClosedError);
    });

    it('reports a refused connection as a network error', async () => {
      const refused = new S3BlobStore(options({ endpoint: 'http://127.0.0.1:1' }));
      await assert.rejects(refused.get('k'), (error: unknown) => {
        assert.ok(error instanceof S3RequestError);
        assert.equal(error.s3Code, 'NetworkError');
        return true;
      });
    });
  });

  it('rejects invalid options', () => {
    const invalid: [string, Partial<S3BlobStoreOptions>][] = [
      ['endpoint', { endpoint: 'ftp://host' }],
      ['endpoint', { endpoint: 'not a url' }],
      ['endpoint', { endpoint: 'http://host/some/path' }],
      ['bucket', { bucket: 'Upper_Case' }],
      ['bucket', { bucket: 'ab' }],
      ['region', { region: '' }],
      ['accessKeyId', { accessKeyId: '' }],
      ['secretAccessKey', { secretAccessKey: undefined as unknown as string }],
      ['sessionToken', { sessionToken: '' }],
      ['keyPrefix', { keyPrefix: '../up' }],
      ['keyPrefix', { keyPrefix: '/rooted' }],
      ['requestTimeoutMs', { requestTimeoutMs: 0 }],
      ['forcePathStyle', { forcePathStyle: 'no' as unknown as boolean }],
    ];
    for (const [option, overrides] of invalid) {
      assert.throws(
        () => new S3BlobStore(options(overrides)),
        (error: unknown) => error instanceof InvalidOptionsError && error.option === option,
        option,
      );
    }
  });
});
