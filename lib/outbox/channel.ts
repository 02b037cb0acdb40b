/** The channel relays LISTEN on; the payload is the service name. */
export const OUTBOX_CHANNEL = "outbox";
