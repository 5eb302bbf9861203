/**
 * A conference to register for, set up over the HTTP API as its owner would: create it, log in, add two seat types
 * (with large quotas unless told otherwise), publish; then wait until every web process's public view shows both
 * seat types available.
 */
import { type Answer, type ApiClient, RequestTimeoutError } from './client.js';

/** The API's largest quota per seat type: a run never orders as many seats (checked against the scale). */
export const SEAT_QUOTA = 100_000;
export const SEAT_TYPES = [
  { name: 'General admission', description: 'All sessions, both days', price: 199 },
  { name: 'Workshop', description: 'The hands-on workshop', price: 50 },
] as const;
/** What a registration of one seat of each type costs. */
export const ORDER_TOTAL = SEAT_TYPES.reduce((sum, seat) => sum + seat.price, 0);

const SETUP_REQUEST_MS = 30_000;
const VISIBLE_WITHIN_MS = 60_000;

export interface ConferenceFixture {
  readonly slug: string;
  readonly conferenceId: string;
  readonly seatTypeIds: readonly string[];
}

function expect(answer: Answer, status: number, what: string): Record<string, unknown> {
  if (answer.status !== status)
    throw new Error(`${what}: expected HTTP ${status}, got ${answer.status}: ${JSON.stringify(answer.body)}`);
  return (answer.body ?? {}) as Record<string, unknown>;
}

/** `quotas`: the seats of each of SEAT_TYPES, in order; default SEAT_QUOTA each. */
export async function setUpConference(
  clients: readonly ApiClient[],
  slug: string,
  quotas: readonly number[] = SEAT_TYPES.map(() => SEAT_QUOTA),
): Promise<ConferenceFixture> {
  const owner = clients[0] as ApiClient;
  const ownerEmail = 'owner@bench.example';
  const created = expect(
    await owner.send('POST', '/api/conferences', {
      timeoutMs: SETUP_REQUEST_MS,
      body: {
        name: 'Bench Conf',
        slug,
        description: 'A conference for the load generator',
        location: 'Loopback',
        startDate: '2030-01-01',
        endDate: '2030-01-02',
        ownerName: 'Bench Owner',
        ownerEmail,
      },
    }),
    201,
    'create the conference',
  );
  const conferenceId = String(created.id);
  // The API waits (up to 5 s) for the login's read model to show a new conference, then answers anyway: scaled
  // out, on a loaded box, the worker leading that view may take longer. So: log in until it knows the owner.
  const login = () =>
    owner.send('POST', '/api/owner/login', {
      timeoutMs: SETUP_REQUEST_MS,
      body: { email: ownerEmail, accessCode: created.accessCode },
    });
  let answer = await login();
  const loginDeadline = performance.now() + VISIBLE_WITHIN_MS;
  while (answer.status === 401 && performance.now() < loginDeadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    answer = await login();
  }
  const session = expect(answer, 200, 'owner login');
  const token = String(session.token);
  const seatTypeIds: string[] = [];
  for (const [i, seat] of SEAT_TYPES.entries()) {
    const made = expect(
      await owner.send('POST', `/api/conferences/${conferenceId}/seat-types`, {
        timeoutMs: SETUP_REQUEST_MS,
        token,
        body: { ...seat, quantity: quotas[i] },
      }),
      201,
      `create seat type ${seat.name}`,
    );
    seatTypeIds.push(String(made.id));
  }
  expect(
    await owner.send('POST', `/api/conferences/${conferenceId}/publish`, {
      timeoutMs: SETUP_REQUEST_MS,
      token,
    }),
    204,
    'publish',
  );
  const seats = seatTypeIds.map((id, i) => ({ id, available: quotas[i] as number }));
  await Promise.all(clients.map((client) => seatsVisible(client, slug, seats)));
  return { slug, conferenceId, seatTypeIds };
}

/** Polls the public conference on one web process until it shows these seats available, for up to `withinMs`. */
export async function seatsVisible(
  client: ApiClient,
  slug: string,
  expected: readonly { readonly id: string; readonly available: number }[],
  withinMs = VISIBLE_WITHIN_MS,
): Promise<void> {
  const deadline = performance.now() + withinMs;
  let last = '';
  while (performance.now() < deadline) {
    const answer = await client.send('GET', `/api/public/conferences/${slug}`, { timeoutMs: 5_000 });
    last = `HTTP ${answer.status} ${JSON.stringify(answer.body)}`;
    const seats = (answer.body as { seatTypes?: { id: string; available: number }[] } | undefined)?.seatTypes;
    if (
      answer.status === 200 &&
      expected.every(({ id, available }) =>
        seats?.some((seat) => seat.id === id && seat.available === available),
      )
    )
      return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new RequestTimeoutError(
    'GET',
    `/api/public/conferences/${slug} (seats available ${JSON.stringify(expected)}; ${last})`,
    withinMs,
  );
}
