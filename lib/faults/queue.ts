/**
 * A faulty transport: the relay's fault switches, as a decorator of the
 * `Queue` it publishes to. The relay has no branch for them: what it sees is
 * a publish that fails for some messages, or that succeeds without the
 * relay getting to mark the rows, as after a crash.
 *
 * - `queueRefusesSends`: the tenant's messages are not published; the
 *   relay records the failure and retries them.
 * - `crashBeforeMark`: they are published, then the relay stops before it
 *   marks their rows; the lease runs out and they are published again.
 *
 * Tenants with either switch on are `diverted`: the relay's shortcut
 * into the PostgreSQL queue, which never calls `publish`, leaves their rows
 * to the long way, where this decorator acts.
 */
import type { Logger } from "../log/mod.ts";
import {
  type OutgoingMessage,
  PartialPublish,
  type Queue,
} from "../ledger/queue.ts";
import { type FaultReader, isOn } from "./switches.ts";
import { tenantOf } from "../outbox/envelope.ts";

/** Fault switches of the transport, as the relay meets them. */
export const RELAY_FAULTS = {
  /** The queue refuses the publish of this tenant's messages. */
  queueRefusesSends: "queueRefusesSends",
  /** The relay "crashes" after publishing, before marking published. */
  crashBeforeMark: "crashBeforeMark",
} as const;

const NAMES = Object.values(RELAY_FAULTS);

/** Why a refused message was not published. */
export const REFUSED_SEND =
  "the queue refused the send (queueRefusesSends fault)";

/** `queue`, obeying the relay's fault switches of each message's tenant. */
export function faultyQueue(
  queue: Queue,
  faults: FaultReader,
  log: Logger,
): Queue {
  return {
    diverted: {
      list: () => faults.tenantsWith(NAMES),
      query: (sql) => faults.tenantsWithQuery(sql, NAMES),
    },
    publish: async (messages: OutgoingMessage[]) => {
      const active = await faults([
        ...new Set(messages.map((m) => tenantOf(m.envelope))),
      ]);
      if (active.size === 0) return await queue.publish(messages);
      const on = (m: OutgoingMessage, name: string) =>
        isOn(active, tenantOf(m.envelope), name);
      const refused = messages.filter((m) =>
        on(m, RELAY_FAULTS.queueRefusesSends)
      );
      const sendable = messages.filter((m) => !refused.includes(m));
      const crashed = sendable.filter((m) =>
        on(m, RELAY_FAULTS.crashBeforeMark)
      );
      const published = sendable.length > 0 ? await queue.publish(sendable) : 0;
      if (refused.length === 0 && crashed.length === 0) return published;
      if (crashed.length > 0) {
        log.warn("relay_crash_fault", {
          service: crashed[0].source,
          rows: crashed.length,
        });
      }
      const ids = (list: OutgoingMessage[]) =>
        new Set(list.map((m) => m.envelope.messageId));
      throw new PartialPublish(REFUSED_SEND, ids(refused), ids(crashed));
    },
  };
}
