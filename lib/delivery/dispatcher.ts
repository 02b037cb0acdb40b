/**
 * How a consumer reaches a subscriber. Subscribers are addressed by URL. A
 * handler that lives in the same process is registered under its origin and
 * called with a real Request, without a socket; anything else goes out with
 * fetch. Either way the subscriber answers with a Response, so status codes
 * mean the same everywhere.
 */

/**
 * Thrown by a send whose subscriber answered `status` (and may have
 * committed), but whose answer never reached the sender: a connection cut
 * on the way back. The consumer retries; the receiver's inbox answers the
 * repeat.
 */
export class AnswerLost extends Error {
  override name = "AnswerLost";

  constructor(readonly status: number, reason: string) {
    super(reason);
  }
}

/** A subscriber's endpoint, as a Request -> Response function. */
export type Handler = (request: Request) => Response | Promise<Response>;

export class Dispatcher {
  #local = new Map<string, Handler>();
  /** Requests an in-process handler is still answering. */
  #running = new Set<Promise<unknown>>();

  /** Serves requests to `origin` (e.g. `http://app.internal`) in process. */
  register(origin: string, handler: Handler): this {
    this.#local.set(new URL(origin).origin, handler);
    return this;
  }

  /** Sends `request` to its subscriber. Rejects on network errors. */
  async send(request: Request): Promise<Response> {
    const local = this.#local.get(new URL(request.url).origin);
    if (!local) return await fetch(request);
    const answer = Promise.resolve(local(request));
    const running = answer.catch(() => {}).finally(() =>
      this.#running.delete(running)
    );
    this.#running.add(running);
    return await answer;
  }

  /**
   * Waits for the in-process handlers still answering: a consumer that gave
   * up on one (its timeout) leaves it running, and it may still apply (a
   * slow receiver does). Called when the workers stop, so that no receiver
   * works on after the process has let go of its database.
   */
  async drain(): Promise<void> {
    while (this.#running.size > 0) await Promise.all([...this.#running]);
  }
}
