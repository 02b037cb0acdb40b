/**
 * The alert board as the banner (islands/alert_banner.tsx) last read it,
 * shared with the other islands of the page. The overview counts its
 * alerts from here instead of fetching the board again on every change:
 * each read of the board also moves the sandbox's episodes, in a
 * transaction that locks them, and one reader per page is enough.
 */
import { signal } from "@preact/signals";
import type { AlertBoard } from "./_console_types.ts";

/** The banner's latest board; null until a banner has hydrated. */
export const sharedBoard = signal<AlertBoard | null>(null);

/** How many alerts fire, and how many recover, on a board. */
export function alertCounts(
  board: AlertBoard,
): { firing: number; recovering: number } {
  let firing = 0;
  let recovering = 0;
  for (const a of board.alerts) {
    if (a.state === "firing") firing++;
    else if (a.state === "recovering") recovering++;
  }
  return { firing, recovering };
}
