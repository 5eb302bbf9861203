/**
 * Both web sites in a real browser (Debian's Chromium through playwright-core): an owner creates, configures and
 * publishes a conference; a registrant orders, checks out with the live countdown, pays on the simulated processor,
 * finds the order again and assigns a seat. Screenshots of each main step go to test-results/conference/.
 *
 * Without Chromium the suite is skipped with the reason, except under CI=true, where that is a failure (as the
 * testkit treats missing test servers).
 */
import assert from 'node:assert/strict';
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import { type Browser, chromium, type Page } from 'playwright-core';
import { configFromEnv } from '../../app/config.js';
import { startSystem } from '../../app/threaded-system.js';
import { abuseLimitsFor } from '../limits/abuse-limits.js';
import { paymentWebhookRoute } from '../payment-callbacks.js';
import { securityHeaders } from '../security-headers.js';
import { pageRoutes } from './index.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const SCREENSHOTS = fileURLToPath(new URL('../../../../../test-results/conference/', import.meta.url));

function isCi(env: NodeJS.ProcessEnv): boolean {
  const ci = env.CI;
  return ci !== undefined && ci !== '' && ci !== '0' && ci.toLowerCase() !== 'false';
}

function chromiumMissing(): string | false {
  try {
    accessSync(CHROMIUM, constants.X_OK);
    return false;
  } catch {
    return `Chromium is not installed at ${CHROMIUM} (apt-get install -y --no-install-recommends chromium)`;
  }
}

const skip = chromiumMissing();
if (skip && isCi(process.env)) throw new Error(`${skip} (CI=true: the browser test is required)`);

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true, timeout: 10_000 });
}

async function heading(page: Page, text: string): Promise<void> {
  await page.getByRole('heading', { name: text, exact: true }).first().waitFor({ timeout: 10_000 });
}

describe('the conference web sites in Chromium', { skip }, () => {
  test('an owner publishes a conference; a registrant orders, pays, finds the order and assigns a seat', {
    timeout: 120_000,
  }, async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    const directory = mkdtempSync(join(tmpdir(), 'conference-browser-'));
    // As `npm start` runs it: the background parts in a worker thread.
    const system = await startSystem(configFromEnv({ STRATUS_DATA_DIR: directory }));
    const app = Fastify({ logger: false });
    let browser: Browser | undefined;
    let page: Page | undefined;
    // The browser enforces the app's Content-Security-Policy: anything it refuses is reported on the console.
    const refusals: string[] = [];
    try {
      securityHeaders(app);
      await app.register(pageRoutes, { system });
      // The simulated processor calls the app back at the API's webhook.
      await app.register(async (scope) => paymentWebhookRoute(scope, system, abuseLimitsFor(system)));
      const address = await app.listen({ host: '127.0.0.1', port: 0 });
      browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 30_000 });
      const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
      page = await context.newPage();
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) refusals.push(message.text());
      });
      page.setDefaultTimeout(10_000);
      page.setDefaultNavigationTimeout(15_000);
      const slug = `browser_${Date.now().toString(36)}`;

      // (1) The owner creates the conference, sees its access code, configures two seat types and publishes it.
      await page.goto(`${address}/manage`);
      await heading(page, 'Contoso Conference Management Portal');
      await page.getByRole('link', { name: 'Create Conference' }).click();
      await heading(page, 'Create Conference');
      const fields: Record<string, string> = {
        ownerName: 'Olga Owner',
        ownerEmail: 'olga@example.com',
        slug,
        name: 'Browser Summit',
        tagline: 'Pages in a real browser',
        location: 'Lisbon',
        twitterSearch: '#browser',
        description: 'Two days of server-rendered pages.',
        startDate: '2027-06-01',
        endDate: '2027-06-02',
      };
      for (const [name, value] of Object.entries(fields)) await page.locator(`#${name}`).fill(value);
      await page.getByRole('button', { name: 'Save conference' }).click();
      await heading(page, 'Conference details');
      const accessCode = (await page.locator('#access-code').textContent())?.trim() ?? '';
      assert.match(accessCode, /^\w{6}$/, 'the owner sees the access code');
      // Signed in by a cookie: the access code is in no URL.
      assert.ok(page.url().endsWith(`/manage/${slug}`));
      await shot(page, '01-owner-conference-created');

      await page.getByRole('link', { name: 'Configure seats' }).click();
      await heading(page, 'Seat types');
      for (const [name, description, quantity, price] of [
        ['General', 'Both days', '100', '199.00'],
        ['Workshop', 'Hands-on day', '20', '50.00'],
      ] as const) {
        await page.locator('#name').fill(name);
        await page.locator('#description').fill(description);
        await page.locator('#quantity').fill(quantity);
        await page.locator('#price').fill(price);
        await page.locator('#create-seat').click();
        await page.locator('#seat-types').getByRole('link', { name }).waitFor();
      }
      await shot(page, '02-owner-seat-types');
      await page.getByRole('link', { name: 'Back to the conference' }).click();
      await page.locator('#publish').click();
      await page.locator('#publish-status', { hasText: /^Published$/ }).waitFor();
      await shot(page, '03-owner-published');

      // The public page reads the views: wait (bounded) until they count the published seats.
      const counted = await system.waitFor(async () => {
        const view = await system.queries.conferenceBySlug(slug);
        return view?.isPublished &&
          view.seatTypes.length === 2 &&
          view.seatTypes.every((seat) => seat.available === seat.quantity)
          ? true
          : undefined;
      }, 10_000);
      assert.equal(counted, true, 'the published seats reached the views');

      // (2) A registrant orders two general seats and one workshop seat.
      await page.goto(`${address}/${slug}`);
      await heading(page, 'Browser Summit');
      await page.getByRole('link', { name: 'Register', exact: true }).click();
      await heading(page, 'Register to Browser Summit');
      await page.getByLabel('Quantity of General').selectOption('2');
      await page.getByLabel('Quantity of Workshop').selectOption('1');
      await shot(page, '04-registrant-choose-seats');
      await page.locator('#Next').click();

      // Checkout: the priced order and a live countdown.
      await heading(page, 'Registrant details');
      assert.equal((await page.locator('#order-total').textContent())?.trim(), '448.00');
      await page.locator('#countdown[data-live="true"]').waitFor();
      const countdown = page.locator('#countdown .countdown-time').first();
      const first = (await countdown.textContent()) ?? '';
      assert.match(first, /^1[45]:\d\d$/);
      // The script counts down: the time shown changes within a few seconds.
      await page
        .locator('#countdown .countdown-time', { hasNotText: new RegExp(`^${first}$`) })
        .first()
        .waitFor({ timeout: 5_000 });
      assert.match(
        (await page.locator('#countdown').textContent()) ?? '',
        /Please complete registration within .* minutes\. After .* minutes, the reservation we're holding will be released to others\./s,
      );
      await page.locator('#firstName').fill('Ann');
      await page.locator('#lastName').fill('Lee');
      await page.locator('#email').fill('ann@example.com');
      await page.locator('#confirmEmail').fill('ann@example.com');
      await shot(page, '05-registrant-checkout');
      await page.locator('#Next').click();

      // The simulated payment processor.
      await heading(page, 'Simulated Third-party Payment Clearing Processor');
      assert.equal(
        (await page.locator('#item-name').textContent())?.trim(),
        'Registration for Browser Summit',
      );
      assert.equal((await page.locator('#item-amount').textContent())?.trim(), '448.00');
      await shot(page, '06-payment-processor');
      await page.getByRole('button', { name: 'Accept' }).click();

      // Thank you, with the order's access code.
      await heading(page, 'Thank you');
      await page.getByText('You have successfully submitted your registration!').waitFor();
      const orderCode = (await page.locator('#access-code').textContent())?.trim() ?? '';
      assert.match(orderCode, /^\w{6}$/);
      await shot(page, '07-thank-you');

      // Find the order by e-mail and access code, then assign a seat.
      await page.goto(`${address}/${slug}/order/find`);
      await heading(page, 'Locate registration');
      await page.locator('#email').fill('ann@example.com');
      await page.locator('#accessCode').fill(orderCode);
      await page.locator('#find').click();
      await heading(page, 'Registration details');
      await page.locator('#order-status', { hasText: 'confirmed' }).waitFor();
      await shot(page, '08-registration-details');
      await page.getByRole('link', { name: 'Assign seats to attendees' }).click();
      await heading(page, 'Assign Seats');
      await page.getByLabel('First name of seat 1').fill('Bob');
      await page.getByLabel('Last name of seat 1').fill('Ray');
      await page.getByLabel('Email of seat 1').fill('bob@example.com');
      await shot(page, '09-assign-seats');
      await page.locator('#Next').click();
      await heading(page, 'Registration details');
      await page.locator('#attendees').getByText('Bob Ray <bob@example.com>').waitFor();
      await shot(page, '10-seat-assigned');
      assert.deepEqual(refusals, [], 'the pages keep to their Content-Security-Policy');
    } catch (error) {
      if (page !== undefined) await shot(page, 'failure').catch(() => {});
      throw error;
    } finally {
      await browser?.close();
      await app.close();
      await system.stop();
      rmSync(directory, { recursive: true, force: true, maxRetries: 10 });
    }
  });
});
