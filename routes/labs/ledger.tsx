/**
 * `GET /labs/ledger`: the failure ledger of O42 and M7. Each scenario runs
 * by a click (a form POST to `/labs/ledger/:scenario`, then back here with
 * `?ran=`), and the page shows the rows each side holds afterwards, the
 * figures counted from them, and what they mean. Twin of `GET
 * /api/labs/ledger` and `POST /api/labs/ledger/:scenario`.
 */
import type { Context } from "hono";
import type { Deps } from "../../deps.ts";
import { html } from "../../kit/http/render.ts";
import { ConsolePage, type Operator } from "../_console_page.tsx";
import {
  figures,
  findScenario,
  type LedgerRows,
  ledgerRows,
  runLedger,
  SCENARIOS,
} from "../../services/labs/ledger.ts";
import { inTurn, scenarioOr404 } from "../api/labs.ts";
import type { ConsoleRender } from "../console/_guard.ts";
import { idTail } from "../../format.ts";

/** `POST /labs/ledger/:scenario` (a form): runs it, then 303 to the page. */
export function runLedgerForm(deps: Deps): ConsoleRender {
  return async (c: Context, operator: Operator) => {
    const scenario = scenarioOr404(c.req.param("scenario") ?? "");
    await inTurn(
      operator.sandboxId,
      "ledger",
      () =>
        runLedger(deps.sql, operator.sandboxId, scenario, {
          replayHorizonDays: deps.config.REPLAY_HORIZON_DAYS,
        }),
    );
    return c.redirect(
      `/labs/ledger?ran=${encodeURIComponent(scenario.name)}#result`,
      303,
    );
  };
}

export function ledgerPage({ sql }: Deps): ConsoleRender {
  return async (c, operator) => {
    const ran = findScenario(c.req.query("ran") ?? "");
    const rows = await ledgerRows(sql, operator.sandboxId);
    const counted = await figures(sql, operator.sandboxId);
    return html(
      <ConsolePage
        title="The failure ledger"
        current="ledger"
        operator={operator}
        lead="Order O42 and its instruction M7, between a sender and a receiver that share no transaction. Run a scenario: it stops at its named point, and the rows each side is left with say what recovery has to do."
      >
        {ran && (
          <section class="panel" id="result" data-testid="ledger-result">
            <h2>{ran.title}</h2>
            <p data-testid="ledger-figures">
              Sender: <strong>{counted.sender.orders}</strong> order(s),{" "}
              <strong>{counted.sender.pending}</strong> pending. Receiver:{" "}
              <strong>{counted.receiver.inbox}</strong> accepted in its inbox,
              {" "}
              <strong>{counted.receiver.jobs}</strong> job(s),{" "}
              <strong>{counted.receiver.refusals}</strong> refusal(s).
            </p>
            <p data-testid="ledger-meaning">{ran.meaning}</p>
            <p>
              <strong>Recovery:</strong> {ran.recovery}
            </p>
          </section>
        )}
        <section class="panel">
          <h2>Scenarios</h2>
          <div class="table-wrap" tabIndex={0}>
            <table class="table" data-testid="ledger-scenarios">
              <thead>
                <tr>
                  <th>Scenario</th>
                  <th>What happens</th>
                  <th></th>
                </tr>
              </thead>
              <tbody>
                {SCENARIOS.map((s) => (
                  <tr key={s.name} data-scenario={s.name}>
                    <td>
                      <code>{s.name}</code>
                      {s.broken ? " (broken design)" : ""}
                    </td>
                    <td>{s.title}</td>
                    <td>
                      <form
                        method="post"
                        action={`/labs/ledger/${s.name}`}
                        class="inline-form"
                      >
                        <input
                          type="hidden"
                          name="_csrf"
                          value={operator.csrfToken}
                        />
                        <button
                          type="submit"
                          class="button small"
                          data-testid={`run-${s.name}`}
                        >
                          Run
                        </button>
                      </form>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
        <Rows rows={rows} />
      </ConsolePage>,
    );
  };
}

/** The rows the last run left, on each side. */
function Rows({ rows }: { rows: LedgerRows }) {
  return (
    <section class="panel" data-testid="ledger-rows">
      <h2>The rows left behind</h2>
      <h3>Sender (lab_sender)</h3>
      <Table
        testid="rows-orders"
        head={["order", "state", "version"]}
        rows={rows.orders.map((o) => [o.orderId, o.state, String(o.version)])}
        empty="no order"
      />
      <Table
        testid="rows-outbox"
        head={["outbox", "type", "state", "attempts", "last error"]}
        rows={rows.outbox.map((o) => [
          o.label,
          o.type,
          o.state,
          String(o.attempts),
          o.lastError ?? "",
        ])}
        empty="nothing in the outbox"
      />
      <h3>Receiver (lab_receiver)</h3>
      <Table
        testid="rows-inbox"
        head={["inbox: message", "type", "answer", "outcome"]}
        rows={rows.inbox.map((i) => [
          idTail(i.messageId),
          i.type,
          String(i.status),
          i.outcome,
        ])}
        empty="nothing in the inbox"
      />
      <Table
        testid="rows-jobs"
        head={["job: order", "from", "state", "version"]}
        rows={rows.jobs.map((j) => [
          j.orderId,
          j.label,
          j.state,
          String(j.version),
        ])}
        empty="no job"
      />
      <Table
        testid="rows-refusals"
        head={["refusal: message", "type", "reason"]}
        rows={rows.refusals.map((r) => [
          idTail(r.messageId),
          r.type,
          r.reason,
        ])}
        empty="no refusal"
      />
    </section>
  );
}

function Table(
  props: { testid: string; head: string[]; rows: string[][]; empty: string },
) {
  return (
    <div class="table-wrap" tabIndex={0}>
      <table class="table" data-testid={props.testid}>
        <thead>
          <tr>{props.head.map((h) => <th key={h}>{h}</th>)}</tr>
        </thead>
        <tbody>
          {props.rows.length === 0
            ? (
              <tr>
                <td colSpan={props.head.length}>{props.empty}</td>
              </tr>
            )
            : props.rows.map((r, i) => (
              <tr key={i}>{r.map((v, j) => <td key={j}>{v}</td>)}</tr>
            ))}
        </tbody>
      </table>
    </div>
  );
}
