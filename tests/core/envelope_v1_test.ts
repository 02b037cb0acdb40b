/**
 * A message stored before version 2 of the envelope names its tenant
 * `sandboxId`. It stays in outboxes, in the queue and in a broker's stream
 * as it was stored, so the relay, the consumers and the receivers must all
 * still carry it to its end, once, on either transport.
 */
import assert from "node:assert/strict";
import { asService } from "../../lib/db/service.ts";
import { orderPlacedEnvelope } from "./_messaging.ts";
import { withTestDatabase } from "./_db.ts";
import {
  count,
  createSandbox,
  createTestServices,
  RECEIVERS,
  SENDER,
  waitForJobs,
  withWorkers,
} from "./_messaging.ts";
import type { TransportName } from "./_transport.ts";

for (const transport of ["postgres", "jetstream"] as TransportName[]) {
  Deno.test(`a version 1 envelope in an outbox is delivered once (${transport})`, async () => {
    await withTestDatabase(async (db) => {
      const { sql } = db;
      await createTestServices(sql);
      const tenantId = await createSandbox(sql);
      const { tenantId: _, ...rest } = orderPlacedEnvelope(tenantId, "O-v1");
      const v1 = { ...rest, sandboxId: tenantId };
      // As a sender of version 1 wrote it, before the workers start.
      await asService(sql, SENDER, { tenantId }, async ({ sql }) => {
        await sql`
          insert into t_sender.orders (id, tenant_id) values ('O-v1', ${tenantId})`;
        await sql`
          insert into t_sender.outbox (tenant_id, message_id, type, envelope)
          values (${tenantId}, ${v1.messageId}, ${v1.type}, ${
          sql.json(v1 as never)
        })`;
      });
      await withWorkers(db, { transport }, async () => {
        await waitForJobs(sql, 1);
      });
      for (const r of RECEIVERS) {
        const [job] = await sql<{ tenant_id: string; message_id: string }[]>`
          select tenant_id, message_id from ${sql(`${r}.jobs`)}`;
        assert.deepEqual(job, {
          tenant_id: tenantId,
          message_id: v1.messageId,
        });
      }
      assert.equal(await count(sql, "t_sender.outbox"), 0);
    });
  });
}
