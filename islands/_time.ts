/**
 * Times on the order page. The server does not know the visitor's time zone,
 * so it prints UTC as the console does (format.ts's `formatWhen`); an
 * island switches to local time after hydration (the first browser render
 * must print what the server printed), unless an operator is looking.
 * Durations are the same everywhere and need no switch.
 */
import { formatWhen } from "../format.ts";

/**
 * The time of an ISO instant: as the console writes it (`03:59:12 UTC`,
 * with the date when it is not today; `nowMs` is for tests), or in the
 * browser's own zone when `local` is true.
 *
 * @example
 * ```ts
 * clock("2026-11-30T03:59:12.684Z", false); // "03:59:12 UTC" on that day
 * ```
 */
export function clock(
  iso: string,
  local: boolean,
  nowMs: number = Date.now(),
): string {
  if (!local) return formatWhen(iso, nowMs);
  return new Date(iso).toLocaleTimeString([], {
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
}

/**
 * The time from one ISO instant to another, short: `35 ms`, `1.2 s`,
 * `4 min 5 s`, `2 h 10 min`. Negative spans (clock skew between two
 * writers) read as `0 ms`.
 *
 * @example
 * ```ts
 * span("2026-11-30T03:59:12.684Z", "2026-11-30T03:59:12.719Z"); // "35 ms"
 * ```
 */
export function span(fromIso: string, toIso: string): string {
  const ms = Math.max(0, Date.parse(toIso) - Date.parse(fromIso));
  if (ms < 1000) return `${ms} ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}
