/**
 * The load: shoppers that place and pay orders at a steady rate through the
 * storefront's JSON API, each signed in with a sandbox of its own, as a
 * visitor would. A shopper writes down every pay request the bakery
 * accepted (202) and when: that list is what the checker holds the
 * databases to. The same sessions flip the sandboxes' fault switches and
 * redrive their dead letters, as an operator does in the console.
 */

/** A client with a cookie jar and the site's Origin, as a browser. */
export class Client {
  #cookies = new Map<string, string>();
  constructor(readonly base: string) {}

  async send(
    method: string,
    path: string,
    body?: unknown,
    timeoutMs = 10_000,
  ): Promise<{ status: number; body: Record<string, unknown> }> {
    const headers = new Headers({ origin: new URL(this.base).origin });
    if (this.#cookies.size) {
      headers.set(
        "cookie",
        [...this.#cookies].map(([k, v]) => `${k}=${v}`).join("; "),
      );
    }
    if (body !== undefined) headers.set("content-type", "application/json");
    const response = await fetch(new URL(path, this.base), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [name, value] = cookie.split(";")[0].split("=");
      this.#cookies.set(name, value);
    }
    const text = await response.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      parsed = { text };
    }
    return { status: response.status, body: parsed };
  }
}

/** An accepted pay request: the order and when the 202 came (epoch ms). */
export interface AcceptedPay {
  orderId: string;
  sandboxId: string;
  at: number;
}

/** What the shoppers did, for the progress line, the checker and report. */
export interface LoadRecord {
  placed: number;
  accepted: AcceptedPay[];
  /** Pay requests with no answer (the app died under them): not counted. */
  unanswered: number;
  /** Requests refused or failed, by what happened ("503", "timeout"). */
  failures: Record<string, number>;
}

const ORDER = {
  items: [{ sku: "cardamom-bun", qty: 2 }, { sku: "country-loaf", qty: 1 }],
  customer: { name: "Drill Shopper", email: "drill@example.com" },
};

export class Shopper {
  readonly client: Client;
  sandboxId = "";
  #bought = 0;

  constructor(base: string, readonly index: number) {
    this.client = new Client(base);
  }

  async signIn(): Promise<void> {
    const { status, body } = await this.client.send("POST", "/api/session", {
      name: `Drill shopper ${this.index + 1}`,
    });
    if (status !== 201) {
      throw new Error(`signing in answered ${status}: ${JSON.stringify(body)}`);
    }
    this.sandboxId = String(body.sandboxId);
  }

  /** Sets fault switches of this shopper's sandbox; true when taken. */
  async setFaults(switches: Record<string, boolean>): Promise<boolean> {
    const answer = await this.#retried(() =>
      this.client.send("PUT", "/api/console/faults", switches)
    );
    return answer?.status === 200;
  }

  /** Redrives the sandbox's dead letters of `subscriber`; how many. */
  async redrive(subscriber?: string): Promise<number> {
    const answer = await this.#retried(() =>
      this.client.send(
        "POST",
        "/api/console/dead-letters/redrive",
        subscriber ? { subscriber } : {},
      )
    );
    return answer?.status === 202 ? Number(answer.body.count ?? 0) : 0;
  }

  /**
   * One order placed and paid. Placing is retried with the same
   * idempotency key until answered; paying is retried only on an answer
   * that says nothing was done (503, 429). A pay request that got no answer
   * is not counted as accepted: it may or may not have been taken.
   */
  async buyOne(record: LoadRecord, stop: AbortSignal): Promise<void> {
    const key = crypto.randomUUID();
    const fulfilment = Math.random() < 0.5 ? "delivery" : "pickup";
    // A sandbox may bake 24 country loaves a day: the orders go round the
    // next 59 days, so that capacity never refuses one (1,416 a sandbox).
    const day = new Date(Date.now() + (1 + this.#bought++ % 59) * 86_400_000)
      .toISOString().slice(0, 10);
    const placed = await this.#retried(
      () =>
        this.client.send("POST", "/api/orders", {
          ...ORDER,
          fulfilment,
          day,
          idempotencyKey: key,
        }),
      stop,
      record,
    );
    if (!placed) return;
    if (placed.status !== 201 && placed.status !== 200) {
      return count(record, `place ${placed.status}`);
    }
    record.placed++;
    const orderId = String(placed.body.orderId);
    for (let attempt = 0; attempt < 20 && !stop.aborted; attempt++) {
      let answer;
      try {
        answer = await this.client.send("POST", `/api/orders/${orderId}/pay`, {
          card: "4242424242424242",
        });
      } catch {
        record.unanswered++;
        return;
      }
      if (answer.status === 202) {
        record.accepted.push({
          orderId,
          sandboxId: this.sandboxId,
          at: Date.now(),
        });
        return;
      }
      count(record, String(answer.status));
      if (answer.status !== 503 && answer.status !== 429) return;
      await sleep(250 * (attempt + 1), stop);
    }
  }

  /** `call` until it answers other than 5xx, 20 tries at most. */
  async #retried(
    call: () => Promise<{ status: number; body: Record<string, unknown> }>,
    stop?: AbortSignal,
    record?: LoadRecord,
  ) {
    for (let attempt = 0; attempt < 20 && !stop?.aborted; attempt++) {
      try {
        const answer = await call();
        if (answer.status < 500) return answer;
        if (record) count(record, String(answer.status));
      } catch (error) {
        if (record) count(record, (error as Error).name);
      }
      await sleep(Math.min(2_000, 250 * (attempt + 1)), stop);
    }
    return undefined;
  }
}

function count(record: LoadRecord, what: string) {
  record.failures[what] = (record.failures[what] ?? 0) + 1;
}

export function sleep(ms: number, stop?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    stop?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

/**
 * Runs every shopper until `stop`: together `rate` orders a second, each
 * shopper starting its next order on its own beat (a slow answer delays
 * only that shopper's next order).
 */
export async function runShoppers(
  shoppers: Shopper[],
  rate: number,
  record: LoadRecord,
  stop: AbortSignal,
): Promise<void> {
  const beatMs = (1000 * shoppers.length) / rate;
  await Promise.all(shoppers.map(async (shopper, i) => {
    await sleep((beatMs * i) / shoppers.length, stop);
    let next = performance.now();
    while (!stop.aborted) {
      await shopper.buyOne(record, stop).catch((error) =>
        count(record, (error as Error).name)
      );
      next += beatMs;
      await sleep(Math.max(0, next - performance.now()), stop);
    }
  }));
}
