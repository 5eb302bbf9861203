// What `npm start` shows on a terminal: where to go, and log lines a person reads. Off a terminal the process keeps
// pino's JSON lines, which log collectors parse.

const LEVELS: Record<number, string> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
};
/** pino's own fields, shown as the line's time, level and message rather than as key=value pairs. */
const OWN_FIELDS = new Set(['level', 'time', 'msg', 'pid', 'hostname']);

/** One pino JSON line as `HH:MM:SS level message key=value ...`; a line that is not JSON comes back unchanged. */
export function formatLogLine(line: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (record === null || typeof record !== 'object') return line;
  const time =
    typeof record.time === 'number' ? new Date(record.time).toISOString().slice(11, 19) : '--:--:--';
  const level = (LEVELS[record.level as number] ?? String(record.level)).padEnd(5);
  const fields = Object.entries(record)
    .filter(([key]) => !OWN_FIELDS.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  return [time, level, String(record.msg ?? ''), ...fields].join(' ').trimEnd();
}

/** A pino destination that writes each record as formatLogLine does. */
export function terminalDestination(out: { write(text: string): unknown }): { write(chunk: string): void } {
  return {
    write(chunk) {
      for (const line of chunk.split('\n')) if (line !== '') out.write(`${formatLogLine(line)}\n`);
    },
  };
}

/** The addresses printed once the server listens; `host` 0.0.0.0 or :: is shown as localhost. */
export function whereToGo(host: string, port: number): string {
  const shown = host === '0.0.0.0' || host === '::' || host === '' ? 'localhost' : host;
  const base = `http://${shown.includes(':') ? `[${shown}]` : shown}:${port}`;
  return [
    'Conference Management System is running:',
    `  public site   ${base}/`,
    `  owner site    ${base}/manage`,
    `  JSON API      ${base}/api  (OpenAPI: ${base}/api/openapi.json)`,
    `  health        ${base}/health/ready`,
    `  metrics       ${base}/metrics`,
    'Ctrl-C stops it.',
    '',
  ].join('\n');
}
