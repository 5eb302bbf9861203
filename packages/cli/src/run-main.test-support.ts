import assert from 'node:assert/strict';
import { main } from './main.js';

/** Runs the stratus command in this process with its stdout captured; it must exit with 0. */
export async function runMain(argv: string[]): Promise<string> {
  let out = '';
  const write = process.stdout.write;
  process.stdout.write = ((text: string) => {
    out += text;
    return true;
  }) as typeof process.stdout.write;
  try {
    assert.equal(await main(argv), 0);
  } finally {
    process.stdout.write = write;
  }
  return out;
}
