import assert from "node:assert/strict";
import { withTestDatabase } from "./_db.ts";
import { createTestServices, RECEIVERS, SENDER } from "./_messaging.ts";
import postgres from "postgres";
import { connect } from "../../lib/db/connect.ts";
import {
  asBookkeeper,
  asService,
  bookkeepingStatement,
  serviceStatement,
} from "../../lib/db/service.ts";

Deno.test("service transactions: bookkeeping commits asynchronously, commands keep the server's setting", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const [server] =
      await sql`select current_setting('synchronous_commit') as v`;
    const inCommand = await asService(
      sql,
      SENDER,
      "workers",
      async ({ sql }) =>
        (await sql`select current_setting('synchronous_commit') as v`)[0].v,
    );
    assert.equal(inCommand, server.v);
    const inBookkeeping = await asBookkeeper(
      sql,
      "queue",
      async ({ sql }) =>
        (await sql`select current_setting('synchronous_commit') as v`)[0].v,
    );
    assert.equal(inBookkeeping, "off");
    // The setting ends with its transaction.
    const [after] =
      await sql`select current_setting('synchronous_commit') as v`;
    assert.equal(after.v, server.v);
  });
});

Deno.test("service transactions: a durable bookkeeping commit keeps synchronous_commit, and the other switches", async () => {
  await withTestDatabase(async ({ url }) => {
    // The test server runs with synchronous_commit off; these sessions on.
    const sql = postgres(url, {
      max: 1,
      onnotice: () => {},
      connection: { synchronous_commit: "on" },
    });
    try {
      const read = (durableCommit: boolean) =>
        bookkeepingStatement(
          sql,
          "queue",
          ({ sql }) =>
            sql<{ sync: string; seqscan: string }[]>`
              select current_setting('synchronous_commit') as sync,
                     current_setting('enable_seqscan') as seqscan`,
          { durableCommit },
        ).then(([row]) => ({ ...row }));
      assert.deepEqual(await read(false), { sync: "off", seqscan: "off" });
      assert.deepEqual(await read(true), { sync: "on", seqscan: "off" });
    } finally {
      await sql.end();
    }
  });
});

Deno.test("service transactions: afterCommit runs after a commit only; snapshot reads repeatable", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    const ran: string[] = [];
    await asService(sql, SENDER, "workers", ({ afterCommit }) => {
      afterCommit(() => ran.push("committed"));
      return Promise.resolve();
    });
    await assert.rejects(() =>
      asService(sql, SENDER, "workers", ({ afterCommit }) => {
        afterCommit(() => ran.push("rolled back"));
        return Promise.reject(new Error("rollback"));
      })
    );
    assert.deepEqual(ran, ["committed"]);
    const level = await asService(
      sql,
      "console",
      "workers",
      async ({ sql }) =>
        (await sql`select current_setting('transaction_isolation') as v`)[0].v,
      { snapshot: true },
    );
    assert.equal(level, "repeatable read");
  });
});

Deno.test("service transactions: a failed statement nobody waited for rolls everything back and is an error; savepoints undo their part only", async () => {
  await withTestDatabase(async ({ sql }) => {
    await createTestServices(sql);
    await sql`create table platform.probe (n int primary key)`;
    await sql`grant select, insert on platform.probe to t_sender`;
    const rows = async () =>
      (await sql<{ n: number }[]>`select n from platform.probe order by n`)
        .map((r) => r.n);

    // The first insert is awaited; the second fails and is never awaited.
    let unawaited: Promise<unknown> | undefined;
    await assert.rejects(
      () =>
        asService(sql, SENDER, "workers", async ({ sql }) => {
          await sql`insert into platform.probe values (1)`;
          unawaited = sql`insert into platform.probe values (1)`.execute();
          unawaited.catch(() => {});
        }),
      /rolled back/,
    );
    await assert.rejects(() => unawaited!, /duplicate key/);
    assert.deepEqual(await rows(), []);

    // A savepoint that throws undoes its own insert; the rest commits.
    await asService(sql, SENDER, "workers", async ({ sql }) => {
      await sql`insert into platform.probe values (2)`;
      await assert.rejects(() =>
        sql.savepoint(async (sp) => {
          await sp`insert into platform.probe values (3)`;
          throw new Error("undo 3");
        })
      );
      await sql.savepoint((sp) => sp`insert into platform.probe values (4)`);
    });
    assert.deepEqual(await rows(), [2, 4]);

    // A connection given back after an error serves the next transaction.
    const role = await asService(
      sql,
      RECEIVERS[0],
      "workers",
      async ({ sql }) => (await sql`select current_user as u`)[0].u,
    );
    assert.equal(role, RECEIVERS[0]);
  });
});

Deno.test("bookkeepingStatement: one statement with its COMMIT right behind; a failure is the statement's own error, and nothing of it stays", async () => {
  await withTestDatabase(async ({ sql, url }) => {
    await createTestServices(sql);
    await sql`create table bk_probe (id int primary key)`;
    await sql`grant select, insert on bk_probe to queue`;
    // One connection: whatever a statement leaves behind, the next one meets.
    const one = connect(url, { max: 1 });
    try {
      const first = await bookkeepingStatement(
        one,
        "queue",
        ({ sql }) =>
          sql<{ id: number; sync: string; role: string }[]>`
            insert into bk_probe values (1)
            returning id, current_setting('synchronous_commit') as sync,
                      current_user as role`,
      );
      assert.deepEqual([...first], [{ id: 1, sync: "off", role: "queue" }]);

      await assert.rejects(
        () =>
          bookkeepingStatement(
            one,
            "queue",
            ({ sql }) => sql`insert into bk_probe values (2), (1)`,
          ),
        (error: { code?: string }) => error.code === "23505",
      );
      // Back to the pool's own user, outside any transaction.
      const [after] = await one<{ own: boolean; open: boolean }[]>`
        select current_user = session_user as own,
               pg_current_xact_id_if_assigned() is not null as open`;
      assert.deepEqual({ ...after }, { own: true, open: false });

      await bookkeepingStatement(
        one,
        "queue",
        ({ sql }) => sql`insert into bk_probe values (3)`,
      );
      const rows = await sql<{ id: number }[]>`
        select id from bk_probe order by id`;
      assert.deepEqual(rows.map((r) => r.id), [1, 3]);
    } finally {
      await one.end();
    }
  });
});

Deno.test("serviceStatement: a statement that refuses (platform.refuse) rolls back all it wrote, with its own error; one that does not commits in its sandbox", async () => {
  await withTestDatabase(async ({ sql, url }) => {
    await createTestServices(sql);
    const [{ id: tenantId }] = await sql<{ id: string }[]>`
      insert into platform.tenants (name) values ('refuse probe') returning id`;
    const one = connect(url, { max: 1 });
    const keys = (rows: number) =>
      one`select count(*)::int as n from t_sender.orders
           where tenant_id = ${tenantId}`.then(([r]) =>
        assert.equal(r.n, rows)
      );
    // Writes a key, then refuses when asked to: all or nothing in one go.
    const write = (key: string, refuse: boolean) =>
      serviceStatement(
        one,
        SENDER,
        { tenantId },
        ({ sql }) =>
          sql<{ key: string; role: string }[]>`
          with k as (
            insert into t_sender.orders (tenant_id, id)
            values (${tenantId}, ${key})
            returning id
          )
          select (select id from k) as key, current_user as role,
                 case when ${refuse}
                      then platform.refuse('BK409', 'no room for ' || ${key})
                 end as refused`,
      );
    try {
      await assert.rejects(
        () => write("first", true),
        (error: { code?: string; message?: string }) =>
          error.code === "BK409" && error.message === "no room for first",
      );
      await keys(0);
      // The connection is back outside any transaction, as the pool's user.
      const [after] = await one<{ own: boolean; open: boolean }[]>`
        select current_user = session_user as own,
               pg_current_xact_id_if_assigned() is not null as open`;
      assert.deepEqual({ ...after }, { own: true, open: false });
      const [kept] = await write("second", false);
      assert.deepEqual({ key: kept.key, role: kept.role }, {
        key: "second",
        role: SENDER,
      });
      await keys(1);
    } finally {
      await one.end();
    }
  });
});
