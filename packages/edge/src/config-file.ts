import { type FSWatcher, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { GatewayConfigError } from './errors.js';
import type { Gateway } from './gateway.js';

/** Reads a JSON config file; unreadable or malformed, it throws GatewayConfigError naming the file. */
export async function readGatewayConfigFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new GatewayConfigError([`cannot read the file: ${(error as Error).message}`], path);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new GatewayConfigError([`not JSON: ${(error as Error).message}`], path);
  }
}

export interface ConfigWatcher {
  /** Reads the file again now (what SIGHUP does); resolves true when the new config is in force. */
  reload(): Promise<boolean>;
  close(): void;
}

/** How long the file must stay unchanged before it is read: editors write a file in several steps. */
const SETTLE_MS = 50;

/**
 * Applies a config file to a gateway whenever it changes. The directory is watched, not the file, so that editors
 * and deploy tools that replace the file (write elsewhere, rename over it) are seen. A file that cannot be read or
 * parsed, or that the schema refuses, leaves the running config in force and emits `config-rejected`.
 */
export function watchGatewayConfig(gateway: Gateway, path: string): ConfigWatcher {
  const file = resolve(path);
  const name = basename(file);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<boolean> = Promise.resolve(true);
  const reload = (): Promise<boolean> => {
    running = running.then(async () => {
      let value: unknown;
      try {
        value = await readGatewayConfigFile(file);
      } catch (error) {
        gateway.refuse(error as GatewayConfigError, file);
        return false;
      }
      try {
        gateway.reload(value, file);
        return true;
      } catch (error) {
        // reload() has emitted config-rejected for a refused config; anything else is a bug worth seeing.
        if (error instanceof GatewayConfigError) return false;
        throw error;
      }
    });
    const result = running;
    // One failed reload must not stop the next ones.
    running = running.catch(() => false);
    return result;
  };
  const watcher: FSWatcher = watch(dirname(file), { persistent: false }, (_event, changed) => {
    if (changed !== null && changed !== name) return;
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      reload().catch((error: Error) => process.emitWarning(`gateway config reload failed: ${error.message}`));
    }, SETTLE_MS);
  });
  watcher.on('error', () => {});
  return {
    reload,
    close() {
      if (timer !== undefined) clearTimeout(timer);
      watcher.close();
    },
  };
}
