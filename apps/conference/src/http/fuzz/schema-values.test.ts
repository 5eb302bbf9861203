import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { strictValidator } from '../schemas/compiler.js';
import { apiInputs } from '../schemas/inputs.js';
import type { JsonSchema } from '../schemas/json-schema.js';
import { line } from '../schemas/text.js';
import { schemaValues } from './schema-values.js';

const KNOWN_ID = '0190a5d8-b4c3-7d1e-9f2a-3b4c5d6e7f80';
const values = schemaValues({
  resolve: (schema) => schema,
  known: (name) => (name === 'seatTypeId' ? [KNOWN_ID] : []),
});
const bodies = Object.entries(apiInputs).filter(([name]) => !name.endsWith('Query')) as [
  string,
  JsonSchema,
][];

describe('schemaValues', () => {
  test('valid values pass the schema, as the API validates bodies', () => {
    for (const [name, schema] of bodies) {
      const validate = strictValidator(schema);
      fc.assert(
        fc.property(values.valid(schema), (value) => validate(value)),
        { numRuns: 100, seed: 1 },
      );
      assert.ok(true, name);
    }
  });

  test("a property's known values are among the valid ones", () => {
    const seats = fc.sample(values.valid(apiInputs.SeatSelection), { numRuns: 100, seed: 2 }) as {
      seats: { seatTypeId: string }[];
    }[];
    assert.ok(seats.some((body) => body.seats.some((seat) => seat.seatTypeId === KNOWN_ID)));
  });

  test('boundary values sit at and just past the limits: a line of exactly 100 characters, and of 101', () => {
    const validate = strictValidator(line(100));
    const samples = fc.sample(values.boundary(line(100)), { numRuns: 300, seed: 3 }) as string[];
    const lengths = (text: string) => [...text].length;
    assert.ok(
      samples.some((text) => lengths(text) === 100 && text.length > 100 && validate(text)),
      'astral, at the limit',
    );
    assert.ok(
      samples.some((text) => lengths(text) === 101 && !validate(text)),
      'one past the limit',
    );
    assert.ok(
      samples.some((text) => text === ''),
      'empty',
    );
    const numbers = fc.sample(values.boundary({ type: 'integer', minimum: 0, maximum: 20 }), {
      numRuns: 200,
      seed: 4,
    });
    for (const limit of [-1, 0, 20, 21]) assert.ok(numbers.includes(limit), String(limit));
  });

  test('malformed values are refused: missing and extra properties, other types, bad text', () => {
    const schema = apiInputs.NewConference;
    const validate = strictValidator(schema);
    const keywords = new Set<string>();
    let refused = 0;
    const samples = fc.sample(values.malformed(schema), { numRuns: 300, seed: 5 });
    for (const value of samples) {
      if (validate(value)) continue;
      refused++;
      for (const error of validate.errors ?? []) keywords.add(error.keyword);
    }
    // Hostile text may happen to be fine text (a blank name is the domain's to refuse).
    assert.ok(refused >= samples.length * 0.8, `${refused} of ${samples.length} refused`);
    for (const keyword of ['required', 'additionalProperties', 'type', 'pattern', 'maxLength'])
      assert.ok(keywords.has(keyword), `${keyword} in ${[...keywords].join(', ')}`);
  });
});
