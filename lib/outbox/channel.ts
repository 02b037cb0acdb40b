/**
 * The channel relays LISTEN on. The payload names the service whose outbox
 * has new rows, and may name the process that has already woken its own
 * relay for them (`orders worker-41-1a2b3c4d`): that process's listener
 * skips the hint, which would only run a second, empty move beside the
 * first.
 */
export const OUTBOX_CHANNEL = "outbox";

/** The payload of a relay hint for `service`. */
export function outboxHint(service: string, wokenBy?: string): string {
  return wokenBy ? `${service} ${wokenBy}` : service;
}

/** The service and the process that already heard, of a relay hint. */
export function readOutboxHint(
  payload: string,
): { service: string; wokenBy?: string } {
  const space = payload.indexOf(" ");
  if (space < 0) return { service: payload };
  return {
    service: payload.slice(0, space),
    wokenBy: payload.slice(space + 1),
  };
}
