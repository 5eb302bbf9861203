/** Something to Atomics.wait on: a synchronous sleep. */
export const pause = new Int32Array(new SharedArrayBuffer(4));

/** SQLITE_BUSY (or one of its extended codes) from either driver. */
export function isBusy(error: unknown): boolean {
  const { code, errcode } = error as { code?: unknown; errcode?: unknown };
  return (
    (typeof code === 'string' && code.startsWith('SQLITE_BUSY')) ||
    (typeof errcode === 'number' && (errcode & 0xff) === SQLITE_BUSY)
  );
}
const SQLITE_BUSY = 5;
