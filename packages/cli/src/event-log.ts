import { once } from 'node:events';
import { logStratusEvents } from '@stratus/resilience';
import { pino } from 'pino';

/** Every Stratus event of the process as a pino JSON line in `path` (appended), until `close()`. */
export async function openEventLog(path: string): Promise<{ close(): Promise<void> }> {
  const destination = pino.destination({ dest: path, append: true, sync: false, mkdir: true });
  await once(destination, 'ready');
  const logger = pino({ level: 'trace', base: { service: 'stratus-demo' } }, destination);
  const subscription = logStratusEvents(logger);
  return {
    async close() {
      subscription.dispose();
      destination.flushSync();
      destination.end();
      await once(destination, 'close');
    },
  };
}
