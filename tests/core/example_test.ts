/**
 * lib/README.md's example (lib/examples/signup.ts) on an empty database:
 * the core's schema and two made-up services, nothing of the app.
 */
import assert from "node:assert/strict";
import { connect } from "../../lib/db/connect.ts";
import { memoryLogger } from "../../lib/log/mod.ts";
import { setUp, signUp } from "../../lib/examples/signup.ts";
import { emptyDatabase } from "./_db.ts";

Deno.test("the README's example runs on a plain database", async () => {
  await emptyDatabase(async (url) => {
    const { logger } = memoryLogger();
    const sql = connect(url, { max: 2 });
    try {
      await setUp(sql, logger);
      // Set up twice, as a program that starts again does.
      await setUp(sql, logger);
      const [{ id }] = await sql<{ id: string }[]>`
        insert into platform.tenants (name) values ('example') returning id`;
      assert.equal(await signUp(url, id, "ada@example.com", logger), 1);
      assert.equal(await signUp(url, id, "alan@example.com", logger), 1);

      const counts = await sql<{ t: string; n: number }[]>`
        select 'emails' as t, count(*)::int as n from mailer.welcome_emails
        union all select 'inbox', count(*)::int from mailer.inbox
         where status = 200
        union all select 'owed', count(*)::int from accounts.outbox
        union all select 'done', count(*)::int from queue.deliveries
         where state = 'done' and subscriber = 'mailer'`;
      assert.deepEqual(
        Object.fromEntries(counts.map((r) => [r.t, r.n])),
        { emails: 2, inbox: 2, owed: 0, done: 2 },
      );
      // Each email was sent by the message its inbox row names.
      const [{ unmatched }] = await sql<{ unmatched: number }[]>`
        select count(*)::int as unmatched from mailer.welcome_emails e
         where not exists (select from mailer.inbox i
                            where i.message_id = e.message_id)`;
      assert.equal(unmatched, 0);
    } finally {
      await sql.end();
    }
  });
});
