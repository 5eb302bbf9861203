// Asynchronous Request-Reply: the requester sends a request carrying its reply queue and a correlation id and
// goes on; a responder (any process consuming the request queue) sends its answer there, and the requester matches
// it to the waiting call. Requests expire with their timeout; a responder that fails for good answers with an error.
// Prints:
//   quote for a-1: 42
//   quote for z-9 failed: ERR_STRATUS_REMOTE_ERROR (unknown sku z-9)
//   nobody answers: ERR_STRATUS_REQUEST_TIMEOUT
import {
  MemoryMessageBackend,
  Messaging,
  RemoteRequestError,
  RequestReplyClient,
  RequestTimeoutError,
  respond,
} from '@stratus/messaging';

const messaging = new Messaging({ backend: new MemoryMessageBackend() });
// maxDeliveryCount 1: a failing quote is not retried, its requester gets the error at once.
await messaging.createQueue('quotes', { maxDeliveryCount: 1 });
await messaging.createQueue('reports');

// The responder: respond() sends what the handler returns to the request's replyTo.
const prices: Record<string, number> = { 'a-1': 42 };
messaging.consume(
  'quotes',
  respond(messaging, (request: { sku: string }) => {
    const price = prices[request.sku];
    if (price === undefined) throw new Error(`unknown sku ${request.sku}`);
    return { price };
  }),
);

// The requester: its own reply queue, created by start() and deleted by close().
const client = await new RequestReplyClient(messaging, { timeoutMs: 5_000 }).start();
const quote = await client.request<{ price: number }>('quotes', { sku: 'a-1' });
console.log(`quote for a-1: ${quote.price}`);
try {
  await client.request('quotes', { sku: 'z-9' });
} catch (error) {
  if (error instanceof RemoteRequestError)
    console.log(`quote for z-9 failed: ${error.code} (${error.remoteMessage})`);
}
try {
  await client.request('reports', { month: '2026-11' }, { timeoutMs: 200 });
} catch (error) {
  if (error instanceof RequestTimeoutError) console.log(`nobody answers: ${error.code}`);
}

await client.close();
await messaging.close();
