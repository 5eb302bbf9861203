import { randomBytes } from 'node:crypto';
import { InvalidOptionsError } from '@stratus/core';

/** Which payment processor takes the registrants' payments. */
export type PaymentsSetting = 'simulated' | 'off';

export interface PaymentsConfig {
  /**
   * PAYMENTS: `simulated` runs the CQRS Journey's simulated processor (a registrant accepts or refuses their own
   * payment: for demos and tests, never for real money); `off` runs none (paid orders cannot be paid). Default:
   * `simulated` on the embedded default, `off` when scaled out. With NODE_ENV=production the simulated processor is
   * refused unless PAYMENTS_ALLOW_SIMULATED=true.
   */
  readonly payments: PaymentsSetting;
  /**
   * The secret processor callbacks (webhooks) are signed with (PAYMENTS_WEBHOOK_SECRET, at least 32 bytes); without
   * it, one made at random for this process (the simulated processor calls back into the process that runs it).
   */
  readonly paymentsWebhookSecret: string;
}

const MIN_SECRET_BYTES = 32;

/** Reads the payment settings (README: Configuration, Security). */
export function paymentsConfigFromEnv(env: NodeJS.ProcessEnv, scaledOut: boolean): PaymentsConfig {
  const payments = (env.PAYMENTS || (scaledOut ? 'off' : 'simulated')) as PaymentsSetting;
  if (payments !== 'simulated' && payments !== 'off')
    throw new InvalidOptionsError(
      'PAYMENTS',
      `expected simulated or off, got ${JSON.stringify(env.PAYMENTS)}`,
    );
  if (payments === 'simulated' && env.NODE_ENV === 'production' && env.PAYMENTS_ALLOW_SIMULATED !== 'true')
    throw new InvalidOptionsError(
      'PAYMENTS',
      'the simulated processor lets registrants accept their own payments: not with NODE_ENV=production ' +
        '(set PAYMENTS=off, or PAYMENTS_ALLOW_SIMULATED=true for a demo)',
    );
  const secret = env.PAYMENTS_WEBHOOK_SECRET || undefined;
  if (secret !== undefined && Buffer.byteLength(secret, 'utf8') < MIN_SECRET_BYTES)
    throw new InvalidOptionsError('PAYMENTS_WEBHOOK_SECRET', `expected at least ${MIN_SECRET_BYTES} bytes`);
  return { payments, paymentsWebhookSecret: secret ?? randomBytes(32).toString('base64') };
}
