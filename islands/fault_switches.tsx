/**
 * The fault switches of the operator's sandbox, live. A flip PUTs
 * `{ [name]: boolean }` to `/api/console/faults` and shows the server's
 * answer; while the request is out the switch shows the new position and
 * takes no flip (aria-disabled, not disabled: a disabled control loses the
 * keyboard's focus), and a refusal puts it back with the reason.
 */
import { useSignal } from "@preact/signals";
import { failure, sendJson } from "./_console_api.ts";
import { useLive } from "./_live.ts";
import type { FaultsData } from "./_console_types.ts";

/** One switch: its name (the API's key), label and what it does. */
export interface FaultSwitch {
  name: string;
  label: string;
  description: string;
}

/** Props: the switches (from services/faults.ts) and their positions. */
export interface FaultSwitchesProps {
  faults: FaultSwitch[];
  initial: FaultsData;
}

/** A toggle per fault. */
export default function FaultSwitches(props: FaultSwitchesProps) {
  const live = useLive("/api/console/faults", props.initial);
  const pending = useSignal<Readonly<Record<string, boolean>>>({});
  const error = useSignal("");

  async function flip(name: string, on: boolean) {
    pending.value = { ...pending.value, [name]: on };
    error.value = "";
    const answer = await sendJson("PUT", "/api/console/faults", { [name]: on });
    if (answer.ok) live.data.value = answer.body as FaultsData;
    else error.value = failure(answer);
    const { [name]: _, ...rest } = pending.value;
    pending.value = rest;
  }

  const on = live.data.value;
  return (
    <>
      {(error.value || live.error.value) && (
        <p class="form-error" role="alert" data-testid="faults-error">
          {error.value || live.error.value}
        </p>
      )}
      <ul class="switches" data-testid="fault-switches">
        {props.faults.map((f) => {
          const busy = f.name in pending.value;
          const checked = busy ? pending.value[f.name] : !!on[f.name];
          return (
            <li key={f.name} class={checked ? "switch-row on" : "switch-row"}>
              <label class="switch">
                <input
                  type="checkbox"
                  role="switch"
                  checked={checked}
                  aria-disabled={busy ? "true" : undefined}
                  aria-describedby={`fault-${f.name}-help`}
                  // A click while the request is out changes nothing.
                  onClick={(e) =>
                    busy && e.preventDefault()}
                  onChange={(e) =>
                    flip(f.name, e.currentTarget.checked)}
                  data-testid={`fault-${f.name}`}
                />
                <span class="switch-label">{f.label}</span>
              </label>
              <span class="switch-help muted" id={`fault-${f.name}-help`}>
                {f.description}
              </span>
              <span
                class={checked ? "badge badge-bad" : "badge badge-ok"}
                data-testid={`fault-state-${f.name}`}
              >
                {checked ? "on" : "off"}
              </span>
            </li>
          );
        })}
      </ul>
    </>
  );
}
