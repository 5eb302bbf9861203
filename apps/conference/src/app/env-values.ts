/** Reading typed values from environment variables, failing fast with the variable named. */
import { InvalidOptionsError } from '@stratus/core';

export function positiveSeconds(env: NodeJS.ProcessEnv, name: string, fallbackMs: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallbackMs;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new InvalidOptionsError(name, `expected a positive number of seconds, got ${JSON.stringify(raw)}`);
  return Math.round(seconds * 1000);
}

export function flag(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['true', '1', 'on'].includes(raw)) return true;
  if (['false', '0', 'off'].includes(raw)) return false;
  throw new InvalidOptionsError(name, `expected true or false, got ${JSON.stringify(raw)}`);
}

/** A whole number from `min` to `max`, written in digits. */
export function wholeNumber(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max)
    throw new InvalidOptionsError(
      name,
      `expected a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`,
    );
  return value;
}
