import pg from 'pg';

type Parse = (value: string) => unknown;

function tagged(type: string): Parse {
  return (value) => `${type} ${value}`;
}

function refused(type: string): Parse {
  return () => {
    throw new Error(`${type} parsed by pg's process-wide parser`);
  };
}

/**
 * The types Stratus's adapters read, each parsed wrongly: into a string tagged with the type's name, or (json and
 * jsonb) into an error. Libraries really make int8 a BigInt, but Number() reads a BigInt correctly and would hide a
 * query that went through these parsers; text and uuid, which pg leaves as they are, are here for the same reason.
 */
const HOSTILE: readonly (readonly [oid: number, parse: Parse])[] = [
  [16, tagged('bool')],
  [17, tagged('bytea')],
  [20, tagged('int8')],
  [21, tagged('int2')],
  [23, tagged('int4')],
  [25, tagged('text')],
  [114, refused('json')],
  [700, tagged('float4')],
  [701, tagged('float8')],
  [1009, tagged('text[]')],
  [1700, tagged('numeric')],
  [2950, tagged('uuid')],
  [3802, refused('jsonb')],
];

/**
 * Runs `body` while pg's process-wide type parsers (pg.types.setTypeParser) read every common type wrongly, then
 * puts pg's own back: a test of an adapter that must not depend on them runs its reads inside and compares.
 */
export async function withHostilePgTypes<T>(body: () => Promise<T>): Promise<T> {
  const saved = HOSTILE.map(([oid]) => [oid, pg.types.getTypeParser(oid, 'text')] as const);
  try {
    for (const [oid, parse] of HOSTILE) pg.types.setTypeParser(oid, 'text', parse);
    return await body();
  } finally {
    for (const [oid, parse] of saved) pg.types.setTypeParser(oid, 'text', parse);
  }
}
