/**
 * How Stratus's PostgreSQL adapters read result columns, given to `pg` with each query (`types`) so that they do
 * not depend on pg's process-wide parsers. Other libraries change those for everyone: Emmett's dumbo makes int8 a
 * BigInt and parses json and jsonb through a reviver (which tripled the client's cost of reading ten events), and
 * applications often set int8 to BigInt. The values are pg's defaults for the types the adapters read; any other
 * type comes back as the text PostgreSQL sent.
 */

/** The shape pg expects for a query's `types`; @stratus/sql does not need `pg` to be installed. */
export interface PostgresTypeParsers {
  getTypeParser(oid: number, format?: string): (value: string) => unknown;
}

const asText = (value: string): string => value;
const asInteger = (value: string): number => Number.parseInt(value, 10);
const asFloat = (value: string): number => Number.parseFloat(value);

/** bytea in either output format the server may be set to (bytea_output): hex, the default, or escape. */
function asBytes(value: string): Buffer {
  if (value.startsWith('\\x')) return Buffer.from(value.slice(2), 'hex');
  // Escape format: `\\` is a backslash, `\` and three octal digits a byte, any other character that byte itself.
  const bytes: number[] = [];
  for (let i = 0; i < value.length; i++) {
    if (value[i] !== '\\') bytes.push(value.charCodeAt(i));
    else if (value[i + 1] === '\\') {
      bytes.push(0x5c);
      i++;
    } else {
      bytes.push(Number.parseInt(value.slice(i + 1, i + 4), 8));
      i += 3;
    }
  }
  return Buffer.from(bytes);
}

const PARSERS = new Map<number, (value: string) => unknown>([
  [16, (value) => value === 't'], // bool
  [17, asBytes], // bytea
  [21, asInteger], // int2
  [23, asInteger], // int4
  [26, asInteger], // oid
  [700, asFloat], // float4
  [701, asFloat], // float8
  [114, JSON.parse], // json
  [3802, JSON.parse], // jsonb
  // int8 and numeric stay text, as pg leaves them: a JavaScript number cannot hold every value.
]);

export const postgresTypes: PostgresTypeParsers = {
  getTypeParser: (oid) => PARSERS.get(oid) ?? asText,
};
