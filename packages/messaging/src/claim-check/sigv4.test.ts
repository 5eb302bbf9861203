import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  canonicalQuery,
  EMPTY_PAYLOAD_SHA256,
  type SigV4Context,
  sha256Hex,
  signingKey,
  signRequest,
  uriEncode,
  uriEncodePath,
} from './sigv4.js';

/**
 * The worked examples of the S3 documentation ("Signature Calculations for the Authorization Header:
 * Transferring Payload in a Single Chunk"), with its example credentials, and the signing-key derivation example
 * of the AWS General Reference. s3rver does not check V4 signatures, so these are what proves the signer.
 */
const example: SigV4Context = {
  credentials: {
    accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
    secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  },
  region: 'us-east-1',
  now: Date.UTC(2013, 4, 24),
};
const host = 'examplebucket.s3.amazonaws.com';

describe('SigV4 signer', () => {
  it('derives the signing key of the AWS General Reference example', () => {
    const key = signingKey('wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', '20120215', 'us-east-1', 'iam');
    assert.equal(key.toString('hex'), 'f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d');
  });

  it('signs the GET Object example (canonical request, string to sign, signature, header)', () => {
    assert.equal(sha256Hex(''), EMPTY_PAYLOAD_SHA256);
    const signed = signRequest(
      {
        method: 'GET',
        host,
        path: '/test.txt',
        headers: { Range: 'bytes=0-9' },
        payloadHash: EMPTY_PAYLOAD_SHA256,
      },
      example,
    );
    assert.equal(
      signed.canonicalRequest,
      [
        'GET',
        '/test.txt',
        '',
        'host:examplebucket.s3.amazonaws.com',
        'range:bytes=0-9',
        `x-amz-content-sha256:${EMPTY_PAYLOAD_SHA256}`,
        'x-amz-date:20130524T000000Z',
        '',
        'host;range;x-amz-content-sha256;x-amz-date',
        EMPTY_PAYLOAD_SHA256,
      ].join('\n'),
    );
    assert.equal(
      signed.stringToSign,
      'AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n' +
        '7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972',
    );
    assert.equal(signed.signature, 'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41');
    assert.equal(
      signed.headers.authorization,
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, ' +
        'SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, ' +
        'Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    );
    assert.equal(signed.headers['x-amz-date'], '20130524T000000Z');
    assert.equal(signed.headers.host, undefined, 'the HTTP client sets Host from the URL');
  });

  it('signs the PUT Object example (a key that needs encoding, a signed payload)', () => {
    const body = new TextEncoder().encode('Welcome to Amazon S3.');
    const payloadHash = sha256Hex(body);
    assert.equal(payloadHash, '44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072');
    const signed = signRequest(
      {
        method: 'PUT',
        host,
        path: `/${uriEncode('test$file.text')}`,
        headers: { Date: 'Fri, 24 May 2013 00:00:00 GMT', 'x-amz-storage-class': 'REDUCED_REDUNDANCY' },
        payloadHash,
      },
      example,
    );
    assert.match(signed.canonicalRequest, /^PUT\n\/test%24file\.text\n\n/);
    assert.match(
      signed.headers.authorization ?? '',
      /SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, /,
    );
    assert.equal(signed.signature, '98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd');
  });

  it('signs the GET Bucket Lifecycle example (a query parameter without a value)', () => {
    const signed = signRequest(
      { method: 'GET', host, path: '/', query: { lifecycle: '' }, payloadHash: EMPTY_PAYLOAD_SHA256 },
      example,
    );
    assert.equal(signed.query, 'lifecycle=');
    assert.equal(signed.signature, 'fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543');
  });

  it('signs the GET Bucket (List Objects) example (query sorted by name)', () => {
    const signed = signRequest(
      {
        method: 'GET',
        host,
        path: '/',
        query: { prefix: 'J', 'max-keys': '2' },
        payloadHash: EMPTY_PAYLOAD_SHA256,
      },
      example,
    );
    assert.equal(signed.query, 'max-keys=2&prefix=J');
    assert.equal(signed.signature, '34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7');
  });

  it('signs a session token as x-amz-security-token', () => {
    const signed = signRequest(
      { method: 'GET', host, path: '/test.txt', payloadHash: EMPTY_PAYLOAD_SHA256 },
      { ...example, credentials: { ...example.credentials, sessionToken: 'token/with+chars' } },
    );
    assert.equal(signed.headers['x-amz-security-token'], 'token/with+chars');
    assert.match(signed.canonicalRequest, /\nx-amz-security-token:token\/with\+chars\n/);
    assert.match(
      signed.headers.authorization ?? '',
      /SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,/,
    );
  });

  it('encodes as RFC 3986 wants: unreserved characters kept, the rest %XX in upper case', () => {
    assert.equal(uriEncode("a b/c~d._-*!'()+=&é"), 'a%20b%2Fc~d._-%2A%21%27%28%29%2B%3D%26%C3%A9');
    assert.equal(uriEncodePath('/bucket/dir/key with space'), '/bucket/dir/key%20with%20space');
    assert.equal(
      canonicalQuery({ 'continuation-token': 'a/b+c=', 'list-type': '2', delete: '' }),
      'continuation-token=a%2Fb%2Bc%3D&delete=&list-type=2',
    );
  });
});
