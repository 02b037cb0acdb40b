/**
 * `GET /labs/queue`: the Queue Lab. The form (a POST to `/labs/queue`, then
 * back here) runs workers that print oven tickets from the queue; the page
 * shows the last run's figures and draws its timeline. Twin of `GET` and
 * `POST /api/labs/queue`.
 */
import type { Context } from "hono";
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { parseOr400, readForm } from "../../kit/http/validate.ts";
import { ConsolePage, type Operator } from "../_console_page.tsx";
import { QueueTimeline } from "../../components/queue_timeline.tsx";
import {
  lastQueueRun,
  queueLabSchema,
  type QueueLabSettings,
  runQueueLab,
} from "../../services/labs/queue_lab.ts";
import type { ConsoleRender } from "../console/_guard.ts";
import { inTurn } from "../api/labs.ts";

/** `POST /labs/queue` (a form): runs the lab, then 303 to the page. */
export function runQueueForm(deps: Deps): ConsoleRender {
  return async (c: Context, operator: Operator) => {
    const form = await readForm(c);
    const number = (name: string) =>
      typeof form[name] === "string" && form[name] !== ""
        ? Number(form[name])
        : undefined;
    const settings = parseOr400(queueLabSchema, {
      orders: number("orders"),
      workers: number("workers"),
      crash: form.crash === "after-print-before-ack" ? form.crash : null,
      poisonOrders: number("poisonOrders"),
      receiverRemembers: form.receiverRemembers === "on",
    }, "form");
    await inTurn(
      operator.sandboxId,
      "queue",
      () => runQueueLab(deps.sql, deps.log, operator.sandboxId, settings),
    );
    return c.redirect("/labs/queue#result", 303);
  };
}

/**
 * A whole number of the lab's settings, its label above it and its bounds
 * below (zod checks them too).
 */
function NumberField(
  props: {
    label: string;
    name: string;
    min?: number;
    max: number;
    value: number;
  },
) {
  const id = `queue-${props.name}`;
  const min = props.min ?? 1;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <input
        id={id}
        type="number"
        name={props.name}
        min={min}
        max={props.max}
        value={props.value}
        aria-describedby={`${id}-range`}
      />
      <small class="muted" id={`${id}-range`}>{min} to {props.max}</small>
    </div>
  );
}

/** A yes-or-no setting of the lab: a box and its sentence, as one card. */
function CheckField(
  props: {
    label: string;
    name: string;
    value?: string;
    checked: boolean;
    testid: string;
  },
) {
  return (
    <label class="choice-option">
      <input
        type="checkbox"
        name={props.name}
        value={props.value}
        checked={props.checked}
        data-testid={props.testid}
      />
      <span>{props.label}</span>
    </label>
  );
}

const DEFAULTS: QueueLabSettings = {
  orders: 6,
  workers: 3,
  crash: "after-print-before-ack",
  poisonOrders: 1,
  receiverRemembers: false,
};

export function queuePage({ sql }: Deps): ConsoleRender {
  return async (_c, operator) => {
    const last = await lastQueueRun(sql, operator.sandboxId);
    const s = last?.settings ?? DEFAULTS;
    return html(
      <ConsolePage
        title="The Queue Lab"
        current="queue"
        operator={operator}
        lead="Workers take orders from the queue and print oven tickets. Crash one after it printed and before it acknowledged, add an order that jams the printer, and choose whether the printer remembers the ids it has printed."
      >
        <section class="panel">
          <p>
            The lab starts after the hard part: each message is in the queue
            already. Getting it there together with the write that caused it
            (the order saved, and the message owed, in one transaction) is what
            the outbox does, and what{" "}
            <a href="/labs/ledger">the failure ledger</a> runs.
          </p>
          <form
            method="post"
            action="/labs/queue"
            class="lab-form"
            data-testid="queue-form"
          >
            <input type="hidden" name="_csrf" value={operator.csrfToken} />
            <div class="lab-form-numbers">
              <NumberField
                label="Orders"
                name="orders"
                max={50}
                value={s.orders}
              />
              <NumberField
                label="Workers"
                name="workers"
                max={5}
                value={s.workers}
              />
              <NumberField
                label="Poison orders"
                name="poisonOrders"
                min={0}
                max={5}
                value={s.poisonOrders}
              />
            </div>
            <fieldset class="lab-form-choices">
              <legend>What happens</legend>
              <CheckField
                name="crash"
                value="after-print-before-ack"
                checked={s.crash !== null}
                testid="queue-crash"
                label="A worker crashes after printing, before acknowledging"
              />
              <CheckField
                name="receiverRemembers"
                checked={s.receiverRemembers}
                testid="queue-remembers"
                label="The printer remembers the ids it has printed"
              />
            </fieldset>
            <div>
              <button type="submit" class="button" data-testid="queue-run">
                Run
              </button>
            </div>
          </form>
        </section>
        {last && (
          <section class="panel" id="result" data-testid="queue-result">
            <h2>The last run</h2>
            <p data-testid="queue-figures">
              <strong data-testid="queue-tickets">{last.result.tickets}</strong>
              {" "}
              ticket(s),{" "}
              <strong data-testid="queue-duplicates">
                {last.result.duplicates}
              </strong>{" "}
              duplicate(s), <strong>{last.result.deadLetters}</strong>{" "}
              dead letter(s), <strong>{last.result.deliveries}</strong>{" "}
              deliveries to the printer.
            </p>
            <p>{sentence(last.settings, last.result.duplicates)}</p>
            <QueueTimeline
              timeline={last.result.timeline}
              workers={last.settings.workers}
            />
            <p class="console-lead">
              Green: printed and acknowledged. Red with a thick outline: a
              second ticket for an order. Dashed: the printer answered from its
              record, no ticket. ✕: the worker crashed before acknowledging.
              Amber: the printer jammed, retried. Black: a dead letter.
            </p>
          </section>
        )}
      </ConsolePage>,
    );
  };
}

/** What the run shows, in a sentence. */
function sentence(s: QueueLabSettings, duplicates: number): string {
  const crash = s.crash === null
    ? "No worker crashed, so every delivery was acknowledged once."
    : s.receiverRemembers
    ? "A worker crashed after printing; its delivery was delivered again once its lease ran out, and the printer, which records the ids it has printed in the same transaction as the ticket, answered without printing."
    : "A worker crashed after printing; its delivery was delivered again once its lease ran out, and the printer, which keeps no record, printed it again.";
  const poison = s.poisonOrders > 0
    ? ` The poison order(s) jammed the printer on every try and became dead letters after four, with the printer's answer kept.`
    : "";
  return `${crash}${poison} ${duplicates} duplicate ticket(s).`;
}
