/**
 * `GET /sign-in`, `POST /sign-in` and `POST /sign-out`: how an operator gets
 * into the console and out of it. The JSON twin is `/api/session`.
 *
 * The page's form is an island that posts JSON to `POST /api/session`; its
 * header comment (islands/sign_in_form.tsx) says why that one path serves
 * both a guest with a session and a first-time visitor. `POST /sign-in` is
 * the same form without scripts: the session middleware has already checked
 * its `_csrf` field, which only a visitor with a session can carry.
 */
import type { Context } from "hono";
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { readForm } from "../../kit/http/validate.ts";
import { clearSessionCookie } from "../../kit/http/session_middleware.ts";
import { Layout } from "../../components/layout.tsx";
import { Island } from "../../islands/_registry.ts";
import { signIn, signInSchema } from "../api/session.ts";
import { safeNext } from "./_guard.ts";

function signInPage(
  props: { next: string; csrfToken: string; name?: string; error?: string },
  status = 200,
): Response {
  const response = html(
    <Layout title="Sign in" csrfToken={props.csrfToken || undefined}>
      <section class="panel sign-in" aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">Sign in to the console</h1>
        <p class="muted">
          The console shows your sandbox: your orders, their messages, the fault
          switches and the dead letters. Your name is recorded with every
          redrive and refusal you make.
        </p>
        <Island name="sign_in_form" props={props} />
      </section>
    </Layout>,
    status,
  );
  response.headers.set("cache-control", "no-store");
  return response;
}

/** The sign-in page, the form's no-script path, and sign-out. */
export function signInRoutes(deps: Deps) {
  return {
    /** Already signed in: straight on to `next`. */
    page: (c: Context) => {
      const next = safeNext(c.req.query("next"));
      if (c.get("session")?.name) return c.redirect(next, 303);
      return signInPage({ next, csrfToken: c.get("csrfToken") });
    },
    submit: async (c: Context) => {
      const body = await readForm(c);
      const next = safeNext(body.next);
      const parsed = signInSchema.safeParse({ name: body.name });
      if (!parsed.success) {
        return signInPage({
          next,
          csrfToken: c.get("csrfToken"),
          name: typeof body.name === "string" ? body.name : "",
          error: "Please enter a name of at most 80 characters.",
        }, 400);
      }
      await signIn(c, deps, parsed.data.name);
      return c.redirect(next, 303);
    },
    /** Ends the session (the sandbox stays for the daily wipe). */
    signOut: async (c: Context) => {
      const session = c.get("session");
      if (session) await deps.sessions.end(session);
      clearSessionCookie(c);
      return c.redirect("/sign-in", 303);
    },
  };
}
