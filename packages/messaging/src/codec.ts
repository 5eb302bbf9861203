import { MessageDecodeError } from './errors.js';

/**
 * Turns message bodies into bytes and back. The content type travels with the message, so a consumer decodes
 * what a producer with another codec sent, as long as it knows that content type.
 */
export interface Codec {
  encode(body: unknown): { bytes: Uint8Array; contentType: string };
  /** Throws (any error) when the bytes are not valid for the content type; consumers then dead-letter the message. */
  decode(bytes: Uint8Array, contentType: string | undefined): unknown;
}

export const JSON_CONTENT_TYPE = 'application/json';
export const BINARY_CONTENT_TYPE = 'application/octet-stream';
export const TEXT_CONTENT_TYPE = 'text/plain; charset=utf-8';

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * The default codec: Uint8Array bodies travel as raw bytes, everything else as JSON. Decoding follows the content
 * type: JSON is parsed, text is decoded as UTF-8, anything else is handed over as bytes.
 */
export const defaultCodec: Codec = {
  encode(body) {
    if (body instanceof Uint8Array) return { bytes: body, contentType: BINARY_CONTENT_TYPE };
    const json = JSON.stringify(body);
    // JSON.stringify(undefined) and functions give undefined: there is nothing to send.
    if (json === undefined) throw new TypeError(`cannot encode a message body of type ${typeof body}`);
    // Buffer.from takes small strings from a shared pool: cheaper than TextEncoder's fresh allocation each time.
    return { bytes: Buffer.from(json, 'utf8'), contentType: JSON_CONTENT_TYPE };
  },
  decode(bytes, contentType) {
    if (contentType === undefined || contentType.startsWith(JSON_CONTENT_TYPE)) {
      try {
        return JSON.parse(decoder.decode(bytes));
      } catch (error) {
        throw new MessageDecodeError(contentType, error);
      }
    }
    if (contentType.startsWith('text/')) {
      try {
        return decoder.decode(bytes);
      } catch (error) {
        throw new MessageDecodeError(contentType, error);
      }
    }
    return bytes;
  },
};
