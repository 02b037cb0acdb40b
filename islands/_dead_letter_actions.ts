/**
 * The operator's actions on dead letters, as calls of the console API:
 * redrive or refuse one, a list of ids, or all that match a filter (the
 * server takes them oldest first). Each resolves to the ids it changed, or
 * to an error message.
 */
import { type Answer, failure, sendJson } from "./_console_api.ts";
import type {
  RedriveAnswer,
  RefuseAnswer,
  WaitedOn,
} from "./_console_types.ts";
import type { RedrivePreview } from "./_redrive_preview.tsx";

/** Which dead letters a bulk action means: ids, or a filter. */
export interface DeadLetterTarget {
  ids?: number[];
  subscriber?: string;
  eventType?: string;
  group?: string;
  since?: string;
  until?: string;
}

/**
 * The ids an action changed (or, over 100 rows, the job that will change
 * them, and how many), or why it failed.
 */
export type ActionResult =
  | { ids: number[]; jobId?: string; count?: number }
  | { error: string };

function result(answer: Answer): ActionResult {
  if (!answer.ok) return { error: failure(answer) };
  const body = answer.body as Partial<RedriveAnswer | RefuseAnswer> & {
    jobId?: string;
    count?: number;
  };
  return {
    ids: Array.isArray(body.ids) ? body.ids : [],
    jobId: body.jobId,
    count: body.count,
  };
}

const BASE = "/api/console/dead-letters";

/**
 * `POST /api/console/dead-letters/:id/redrive`; `force` redrives one beyond
 * the replay horizon too.
 */
export async function redriveOne(
  id: number,
  force = false,
): Promise<ActionResult> {
  return result(
    await sendJson("POST", `${BASE}/${id}/redrive`, force ? { force } : {}),
  );
}

/** `POST /api/console/dead-letters/:id/refuse` with `{ reason }`. */
export async function refuseOne(
  id: number,
  reason: string,
): Promise<ActionResult> {
  return result(await sendJson("POST", `${BASE}/${id}/refuse`, { reason }));
}

/**
 * `POST /api/console/dead-letters/redrive` with ids or a filter;
 * `includeEarlier` redrives the dead letters they wait on too.
 */
export async function redriveMany(
  target: DeadLetterTarget,
  includeEarlier = false,
): Promise<ActionResult> {
  return result(
    await sendJson(
      "POST",
      `${BASE}/redrive`,
      includeEarlier ? { ...target, includeEarlier } : target,
    ),
  );
}

/**
 * A redrive's dry run: the earlier dead letters `target` waits on, and
 * what each of its first dead letters would do at its receiver (both empty
 * when the dry run failed: the redrive itself then says why).
 */
export async function redriveDryRun(
  target: DeadLetterTarget,
): Promise<{ waitsOn: WaitedOn[]; preview: RedrivePreview }> {
  const answer = await sendJson("POST", `${BASE}/redrive`, {
    ...target,
    dryRun: true,
  });
  if (!answer.ok) return { waitsOn: [], preview: [] };
  return {
    waitsOn: Array.isArray(answer.body?.waitsOn) ? answer.body.waitsOn : [],
    preview: Array.isArray(answer.body?.preview) ? answer.body.preview : [],
  };
}

/** `POST /api/console/dead-letters/refuse` with ids or a filter and a reason. */
export async function refuseMany(
  target: DeadLetterTarget,
  reason: string,
): Promise<ActionResult> {
  return result(
    await sendJson("POST", `${BASE}/refuse`, { ...target, reason }),
  );
}

/** A corrected copy sent, or why not (with the status that says which). */
export type SupersedeResult =
  | { messageId: string; deliveryId: number }
  | {
    error: string;
    /** 409: the receiver had applied it, or the line of copies is full. */
    status: number;
    issues: { path: string; message: string }[];
  };

/**
 * `POST /api/console/dead-letters/:id/supersede` with `{ payload, reason }`:
 * a corrected copy under a new message id, the dead letter refused.
 */
export async function supersedeOne(
  id: number,
  payload: unknown,
  reason: string,
): Promise<SupersedeResult> {
  const answer = await sendJson("POST", `${BASE}/${id}/supersede`, {
    payload,
    reason,
  });
  if (!answer.ok) {
    return {
      error: failure(answer),
      status: answer.status,
      issues: Array.isArray(answer.body?.issues) ? answer.body.issues : [],
    };
  }
  return {
    messageId: String(answer.body.messageId),
    deliveryId: Number(answer.body.deliveryId),
  };
}
