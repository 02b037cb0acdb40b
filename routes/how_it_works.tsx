/**
 * `GET /how-it-works`: how the bakery is built, section by section, each
 * tied to this system (the routing table, the settings) and, for a visitor
 * with a session, to their sandbox's own rows. A signed-in operator sees it
 * inside the console's frame, anyone else inside the storefront's. Twin of
 * `GET /api/how-it-works`; the Try-it checklist is an island that ticks
 * itself. Readable without JavaScript.
 */
import type { Context } from "hono";
import type { ComponentChildren } from "preact";
import type { Deps } from "../deps.ts";
import { html } from "../kit/http/render.ts";
import { Layout } from "../components/layout.tsx";
import { StorefrontNav } from "./_storefront_nav.tsx";
import { ConsolePage } from "./_console_page.tsx";
import { CostsTable } from "../islands/_costs_table.tsx";
import { Island } from "../islands/_registry.ts";
import { type HowItWorks, howItWorks } from "../services/how/page.ts";
import { TRY_IT_WORDS } from "../services/how/try_it.ts";
import {
  formatNumber,
  formatWhen,
  orderCode,
  serviceLabel,
} from "../format.ts";

function Section(
  props: { id: string; title: string; children: ComponentChildren },
) {
  return (
    <section
      class="panel how"
      id={props.id}
      aria-labelledby={`${props.id}-title`}
      data-testid={`how-${props.id}`}
    >
      <h2 id={`${props.id}-title`}>{props.title}</h2>
      {props.children}
    </section>
  );
}

const seconds = (ms: number) => ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`;

function WhoHears({ view }: { view: HowItWorks }) {
  return (
    <Section id="who-hears" title="A paid order, and who has to hear">
      <p>
        When a payment succeeds, billing tells orders, and orders announces
        OrderPaid. The routing table (the relay reads it when it publishes)
        sends OrderPaid to{" "}
        <strong data-testid="paid-receiver-count">
          {view.paidReceivers.length}
        </strong>{" "}
        receivers:
      </p>
      <ul class="receivers-list" data-testid="paid-receivers">
        {view.paidReceivers.map((r) => <li key={r.name}>{r.label}</li>)}
      </ul>
      <p>
        No transaction here spans two of them. Each service owns a PostgreSQL
        schema and a role of the same name, and every one of its transactions
        starts by taking that role, which may touch its own schema only: a
        transaction that reached into a second service would fail with
        “permission denied”. So the payment, the kitchen's card and the receipt
        are separate commits, tied together by messages.
      </p>
      <table class="table" data-testid="routing-table">
        <thead>
          <tr>
            <th>Event</th>
            <th>Goes to</th>
          </tr>
        </thead>
        <tbody>
          {Object.entries(view.routing).map(([type, subs]) => (
            <tr key={type}>
              <th scope="row">{type}</th>
              <td>{subs.map(serviceLabel).join(", ")}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p>
        See them arrive on <a href="/console/deliveries">Deliveries</a>{" "}
        and on each order's own timeline.
      </p>
    </Section>
  );
}

function Gap({ view }: { view: HowItWorks }) {
  const last = view.sandbox?.lastOrder ?? null;
  return (
    <Section id="gap" title="The two steps and the gap">
      <p>
        Step one: the order and the message it owes are written in one
        transaction, the message as a row of the sender's outbox. Step two: the
        relay sends that row on, and marks it published. Between the two is a
        gap. A crash there loses nothing, because the row is still in the outbox
        and is sent again; the one thing the gap can still cause is a duplicate
        (sent, but not yet marked, when the relay died), and the receivers'
        inboxes make a duplicate harmless.
      </p>
      {last
        ? (
          <>
            <p>
              Your last order,{" "}
              <a href={`/orders/${last.orderId}`} title={last.orderId}>
                <code>{orderCode(last.orderId)}</code>
              </a>{" "}
              ({last.state}), left these outbox rows:
            </p>
            <div class="table-wrap" tabIndex={0}>
              <table class="table" data-testid="last-order-outbox">
                <thead>
                  <tr>
                    <th>Service</th>
                    <th>Message</th>
                    <th>State</th>
                    <th>Committed</th>
                    <th>Published</th>
                    <th class="num">Gap</th>
                  </tr>
                </thead>
                <tbody>
                  {last.outbox.map((r) => (
                    <tr key={r.messageId} data-testid="outbox-row">
                      <td>{serviceLabel(r.service)}</td>
                      <td>{r.eventType}</td>
                      <td>{r.state}</td>
                      <td>
                        <time dateTime={r.createdAt}>
                          {formatWhen(r.createdAt)}
                        </time>
                      </td>
                      <td>
                        {r.publishedAt
                          ? (
                            <time dateTime={r.publishedAt}>
                              {formatWhen(r.publishedAt)}
                            </time>
                          )
                          : "not yet"}
                      </td>
                      <td class="num">
                        {r.gapMs === null ? "–" : `${formatNumber(r.gapMs)} ms`}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )
        : (
          <p class="muted" data-testid="no-last-order">
            Place an order and its outbox rows show up here, with the time each
            one was published.
          </p>
        )}
      <p>
        Rows still waiting are on the <a href="/console/outbox">Outbox</a>{" "}
        page, oldest first. The gap itself can be run, stopped at each step, in
        the <a href="/labs/ledger">failure ledger</a>.
      </p>
    </Section>
  );
}

function RefusedRow({ view }: { view: HowItWorks }) {
  const guard = view.sandbox?.loopGuard;
  const s = view.settings;
  return (
    <Section id="refused-row" title="What happens to a row the queue refused">
      <p>
        When the publish fails, the relay keeps the row, counts the attempt,
        writes down the error and tries again after {seconds(s.relayRetryMs)}
        {" "}
        (RELAY_RETRY_MS). A relay that keeps failing would loop for ever, so a
        loop guard allows {s.guardLimitPerDay}{" "}
        automatic re-arms per sandbox and UTC day; past that the rows stop
        retrying by themselves and wait. The next command of the same service
        (another order, a payment) flushes its outbox, and an operator can see
        them. A row waits; it is never dropped.
      </p>
      {guard
        ? (
          <p data-testid="loop-guard">
            Today your sandbox used{" "}
            <strong data-testid="rearms-today">{guard.total}</strong> of{" "}
            {s.guardLimitPerDay} re-arms ({Object.entries(guard.rearmsToday)
              .map(([svc, n]) => `${serviceLabel(svc)} ${n}`).join(", ")});{" "}
            {guard.retrying} row{guard.retrying === 1 ? "" : "s"}{" "}
            wait for a retry and {guard.parked}{" "}
            {guard.parked === 1 ? "is" : "are"} parked by the guard.
          </p>
        )
        : null}
      <p>
        Try it with “Queue refuses sends” on the{" "}
        <a href="/console/faults">Faults</a> page, then watch the{" "}
        <a href="/console/outbox">Outbox</a>.
      </p>
    </Section>
  );
}

function AppliedOnce({ view }: { view: HowItWorks }) {
  const sb = view.sandbox;
  return (
    <Section id="applied-once" title="At least once, applied once">
      <p>
        The relay and the consumers promise at least once: a message may come
        twice, never zero times. Each receiver turns that into once: it writes
        the message id into its own inbox in the same transaction as the effect.
        A second copy finds the id there, changes nothing, and gets the answer
        the first one got.
      </p>
      {sb
        ? (
          <>
            <p>
              Your sandbox:{" "}
              <strong data-testid="repeats-total">
                {sb.repeatsTotal}
              </strong>{" "}
              repeat{sb.repeatsTotal === 1 ? "" : "s"} answered from an inbox.
            </p>
            <div class="table-wrap" tabIndex={0}>
              <table class="table" data-testid="inboxes">
                <thead>
                  <tr>
                    <th>Inbox</th>
                    <th class="num">Messages</th>
                    <th class="num">Repeats answered from it</th>
                  </tr>
                </thead>
                <tbody>
                  {sb.inboxes.map((i) => (
                    <tr key={i.receiver} data-testid={`inbox-${i.receiver}`}>
                      <th scope="row">{serviceLabel(i.receiver)}</th>
                      <td class="num">{i.messages}</td>
                      <td class="num">{i.repeats}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )
        : null}
      <p>
        “Deliveries are sent twice” and “Acknowledgements are lost” on the{" "}
        <a href="/console/faults">Faults</a> page make repeats; the{" "}
        <a href="/console/closure">Closure</a>{" "}
        page shows every obligation still closed once. The{" "}
        <a href="/labs/queue">Queue Lab</a>{" "}
        shows what a receiver without an inbox does with the same repeats.
      </p>
    </Section>
  );
}

function Retries({ view }: { view: HowItWorks }) {
  const s = view.settings;
  const d = view.sandbox?.deliveries;
  return (
    <Section id="retries" title="Where the retries stop">
      <p data-testid="retry-delays">
        A delivery that fails (409 “not yet”, a 5xx, no answer within{" "}
        {seconds(s.deliveryTimeoutMs)}) is tried again after{" "}
        {s.retryDelaysMs.map(seconds).join(", ")}{" "}
        (RETRY_DELAYS_MS, with jitter): {s.retryDelaysMs.length}{" "}
        retries. After the last it is a dead letter, with the last error in
        words. A 422 is the receiver refusing: dead at once, with its reason.
      </p>
      <p>
        A dead letter waits for an operator. Redrive sends the same message id
        again (the inbox makes that safe); refuse closes it for good, with a
        reason, a name and a time. Neither deletes anything.
      </p>
      {d && (
        <p data-testid="dead-counts">
          Your sandbox: {d.dead} dead, {d.refused} refused, {d.redrives}{" "}
          redrive{d.redrives === 1 ? "" : "s"} so far.
        </p>
      )}
      <p>
        See them on <a href="/console/dead-letters">Dead letters</a>.
      </p>
    </Section>
  );
}

/** The page's content, the same for both frames. */
function HowContent({ view }: { view: HowItWorks }) {
  return (
    <div class="how-it-works" data-testid="how-it-works">
      <p class="console-lead">
        Why a paid order here is never lost and never applied twice, shown with
        this bakery's own tables and, once you have a sandbox, your own rows.
        Two labs go further: the <a href="/labs/ledger">failure ledger</a>{" "}
        and the <a href="/labs/queue">Queue Lab</a>.
      </p>
      <WhoHears view={view} />
      <Gap view={view} />
      <RefusedRow view={view} />
      <AppliedOnce view={view} />
      <Retries view={view} />
      <Section id="costs" title="What it costs">
        {view.sandbox
          ? (
            <Island
              name="how_costs"
              props={{
                initial: view.sandbox.costs,
                benchmark: view.benchmark,
                queue: view.settings.queue,
              }}
            />
          )
          : (
            <CostsTable
              costs={null}
              benchmark={view.benchmark}
              queue={view.settings.queue}
            />
          )}
      </Section>
      <Section id="try-it" title="Try it">
        {view.sandbox
          ? (
            <Island
              name="try_it"
              props={{ initial: view.sandbox.tryIt, words: TRY_IT_WORDS }}
            />
          )
          : (
            <p>
              <a href="/sign-in?next=/console">Sign in</a>{" "}
              and this list ticks itself as you go.
            </p>
          )}
      </Section>
    </div>
  );
}

/** Renders the page for whoever is looking. */
export async function howItWorksPage(c: Context, deps: Deps) {
  const session = c.get("session");
  const view = await howItWorks(
    deps.sql,
    deps.config,
    session?.sandboxId ?? null,
  );
  const body = <HowContent view={view} />;
  const response = session?.name
    ? html(
      <ConsolePage
        title="How it's built"
        current="how"
        operator={{
          name: session.name,
          sandboxId: session.sandboxId,
          csrfToken: session.csrfToken,
        }}
      >
        {body}
      </ConsolePage>,
    )
    : html(
      <Layout
        title="How it's built"
        csrfToken={session?.csrfToken}
        nav={<StorefrontNav />}
      >
        <div class="console" data-testid="console-how">
          <header class="console-head">
            <h1>How it's built</h1>
          </header>
          {body}
        </div>
      </Layout>,
    );
  response.headers.set("cache-control", "no-store");
  return response;
}
