/**
 * The live indicator in the console's header. It also opens the page's one
 * event stream, so every console page is live even before its own island
 * asks for changes (islands/_live.ts shares the stream).
 */
import { useEffect } from "preact/hooks";
import { liveState, onChange } from "./_live.ts";

const WORDS = {
  connecting: "Connecting…",
  open: "Live",
  closed: "Offline, reload",
} as const;

/** A dot and a word: whether the page hears about changes. */
export default function LiveStatus(_props: Record<string, never>) {
  // A listener that does nothing keeps the shared stream open.
  useEffect(() => onChange(() => {}), []);
  const state = liveState.value;
  return (
    <span
      class={`console-live console-live-${state}`}
      data-testid="live-status"
      data-state={state}
      role="status"
    >
      {WORDS[state]}
    </span>
  );
}
