/**
 * Input meant to break parsers, validators and storage: text with NUL, lone surrogates, control and bidi characters,
 * combining marks and astral characters, huge strings, JSON text that does not parse or nests deeply, and URL parts
 * that do not decode. Sizes go past the usual limits (64 KiB bodies, 100-character route parameters) on purpose.
 */
import fc from 'fast-check';

/** Characters a text field may trip on, one per kind. */
const NASTY_CHARACTERS = [
  '\u0000', // NUL: PostgreSQL stores none
  '\ud800', // a lone high surrogate
  '\udfff', // a lone low surrogate
  '\u001b', // ESC, a C0 control
  '\u007f', // DEL
  '\u0085', // NEL, a C1 control
  '\r\n',
  '\t',
  '\u2028', // line separator
  '\u202e', // right-to-left override
  '\ufeff', // byte order mark
  '\uffff', // a noncharacter
  '\u{10ffff}',
  '\u{1d54f}', // astral: two UTF-16 units, one character
  '\u{1f469}\u200d\u{1f467}', // a ZWJ sequence
  'e\u0301', // a combining mark
  'é',
  '\u00ff',
] as const;

/** Text that once broke something somewhere: markup, SQL, templates, path tricks, and words parsers special-case. */
const NASTY_WORDS = [
  '',
  ' ',
  '   ',
  '<script>alert(1)</script>',
  "'; DROP TABLE events; --",
  '{{7*7}}<%= 7*7 %>#{7*7}',
  '../../etc/passwd',
  '%00',
  '%ZZ',
  'null',
  'undefined',
  'NaN',
  '-1',
  '1e309',
  '0x10',
  '__proto__',
  'constructor',
  'hasOwnProperty',
  '\\',
  '"',
  '\\u0000',
] as const;

/** A character of each kind, repeated past every limit (a body's 64 KiB included). */
const hugeText: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom('a', 'é', '\u{1f600}', '\u0000', '\ud800'),
    fc.constantFrom(257, 2_001, 10_000, 70_000),
  )
  .map(([character, times]) => character.repeat(times));

export const hostileText: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_WORDS) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.string({ maxLength: 8 }), fc.constantFrom(...NASTY_CHARACTERS), fc.string({ maxLength: 8 }))
      .map((parts) => parts.join('')),
  },
  // Any code point, lone surrogates and controls included.
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 24 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'grapheme', maxLength: 24 }) },
  // Rarer, as a form's fields may each take one.
  { weight: 1, arbitrary: hugeText },
);

/** Arrays nested `depth` deep around `inner`. */
export function nested(depth: number, inner: unknown = 1): unknown {
  let value = inner;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

/** JSON text that does not parse, or parses into something a parser or validator may choke on. */
export const hostileJsonText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '{',
    '[1,2',
    '{"a":1,}',
    "{'a':1}",
    '{"a":}',
    '{"a":01}',
    '{"a":1}{"b":2}',
    '{"a":1} and more',
    'nul',
    'null',
    'true',
    '-0',
    '1e999',
    'NaN',
    '"text"',
    '[]',
    '{}',
    '\ufeff{}',
    '{"a":"\\ud800"}',
    '{"a":"\\u0000"}',
    '{"__proto__":{"polluted":true}}',
    '{"constructor":{"prototype":{"polluted":true}}}',
  ),
  // Deep nesting, within a 64 KiB body and past it.
  fc
    .tuple(fc.constantFrom('[', '{"a":'), fc.constantFrom(64, 1_000, 10_000, 32_000, 100_000))
    .map(([open, depth]) => `${open.repeat(depth)}1${(open === '[' ? ']' : '}').repeat(depth)}`),
  // JSON cut anywhere.
  fc.json().chain((text) => fc.nat({ max: text.length }).map((end) => text.slice(0, end))),
  fc.string({ unit: 'binary', maxLength: 24 }),
);

/** A UTF-16 unit of a surrogate pair whose other half is missing. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * `text` percent-encoded as a URL part, lone surrogates too (as their three WTF-8 bytes, which no UTF-8 decoder
 * takes): `encodeURIComponent` would throw on them.
 */
export function encodeAnyText(text: string): string {
  let encoded = '';
  let from = 0;
  for (const match of text.matchAll(LONE_SURROGATE)) {
    const code = text.charCodeAt(match.index);
    const bytes = [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)];
    encoded += encodeURIComponent(text.slice(from, match.index));
    encoded += bytes.map((byte) => `%${byte.toString(16).toUpperCase()}`).join('');
    from = match.index + 1;
  }
  return encoded + encodeURIComponent(text.slice(from));
}

/** A path segment or query value as it goes in a URL: encoded hostile text, or raw bytes that do not decode. */
export const hostileUrlPart: fc.Arbitrary<string> = fc.oneof(
  hostileText.map(encodeAnyText),
  fc.constantFrom(
    '%00',
    'a%00b',
    '%ZZ',
    '%',
    '%e0%a4%a',
    '%2F',
    '%2e%2e',
    '..',
    '.',
    ';',
    '%C0%AE',
    '%ef%bf%bf',
    '+',
  ),
  fc.constantFrom(101, 1_000, 10_000, 70_000).map((length) => 'a'.repeat(length)),
);

/** Header values a client can send (visible ASCII and Latin-1), of any length. */
export const hostileHeaderValue: fc.Arbitrary<string> = fc.oneof(
  fc.string({
    unit: fc
      .integer({ min: 0x20, max: 0xff })
      .filter((code) => code !== 0x7f)
      .map((code) => String.fromCharCode(code)),
  }),
  fc.constantFrom('', ' ', 'a'.repeat(10_000)),
);
