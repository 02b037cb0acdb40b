/**
 * `POST /api/session` (sign in), `GET /api/session`, `DELETE /api/session`.
 * Signing in keeps the sandbox of the current (guest) session and names it;
 * without a session it creates a new sandbox. The token is rotated at sign-in.
 */
import type { Context } from "hono";
import { z } from "zod";
import type { Deps } from "../../deps.ts";
import { HttpError } from "../../kit/http/errors.ts";
import { parseOr400, readJson, text } from "../../kit/http/validate.ts";
import {
  clearSessionCookie,
  useSession,
} from "../../kit/http/session_middleware.ts";
import { createSandbox, renameSandbox } from "../../services/sandboxes.ts";

export const signInSchema = z.object({
  name: text().trim().min(1, "required").max(80, "at most 80 characters"),
}).strict();

/**
 * Signs in as `name`; shared by the JSON API and the sign-in form. `name`
 * must be validated already (signInSchema): the sandbox is created or
 * renamed here.
 */
export async function signIn(c: Context, deps: Deps, name: string) {
  const current = c.get("session");
  let created;
  if (current) {
    await renameSandbox(deps.sql, current.sandboxId, name);
    created = await deps.sessions.rotate(current, name);
  } else {
    const sandboxId = await createSandbox(deps.sql, name);
    created = await deps.sessions.create(sandboxId, name);
  }
  useSession(c, created);
  deps.log.info("signed_in", { sandboxId: created.session.sandboxId });
  return created.session;
}

export function sessionRoutes(deps: Deps) {
  return {
    create: async (c: Context) => {
      const { name } = parseOr400(signInSchema, await readJson(c.req.raw));
      const session = await signIn(c, deps, name);
      return c.json({ sandboxId: session.sandboxId, name: session.name }, 201);
    },
    read: (c: Context) => {
      const session = c.get("session");
      if (!session) throw new HttpError(401, "not signed in");
      return c.json({
        sandboxId: session.sandboxId,
        name: session.name,
        csrfToken: session.csrfToken,
      });
    },
    remove: async (c: Context) => {
      const session = c.get("session");
      if (session) await deps.sessions.end(session);
      clearSessionCookie(c);
      return c.body(null, 204);
    },
  };
}

/** The session, or 401. */
export function requireSession(c: Context) {
  const session = c.get("session");
  if (!session) throw new HttpError(401, "sign in first");
  return session;
}

/**
 * The session, or a new guest session with a sandbox of its own. Call it
 * once the request is validated, never before: a guest's sandbox and
 * session are committed here and the cookie is set, which a later 400
 * would not undo.
 */
export async function ensureSession(c: Context, deps: Deps) {
  const session = c.get("session");
  if (session) return session;
  const sandboxId = await createSandbox(deps.sql, "guest");
  const created = await deps.sessions.create(sandboxId, null);
  useSession(c, created);
  return created.session;
}
