/** The upstream's answer to every request: 1 KiB of JSON, as the benchmark asks. */
export const UPSTREAM_BODY = (() => {
  const item = '{"id":12345,"name":"a conference seat","price":99.5}';
  const items: string[] = [];
  const closing = '],"pad":""}';
  while (`{"items":[${[...items, item].join(',')}${closing}`.length <= 1024) items.push(item);
  const text = `{"items":[${items.join(',')}`;
  return `${text}],"pad":"${'x'.repeat(1024 - text.length - closing.length)}"}`;
})();
