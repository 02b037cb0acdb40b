/**
 * An OpenAPI 3.1 document from zod schemas, with zod 4's own JSON Schema
 * output (`z.toJSONSchema`, draft 2020-12, the dialect OpenAPI 3.1 uses):
 * the schemas that validate a request are the ones the document shows, and
 * no second description can drift from them. Knows nothing of the app: the
 * caller lists its operations by `"METHOD /path"` as Hono writes paths
 * (`/orders/:id`).
 *
 * A schema given with a name (`named("Order", schema)`) becomes
 * `#/components/schemas/Order` and is referred to wherever it is used; one
 * without a name is written inline. Request bodies and parameters are
 * described as zod reads them (`io: "input"`), answers as zod writes them
 * (`io: "output"`), so a transform shows on the side where it applies.
 */
import { z } from "zod";

/** A schema with the component name it is published under. */
export interface Named {
  name: string;
  schema: z.ZodType;
}

/**
 * Names `schema` for the document's `components.schemas`.
 *
 * @example
 * ```ts
 * const answer = { 200: { description: "the menu", body: named("Menu", menuSchema) } };
 * ```
 */
export function named(name: string, schema: z.ZodType): Named {
  return { name, schema };
}

type Body = z.ZodType | Named;

/** One answer of an operation. */
export interface Answer {
  description: string;
  /** The JSON body; none for a bodiless answer (204). */
  body?: Body;
  /** Another media type than JSON, e.g. `text/event-stream`. */
  contentType?: string;
  headers?: Record<string, string>;
}

/** One operation: what it takes and every answer it gives. */
export interface Operation {
  summary: string;
  description?: string;
  tags: string[];
  /** Security requirements, as OpenAPI lists them; none: open to all. */
  security?: Record<string, string[]>[];
  /** Schemas of the path's `:params`; a param not listed is a string. */
  params?: Record<string, z.ZodType>;
  query?: z.ZodObject;
  /** Request headers the operation reads, with what each is for. */
  headers?: Record<string, { description: string; required?: boolean }>;
  body?: { schema: Body; required?: boolean; contentType?: string };
  answers: Record<number, Answer>;
}

export interface DocumentOptions {
  info: { title: string; version: string; description?: string };
  tags?: { name: string; description: string }[];
  securitySchemes?: Record<string, unknown>;
  operations: Record<string, Operation>;
}

type Json = Record<string, unknown>;

/** `/orders/:id` as OpenAPI writes it: `/orders/{id}`. */
export function openApiPath(honoPath: string): string {
  return honoPath.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}

/** The document's key of an operation: `"GET /orders/:id"` → path, method. */
function splitKey(key: string): [method: string, path: string] {
  const [method, path] = key.split(" ");
  if (!method || !path?.startsWith("/")) {
    throw new TypeError(`an operation key is "METHOD /path", not ${key}`);
  }
  return [method.toLowerCase(), path];
}

/**
 * Collects named schemas into one registry per direction; the same name for
 * two different schemas is a mistake that would make one of them invisible.
 */
class Components {
  readonly input = z.registry<{ id: string }>();
  readonly output = z.registry<{ id: string }>();
  #byName = new Map<string, z.ZodType>();

  /** A `$ref` for a named schema, or the inline JSON Schema of a bare one. */
  ref(body: Body, io: "input" | "output"): Json {
    if (body instanceof z.ZodType) return inline(body, io);
    const { name, schema } = body;
    const seen = this.#byName.get(name);
    if (seen && seen !== schema) {
      throw new TypeError(`two different schemas are named ${name}`);
    }
    this.#byName.set(name, schema);
    const registry = io === "input" ? this.input : this.output;
    if (!registry.has(schema)) registry.add(schema, { id: name });
    return { $ref: `#/components/schemas/${name}` };
  }

  schemas(): Json {
    const all: Json = {};
    for (const io of ["input", "output"] as const) {
      const { schemas } = z.toJSONSchema(this[io], {
        io,
        uri: (id) => `#/components/schemas/${id}`,
        // A refinement (a menu lookup, a NUL check) has no JSON Schema form;
        // the document says what the type is, the route says the rest.
        unrepresentable: "any",
      });
      for (const [id, schema] of Object.entries(schemas)) {
        all[id] = bare(schema as Json);
      }
    }
    return all;
  }
}

/**
 * A JSON Schema without the `$schema` and `$id` that zod puts on a whole
 * document: inside OpenAPI the dialect is the document's, and an `$id` of
 * `#/...` would be a fragment, which 2020-12 forbids.
 */
function bare(schema: Json): Json {
  const { $schema: _, $id: __, ...rest } = schema;
  return rest;
}

function inline(schema: z.ZodType, io: "input" | "output"): Json {
  return bare(
    z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Json,
  );
}

function parameters(op: Operation, path: string): Json[] {
  const list: Json[] = [];
  for (const [, name] of path.matchAll(/:([A-Za-z0-9_]+)/g)) {
    const schema = op.params?.[name];
    list.push({
      name,
      in: "path",
      required: true,
      schema: schema ? inline(schema, "input") : { type: "string" },
    });
  }
  if (op.query) {
    const json = inline(op.query, "input") as {
      properties?: Record<string, Json>;
      required?: string[];
    };
    for (const [name, schema] of Object.entries(json.properties ?? {})) {
      const { description, ...rest } = schema;
      list.push({
        name,
        in: "query",
        required: json.required?.includes(name) ?? false,
        ...(description ? { description } : {}),
        schema: rest,
      });
    }
  }
  for (const [name, h] of Object.entries(op.headers ?? {})) {
    list.push({
      name,
      in: "header",
      required: h.required ?? false,
      description: h.description,
      schema: { type: "string" },
    });
  }
  return list;
}

/** `"GET /api/orders/:orderId"` → `getApiOrdersByOrderId`. */
function operationId(key: string): string {
  const [method, path] = splitKey(key);
  const cap = (w: string) => w[0].toUpperCase() + w.slice(1);
  const words = path.split(/[^A-Za-z0-9:]+/).filter(Boolean).map((w) =>
    w.startsWith(":") ? `By${cap(w.slice(1))}` : cap(w)
  );
  return method + words.join("");
}

function operationObject(
  key: string,
  op: Operation,
  path: string,
  components: Components,
): Json {
  const responses: Json = {};
  for (const [status, answer] of Object.entries(op.answers)) {
    const headers = Object.fromEntries(
      Object.entries(answer.headers ?? {}).map(([name, description]) => [
        name,
        { description, schema: { type: "string" } },
      ]),
    );
    const type = answer.contentType ?? "application/json";
    responses[status] = {
      description: answer.description,
      ...(answer.headers ? { headers } : {}),
      ...(answer.body || answer.contentType
        ? {
          content: {
            [type]: {
              schema: answer.body
                ? components.ref(answer.body, "output")
                : { type: "string" },
            },
          },
        }
        : {}),
    };
  }
  const params = parameters(op, path);
  return {
    operationId: operationId(key),
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    tags: op.tags,
    ...(op.security ? { security: op.security } : {}),
    ...(params.length ? { parameters: params } : {}),
    ...(op.body
      ? {
        requestBody: {
          required: op.body.required ?? true,
          content: {
            [op.body.contentType ?? "application/json"]: {
              schema: components.ref(op.body.schema, "input"),
            },
          },
        },
      }
      : {}),
    responses,
  };
}

/**
 * The OpenAPI 3.1 document of `options.operations`.
 *
 * @example
 * ```ts
 * const doc = openApiDocument({
 *   info: { title: "Bakery", version: "1" },
 *   operations: {
 *     "GET /api/menu": {
 *       summary: "The menu",
 *       tags: ["storefront"],
 *       answers: { 200: { description: "ok", body: named("Menu", menuSchema) } },
 *     },
 *   },
 * });
 * ```
 */
export function openApiDocument(options: DocumentOptions): Json {
  const components = new Components();
  const paths: Record<string, Json> = {};
  for (const [key, op] of Object.entries(options.operations)) {
    const [method, path] = splitKey(key);
    const item = paths[openApiPath(path)] ??= {};
    if (item[method]) throw new TypeError(`${key} is listed twice`);
    item[method] = operationObject(key, op, path, components);
  }
  return {
    openapi: "3.1.0",
    info: options.info,
    ...(options.tags ? { tags: options.tags } : {}),
    paths,
    components: {
      schemas: components.schemas(),
      ...(options.securitySchemes
        ? { securitySchemes: options.securitySchemes }
        : {}),
    },
  };
}
