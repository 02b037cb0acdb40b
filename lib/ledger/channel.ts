/**
 * The channel consumers LISTEN on. The payload is empty, or names the
 * process that has woken its own consumers already (lib/carriers/postgres/move.ts).
 */
export const QUEUE_CHANNEL = "queue";
