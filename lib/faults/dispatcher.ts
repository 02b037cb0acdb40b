/**
 * A faulty dispatcher: the consumers' fault switches, as a decorator of the
 * dispatcher that carries their requests to the subscribers, on either
 * transport. The consumers have no branch for them.
 *
 * - `lostAcks`: the subscriber answers 2xx (and has committed), but the
 *   consumer gets a failure instead of the answer, and retries.
 * - `duplicateDeliveries`: every request is sent twice in a row; the
 *   consumer gets the second answer, within its one timeout.
 *
 * The tenant is read from the envelope the request carries, only while
 * some tenant has one of the switches on.
 */
import { AnswerLost, type Dispatcher } from "../delivery/dispatcher.ts";
import { type FaultReader, isOn } from "./switches.ts";

/** Fault switches of the dispatcher, as the consumers meet them. */
export const CONSUMER_FAULTS = {
  /** The receiver commits, then the consumer sees a failure. */
  lostAcks: "lostAcks",
  /** Every delivery is sent twice in a row. */
  duplicateDeliveries: "duplicateDeliveries",
} as const;

const NAMES = Object.values(CONSUMER_FAULTS);

/** What a consumer needs of a dispatcher: sending one request. */
export type Send = Pick<Dispatcher, "send">;

/** `dispatcher`, obeying the consumers' fault switches. */
export function faultyDispatcher(dispatcher: Send, faults: FaultReader): Send {
  return {
    send: async (request: Request) => {
      if ((await faults.tenantsWith(NAMES)).length === 0) {
        return await dispatcher.send(request);
      }
      const tenantId = await tenantOf(request);
      const active = await faults(tenantId ? [tenantId] : []);
      const on = (name: string) =>
        tenantId !== undefined && isOn(active, tenantId, name);
      let response: Response;
      if (on(CONSUMER_FAULTS.duplicateDeliveries)) {
        const again = request.clone();
        // The second goes once the first is answered, or given up on (the
        // consumer's timeout), as a consumer that sends twice in a row.
        const first = dispatcher.send(request);
        await Promise.race([
          first.then((r) => r.body?.cancel(), () => {}),
          aborted(request.signal),
        ]);
        response = await dispatcher.send(again);
      } else {
        response = await dispatcher.send(request);
      }
      if (on(CONSUMER_FAULTS.lostAcks) && response.ok) {
        await response.body?.cancel();
        throw new AnswerLost(response.status, "lostAcks fault");
      }
      return response;
    },
  };
}

/**
 * The tenant of the envelope a request carries, or of a batch's first (a
 * batch is one tenant's), if it names one.
 */
async function tenantOf(request: Request): Promise<string | undefined> {
  try {
    const body = await request.clone().json();
    const envelope = Array.isArray(body?.messages) ? body.messages[0] : body;
    // Version 1 envelopes name the tenant sandboxId.
    const tenant = envelope?.tenantId ?? envelope?.sandboxId;
    return typeof tenant === "string" ? tenant : undefined;
  } catch {
    return undefined;
  }
}

/** Resolves when `signal` aborts. */
function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve(), { once: true })
  );
}
