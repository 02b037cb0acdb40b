/**
 * The walkthrough's checklist, ticking itself: the server computes every
 * tick from the sandbox's rows, and the island fetches the checklist again
 * whenever the sandbox changes (one event stream per page, `useLive`).
 * Without JavaScript the server's render is the page. Twin of
 * `GET /api/how-it-works/try-it`.
 */
import { useLive } from "./_live.ts";

/** One step as `GET /api/how-it-works/try-it` gives it. */
export interface TryItStepData {
  step: string;
  done: boolean;
  href: string;
}

/** The twin's answer. */
export interface TryItData {
  steps: TryItStepData[];
  orderId: string | null;
}

/** Props: the server's render, and the words of each step. */
export interface TryItProps {
  initial: TryItData;
  words: Record<string, { label: string; how: string }>;
}

/** An ordered list of steps, each ticked or not, with where to see it. */
export default function TryIt(props: TryItProps) {
  const live = useLive("/api/how-it-works/try-it", props.initial);
  const { steps } = live.data.value;
  const done = steps.filter((s) => s.done).length;
  return (
    <div class="try-it">
      {live.error.value && <p class="form-error">{live.error.value}</p>}
      <p class="muted" data-testid="try-it-progress" data-done={done}>
        {done} of {steps.length} steps done
      </p>
      <ol class="checklist" data-testid="try-it">
        {steps.map((s) => {
          const words = props.words[s.step];
          return (
            <li
              key={s.step}
              class={s.done ? "check done" : "check"}
              data-testid={`try-it-${s.step}`}
              data-done={s.done ? "true" : "false"}
            >
              <span class="check-box" aria-hidden="true">
                {s.done ? "✓" : ""}
              </span>
              <span class="check-text">
                <a href={s.href}>{words?.label ?? s.step}</a>
                <span class="visually-hidden">
                  {s.done ? " (done)" : " (not yet)"}
                </span>
                <span class="check-how muted">{words?.how}</span>
              </span>
            </li>
          );
        })}
      </ol>
    </div>
  );
}
