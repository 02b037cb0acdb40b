/**
 * The inline form that asks why a dead letter is refused. A refusal closes
 * an obligation for good, so the reason is required: it is kept with the
 * operator's name, and the receiver's owner reads it later.
 */
import { useSignal } from "@preact/signals";
import { useLayoutEffect, useRef } from "preact/hooks";
import type { JSX } from "preact";

/** Props: what to call with the reason, and how to back out. */
export interface RefuseFormProps {
  /** Says what is refused, e.g. "dead letter 12" or "3 dead letters". */
  what: string;
  /** Refuses; resolves to an error message, or null when it worked. */
  onRefuse: (reason: string) => Promise<string | null>;
  onCancel: () => void;
  /** Prefix of the `data-testid`s: `<prefix>-reason`, `-confirm`, `-cancel`. */
  testid: string;
}

/** A required reason, a confirm button and a cancel button. */
export function RefuseForm(props: RefuseFormProps) {
  const reason = useSignal("");
  const error = useSignal("");
  const busy = useSignal(false);
  const input = useRef<HTMLInputElement>(null);
  // At once, not at the next frame: a key pressed meanwhile would go to the
  // button that opened the form (islands/_focus.ts).
  useLayoutEffect(() => input.current?.focus(), []);

  async function submit(event: JSX.TargetedSubmitEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy.value) return;
    if (!reason.value.trim()) {
      error.value = "A reason is required.";
      input.current?.focus();
      return;
    }
    busy.value = true;
    const failed = await props.onRefuse(reason.value.trim());
    busy.value = false;
    if (failed) {
      error.value = failed;
      // The confirm button was disabled meanwhile, and lost the focus.
      input.current?.focus();
    }
  }

  return (
    <form
      class="refuse-form"
      onSubmit={submit}
      // Escape backs out, as it does from a dialog.
      onKeyDown={(e) => {
        if (e.key === "Escape") {
          e.preventDefault();
          props.onCancel();
        }
      }}
      noValidate
    >
      <label>
        <span class="visually-hidden">Why refuse {props.what}?</span>
        <input
          ref={input}
          placeholder={`Why refuse ${props.what}?`}
          maxLength={500}
          required
          value={reason.value}
          onInput={(e) => {
            reason.value = e.currentTarget.value;
            error.value = "";
          }}
          aria-invalid={error.value ? true : undefined}
          data-testid={`${props.testid}-reason`}
        />
      </label>
      <button
        type="submit"
        class="button small refuse-confirm"
        disabled={busy.value}
        data-testid={`${props.testid}-confirm`}
      >
        Refuse
      </button>
      <button
        type="button"
        class="button small quiet"
        onClick={props.onCancel}
        data-testid={`${props.testid}-cancel`}
      >
        Cancel
      </button>
      {error.value && (
        <span
          class="field-error"
          role="alert"
          data-testid={`${props.testid}-error`}
        >
          {error.value}
        </span>
      )}
    </form>
  );
}
