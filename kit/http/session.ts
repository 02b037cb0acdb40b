/**
 * Server-side sessions. The cookie holds a random 256-bit token; the store
 * keeps its SHA-256 with the sandbox, the name and a CSRF token. Sessions end
 * at sign-out, at rotation (sign-in issues a new token), or after
 * `idleMinutes` without a request.
 */
import type { Sql } from "../../lib/db/connect.ts";
import { sha256Hex } from "../../lib/hash.ts";

export interface Session {
  /** SHA-256 of the cookie token, hex; never sent to the browser. */
  id: string;
  sandboxId: string;
  /** Null for a guest. */
  name: string | null;
  csrfToken: string;
}

export class SessionStore {
  #onEnd = new Set<(session: Session) => void>();

  constructor(readonly sql: Sql, readonly idleMinutes = 120) {}

  /**
   * Calls `listener` after this store ends a session (sign-out, rotation),
   * e.g. to close what the session still holds open. Returns a function
   * that removes the listener.
   */
  onEnd(listener: (session: Session) => void): () => void {
    this.#onEnd.add(listener);
    return () => this.#onEnd.delete(listener);
  }

  /** A new session in `sandboxId`; returns the cookie token and the session. */
  async create(
    sandboxId: string,
    name: string | null,
  ): Promise<{ token: string; session: Session }> {
    const token = randomToken();
    const session = {
      id: await sha256Hex(token),
      sandboxId,
      name,
      csrfToken: randomToken(),
    };
    await this.sql`
      insert into platform.sessions (id, tenant_id, name, csrf_token)
      values (${session.id}, ${sandboxId}, ${name}, ${session.csrfToken})`;
    return { token, session };
  }

  /** The live session of a cookie token, touched; null when none. */
  async get(token: string | undefined): Promise<Session | null> {
    if (!token || !/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
    const [row] = await this.sql<
      {
        id: string;
        tenant_id: string;
        name: string | null;
        csrf_token: string;
      }[]
    >`
      update platform.sessions set last_seen_at = now()
       where id = ${await sha256Hex(token)} and ${this.#isLive()}
      returning id, tenant_id, name, csrf_token`;
    return row
      ? {
        id: row.id,
        sandboxId: row.tenant_id,
        name: row.name,
        csrfToken: row.csrf_token,
      }
      : null;
  }

  /**
   * Which of the sessions `ids` are live (not ended, not idle too long),
   * without touching them: for what a session holds open, such as its
   * event streams, when it may have ended elsewhere (another process, the
   * daily wipe).
   */
  async live(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.sql<{ id: string }[]>`
      select id from platform.sessions
       where id = any(${ids}::text[]) and ${this.#isLive()}`;
    return new Set(rows.map((r) => r.id));
  }

  /** A session row that still works: not ended, not idle too long. */
  #isLive() {
    return this.sql`ended_at is null
      and last_seen_at > now() - ${this.idleMinutes} * interval '1 minute'`;
  }

  /** Ends a session and opens a new one in the same sandbox (sign-in). */
  async rotate(old: Session, name: string | null) {
    await this.end(old);
    return await this.create(old.sandboxId, name);
  }

  /** Ends a session: its cookie never works again. */
  async end(session: Session) {
    await this.sql`update platform.sessions set ended_at = now()
                    where id = ${session.id} and ended_at is null`;
    for (const listener of this.#onEnd) listener(session);
  }
}

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(
    /\//g,
    "_",
  )
    .replace(/=+$/, "");
}
