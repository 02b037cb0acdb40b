/**
 * Pause and resume each receiver in the operator's sandbox. A press PUTs
 * `{ paused }` to `/api/console/receivers/<name>` and shows the server's
 * answer; while the request is out the button is disabled, and a refusal
 * leaves the state as it was, with the reason.
 */
import { useSignal } from "@preact/signals";
import { failure, sendJson } from "./_console_api.ts";

/** One receiver: its name (the API's) and how people read it. */
export interface PausableReceiver {
  name: string;
  label: string;
}

/** Props: the receivers, and which of them are paused now. */
export interface ReceiverPausesProps {
  receivers: PausableReceiver[];
  initial: Record<string, boolean>;
}

/** A pause or resume button per receiver. */
export default function ReceiverPauses(props: ReceiverPausesProps) {
  const paused = useSignal<Readonly<Record<string, boolean>>>(props.initial);
  const busy = useSignal<ReadonlySet<string>>(new Set());
  const error = useSignal("");

  async function press(name: string, pause: boolean) {
    busy.value = new Set([...busy.value, name]);
    error.value = "";
    const answer = await sendJson("PUT", `/api/console/receivers/${name}`, {
      paused: pause,
    });
    if (answer.ok) {
      paused.value = { ...paused.value, [name]: answer.body.paused === true };
    } else error.value = failure(answer);
    const rest = new Set(busy.value);
    rest.delete(name);
    busy.value = rest;
  }

  return (
    <>
      {error.value && (
        <p class="form-error" role="alert" data-testid="pauses-error">
          {error.value}
        </p>
      )}
      <ul class="switches" data-testid="receiver-pauses">
        {props.receivers.map((r) => {
          const on = !!paused.value[r.name];
          return (
            <li key={r.name} class={on ? "switch-row on" : "switch-row"}>
              <span class="switch-label">
                <button
                  type="button"
                  class="button small"
                  disabled={busy.value.has(r.name)}
                  aria-describedby={`pause-${r.name}-help`}
                  onClick={() => press(r.name, !on)}
                  data-testid={`pause-${r.name}`}
                >
                  {on ? `Resume ${r.label}` : `Pause ${r.label}`}
                </button>
              </span>
              <span class="switch-help muted" id={`pause-${r.name}-help`}>
                {on
                  ? `${r.label}'s deliveries wait, unattempted, until it is resumed`
                  : `${r.label} gets its deliveries as they come`}
              </span>
              <span
                class={on ? "badge badge-warn" : "badge badge-ok"}
                data-testid={`pause-state-${r.name}`}
              >
                {on ? "paused" : "running"}
              </span>
            </li>
          );
        })}
      </ul>
    </>
  );
}
