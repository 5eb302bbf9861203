/**
 * The operations of an OpenAPI 3 document as a fuzzer needs them: method, path template, parameters (path-level and
 * operation-level, `$ref`s followed), the request body's media types and schemas, and whether a bearer token is
 * asked for. Schemas keep their `$ref`s; `resolve` follows one (local references only: `#/...`).
 */
import type { JsonSchema } from '../schemas/json-schema.js';

export interface OpenApiParameter {
  readonly name: string;
  readonly in: 'path' | 'query' | 'header' | 'cookie';
  readonly required: boolean;
  readonly schema: JsonSchema;
}

export interface OpenApiOperation {
  /** The operationId, else `METHOD path`. */
  readonly id: string;
  /** Upper case. */
  readonly method: string;
  /** OpenAPI style: `/api/orders/{orderId}`. */
  readonly path: string;
  readonly parameters: readonly OpenApiParameter[];
  /** The request body's schema by media type (empty: no body). */
  readonly body: ReadonlyMap<string, JsonSchema>;
  /** An HTTP bearer scheme secures it. */
  readonly bearer: boolean;
}

export interface OpenApiDocument {
  readonly operations: readonly OpenApiOperation[];
  /** The schema a `$ref` points at (followed until there is none); other schemas as they are. */
  resolve(schema: JsonSchema): JsonSchema;
}

/** An OpenAPI document was not what this reader takes. */
export class OpenApiDocumentError extends Error {}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

type Json = Readonly<Record<string, unknown>>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null;

export function readOpenApi(document: unknown): OpenApiDocument {
  if (!isObject(document) || typeof document.openapi !== 'string' || !document.openapi.startsWith('3.'))
    throw new OpenApiDocumentError('Not an OpenAPI 3 document.');

  function pointed(ref: string): unknown {
    if (!ref.startsWith('#/')) throw new OpenApiDocumentError(`Only local references are followed: ${ref}`);
    let node: unknown = document;
    for (const part of ref.slice(2).split('/')) {
      const key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
      node = isObject(node) ? node[key] : undefined;
    }
    if (node === undefined) throw new OpenApiDocumentError(`Nothing at ${ref}`);
    return node;
  }

  function follow(node: unknown): Json {
    let current = node;
    for (let hops = 0; isObject(current) && typeof current.$ref === 'string'; hops++) {
      if (hops > 32) throw new OpenApiDocumentError('A reference loops.');
      current = pointed(current.$ref);
    }
    return isObject(current) ? current : {};
  }

  const schemes = isObject(document.components) ? follow(document.components.securitySchemes) : {};
  const isBearer = (requirements: unknown) =>
    Array.isArray(requirements) &&
    requirements.some(
      (requirement) =>
        isObject(requirement) &&
        Object.keys(requirement).some((name) => {
          const scheme = follow(schemes[name]);
          return scheme.type === 'http' && String(scheme.scheme).toLowerCase() === 'bearer';
        }),
    );

  const parameter = (node: unknown): OpenApiParameter => {
    const json = follow(node);
    return {
      name: String(json.name),
      in: json.in as OpenApiParameter['in'],
      required: json.required === true,
      schema: (isObject(json.schema) ? json.schema : {}) as JsonSchema,
    };
  };

  const operations: OpenApiOperation[] = [];
  for (const [path, itemNode] of Object.entries(isObject(document.paths) ? document.paths : {})) {
    const item = follow(itemNode);
    const shared = Array.isArray(item.parameters) ? item.parameters.map(parameter) : [];
    for (const method of METHODS) {
      const operation = item[method];
      if (!isObject(operation)) continue;
      const own = Array.isArray(operation.parameters) ? operation.parameters.map(parameter) : [];
      const overridden = (p: OpenApiParameter) => own.some((o) => o.name === p.name && o.in === p.in);
      const content = follow(operation.requestBody).content;
      const body = new Map<string, JsonSchema>();
      for (const [type, media] of Object.entries(isObject(content) ? content : {}))
        body.set(type, (isObject(media) && isObject(media.schema) ? media.schema : {}) as JsonSchema);
      operations.push({
        id:
          typeof operation.operationId === 'string'
            ? operation.operationId
            : `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        parameters: [...shared.filter((p) => !overridden(p)), ...own],
        body,
        bearer: isBearer(operation.security ?? document.security),
      });
    }
  }
  return { operations, resolve: (schema) => follow(schema) as JsonSchema };
}
