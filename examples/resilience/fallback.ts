// Fallback: answers with a substitute (the last known value, a default, a degraded path) when the operation fails,
// on errors and, if asked, on results such as an HTTP 503 response.
// Prints:
//   price: 42 (from the service)
//   fallback after HTTP 503
//   price: 42 (last known)
//   fallback after connection refused
//   price: 42 (last known)
//   a caller who cancelled gets no substitute: ERR_STRATUS_CANCELLED
import { fallback } from '@stratus/resilience';

interface Quote {
  readonly status: number;
  readonly price?: number;
  readonly source: string;
}
let lastKnown: Quote = { status: 200, price: 0, source: 'default' };

const withLastKnown = fallback<Quote>({
  fallback: (failure) => {
    const why =
      'error' in failure ? (failure.error as Error).message : `HTTP ${(failure.result as Quote).status}`;
    console.log(`fallback after ${why}`);
    return { ...lastKnown, source: 'last known' };
  },
  // Every error is replaced by default (cancellations excepted); results only when this says so.
  handle: { result: (value) => (value as Quote).status >= 500 },
});
const show = (quote: Quote) => console.log(`price: ${quote.price} (${quote.source})`);

lastKnown = await withLastKnown.execute(async () => ({ status: 200, price: 42, source: 'from the service' }));
show(lastKnown);
show(await withLastKnown.execute(async (): Promise<Quote> => ({ status: 503, source: 'service' })));
show(
  await withLastKnown.execute(async (): Promise<Quote> => Promise.reject(new Error('connection refused'))),
);

const caller = new AbortController();
caller.abort();
await withLastKnown
  .execute(async () => lastKnown, { signal: caller.signal })
  .catch((error: { code: string }) =>
    console.log(`a caller who cancelled gets no substitute: ${error.code}`),
  );
