/**
 * The routes of a Fastify app read from its route table (`app.printRoutes({ commonPrefix: false })`), for the routes
 * no OpenAPI document lists (the web sites' pages and forms). Fastify keeps no list of its own once the routes are
 * registered, and an onRoute hook would have to be added before them.
 */

export interface Route {
  readonly method: string;
  /** Fastify style: `/:slug/order/:orderId`. */
  readonly url: string;
}

/** Tree lines: the indentation (4 characters a level), the branch, the node's part of the path, its methods. */
const LINE = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/;

export function routeTable(printed: string): Route[] {
  const parts: string[] = [];
  const routes: Route[] = [];
  for (const line of printed.split('\n')) {
    const match = LINE.exec(line);
    if (match === null) continue;
    const [, indentation = '', part = '', methods] = match;
    parts.length = indentation.length / 4;
    parts.push(part);
    const url = parts.join('');
    for (const method of methods?.split(', ') ?? []) routes.push({ method, url });
  }
  return routes;
}
