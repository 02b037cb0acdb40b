/**
 * Real answers against the OpenAPI document (routes/api/openapi.ts): the
 * body of an answer must be valid under the schema the document gives for
 * its method, path and status, checked by Ajv (JSON Schema 2020-12, the
 * dialect of OpenAPI 3.1), with its formats (date-time, uuid, email). A
 * status the document does not list for the operation fails too. So a field
 * the document has and the answer lacks, or the reverse, fails the test
 * that got the answer, whichever of the two drifted.
 *
 * tests/_app.ts's Client checks every JSON answer with this when it is made
 * with `checkAnswers`, or for every client when TEST_OPENAPI=on.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { bakeryOpenApi } from "../routes/api/openapi.ts";

/** TEST_OPENAPI=on: every test client checks every JSON answer it gets. */
export const CHECK_EVERY_ANSWER = Deno.env.get("TEST_OPENAPI") === "on";

interface Doc {
  paths: Record<string, Record<string, Operation>>;
}
interface Operation {
  responses: Record<string, { content?: Record<string, unknown> }>;
}

const DOC_ID = "openapi.json";

let checker: { ajv: Ajv2020; doc: Doc; routes: Route[] } | undefined;

interface Route {
  path: string;
  pattern: RegExp;
}

function load() {
  if (checker) return checker;
  const doc = structuredClone(bakeryOpenApi()) as unknown as Doc;
  // strict off: the document's own keywords (paths, responses) are not
  // JSON Schema, and Ajv reads the schemas inside it by JSON pointer.
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema({ $id: DOC_ID, ...doc }, DOC_ID);
  // Literal segments before parameters: `/dead-letters/redrive` is not
  // `/dead-letters/{id}` with id "redrive".
  const params = (path: string) => path.split("{").length;
  const routes = Object.keys(doc.paths)
    .sort((a, b) => params(a) - params(b))
    .map((path) => ({
      path,
      pattern: new RegExp(
        `^${
          path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(
            /\{[^}]+\}/g,
            "[^/]+",
          )
        }$`,
      ),
    }));
  return checker = { ajv, doc, routes };
}

/** The document's path that `path` (a concrete one, query and all) is of. */
export function documentPathOf(path: string): string | undefined {
  const bare = new URL(path, "http://x").pathname;
  return load().routes.find((r) => r.pattern.test(bare))?.path;
}

/** `/api/orders/{orderId}` → `~1api~1orders~1{orderId}` (JSON pointer). */
const pointer = (s: string) => s.replaceAll("~", "~0").replaceAll("/", "~1");

/**
 * Throws, naming the operation and every mismatch, unless `body` is what the
 * document says `method path` answers with `status`. A path that no route
 * of the document has is held to the error shape when it failed (the app's
 * 404 of an unknown path), and is an error when it did not.
 *
 * @example
 * ```ts
 * const { status, body } = await client.json("GET", "/api/menu");
 * assertAnswerDocumented("GET", "/api/menu", status, body);
 * ```
 */
export function assertAnswerDocumented(
  method: string,
  path: string,
  status: number,
  body: unknown,
): void {
  const { ajv, doc } = load();
  const what = `${method} ${path} answered ${status}`;
  const template = documentPathOf(path);
  const op = template ? doc.paths[template][method.toLowerCase()] : undefined;
  let ref: string;
  if (!op) {
    if (status < 400) {
      throw new Error(`${what}, and the document has no such operation`);
    }
    ref = `${DOC_ID}#/components/schemas/Error`;
  } else {
    const answer = op.responses[String(status)];
    if (!answer) {
      throw new Error(
        `${what}: the document lists only ${
          Object.keys(op.responses).join(", ")
        } for ${method} ${template}`,
      );
    }
    if (!answer.content?.["application/json"]) {
      if (body === null) return;
      throw new Error(`${what} with a body the document has no JSON for`);
    }
    ref = `${DOC_ID}#/paths/${pointer(template!)}/${method.toLowerCase()}` +
      `/responses/${status}/content/application~1json/schema`;
  }
  const validate = ajv.getSchema(ref);
  if (!validate) throw new Error(`${what}: the document has no ${ref}`);
  if (!validate(body)) {
    throw new Error(
      `${what}, not as the document says: ${
        ajv.errorsText(validate.errors, { dataVar: "body" })
      }; body: ${JSON.stringify(body).slice(0, 500)}`,
    );
  }
}
