/**
 * 5: the functions the backend calls plan their statements once per connection (`plan_cache_mode =
 * force_generic_plan`, as entryPoint now declares for the functions created from here on). They are the ones that
 * already turn sequential scans off, found by that setting so that every overload is covered.
 */
export function genericPlansMigration(schema: string): string {
  return `
DO $$
DECLARE
  f regprocedure;
BEGIN
  FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
    WHERE p.pronamespace = '"${schema}"'::regnamespace AND 'enable_seqscan=off' = ANY (p.proconfig)
  LOOP
    EXECUTE format('ALTER FUNCTION %s SET plan_cache_mode = force_generic_plan', f);
  END LOOP;
END
$$;`;
}
