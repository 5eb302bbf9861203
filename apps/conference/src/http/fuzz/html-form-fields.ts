/**
 * The fields of a page's forms (inputs, selects, text areas and buttons) with the values the page put in them (a
 * select's: its options), so that a fuzzer posts the names the site reads, with values that get it past "not found"
 * (hidden ids, versions).
 */

const CONTROL = /<(?:input|select|textarea|button)\b[^>]*>/gi;
const ATTRIBUTE = (name: string) => new RegExp(`\\s${name}="([^"]*)"`, 'i');

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" };
const decode = (text: string) =>
  text.replace(/&(amp|lt|gt|quot|#39);/g, (_, entity: string) => ENTITIES[entity] ?? '');

const SELECT = /<select\b[^>]*>([\s\S]*?)<\/select>/gi;
const OPTION = /<option\b[^>]*>/gi;

/** Each field name the page's forms carry, with the values it was given there (a select: its options' values). */
export function htmlFormFields(html: string): Map<string, Set<string>> {
  const fields = new Map<string, Set<string>>();
  for (const [tag] of html.matchAll(CONTROL)) {
    const name = ATTRIBUTE('name').exec(tag)?.[1];
    if (name === undefined) continue;
    const values = fields.get(decode(name)) ?? new Set<string>();
    fields.set(decode(name), values);
    const value = ATTRIBUTE('value').exec(tag)?.[1];
    if (value !== undefined && value !== '') values.add(decode(value));
  }
  for (const [select, options = ''] of html.matchAll(SELECT)) {
    const name = ATTRIBUTE('name').exec(select)?.[1];
    if (name === undefined) continue;
    for (const [option] of options.matchAll(OPTION)) {
      const value = ATTRIBUTE('value').exec(option)?.[1];
      if (value !== undefined) fields.get(decode(name))?.add(decode(value));
    }
  }
  return fields;
}
