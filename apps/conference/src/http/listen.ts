/** Listening on a configured port, with a port that cannot be had reported as the setting to change. */
import type { AddressInfo } from 'node:net';
import { StratusError } from '@stratus/core';
import type { FastifyInstance } from 'fastify';

/** The port a setting names is taken, or not this user's to take. */
export class PortUnavailableError extends StratusError {
  readonly setting: string;
  readonly port: number;
  constructor(setting: string, port: number, reason: string) {
    super(
      'ERR_CONFERENCE_PORT_UNAVAILABLE',
      `${setting}=${port}: the port is ${reason}; set ${setting} to a free port`,
    );
    this.setting = setting;
    this.port = port;
  }
}

const REASONS: Readonly<Record<string, string>> = {
  EADDRINUSE: 'in use',
  EACCES: 'not open to this user',
  EADDRNOTAVAIL: 'not on this host',
};

/** Listens on `port` (0: any free one); resolves with the port it got. */
export async function listenOn(
  app: FastifyInstance,
  options: { readonly port: number; readonly host: string; readonly setting: string },
): Promise<number> {
  try {
    await app.listen({ port: options.port, host: options.host });
  } catch (error) {
    const reason = REASONS[(error as NodeJS.ErrnoException).code ?? ''];
    if (reason === undefined) throw error;
    throw new PortUnavailableError(options.setting, options.port, reason);
  }
  return (app.server.address() as AddressInfo).port;
}
