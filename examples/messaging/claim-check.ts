// Claim-Check: a payload too large for a message goes to a blob store, and the message carries only a signed
// reference to it. Receivers get the payload back transparently (its size and SHA-256 checked); completing the
// message deletes the blob. Here the blobs are files in a directory (FilesystemBlobStore); an S3BlobStore works the
// same way for S3-compatible services.
// Prints:
//   queued message body: 0 bytes, reference in header stratus-claim-check
//   received 1048576 bytes, intact: true
//   blobs left after complete: 0
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CLAIM_CHECK_HEADER,
  ClaimCheck,
  FilesystemBlobStore,
  MemoryMessageBackend,
  Messaging,
} from '@stratus/messaging';

const dir = mkdtempSync(join(tmpdir(), 'stratus-claim-check-'));
const blobs = new FilesystemBlobStore({ directory: join(dir, 'blobs') });
const claimCheck = new ClaimCheck({
  store: blobs,
  thresholdBytes: 64 * 1024, // larger bodies travel through the blob store
  signingKey: 'a secret of at least 16 bytes', // receivers accept only references signed with it
});
const messaging = new Messaging({ backend: new MemoryMessageBackend(), claimCheck });
await messaging.createQueue('scans');

// 1 MiB: over the queue's 256 KiB limit (maxMessageBytes), so without a claim check send throws MessageTooLargeError.
const scan = new Uint8Array(1024 * 1024).fill(7);
await messaging.queue<Uint8Array>('scans').send(scan);

const [stored] = await messaging.queue('scans').peek();
const reference = stored!.headers?.[CLAIM_CHECK_HEADER] === undefined ? 'none' : CLAIM_CHECK_HEADER;
console.log(`queued message body: ${stored!.body.byteLength} bytes, reference in header ${reference}`);

const [received] = await messaging.queue<Uint8Array>('scans').receive();
const intact = received!.body.byteLength === scan.byteLength && received!.body.every((byte) => byte === 7);
console.log(`received ${received!.body.byteLength} bytes, intact: ${intact}`);
await received!.complete(); // deletes the blob too

const { blobs: left } = await blobs.list({ limit: 10 });
console.log(`blobs left after complete: ${left.length}`);
// Blobs of messages never completed (purged dead letters...) go by age: claimCheck.sweep({ olderThanMs, now }).

await messaging.close();
await blobs.close();
rmSync(dir, { recursive: true, force: true });
