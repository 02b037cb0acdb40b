/**
 * The inline form that sends a corrected copy of a dead letter: its payload
 * as JSON, to edit, and a required reason. The server checks the payload
 * against the event type (400 naming the field) and asks the receiver
 * whether it applied the dead letter after all (409 "already applied"):
 * then nothing was sent, and the form says so in words and offers the
 * refusal that closes the dead letter instead.
 */
import { useSignal } from "@preact/signals";
import { useLayoutEffect, useRef } from "preact/hooks";
import type { JSX } from "preact";
import type { SupersedeResult } from "./_dead_letter_actions.ts";

/** Props: the payload to start from, what to call, and how to back out. */
export interface SupersedeFormProps {
  /** Says what is superseded, e.g. "delivery 12". */
  what: string;
  /** The dead letter's payload, the starting point of the correction. */
  payload: unknown;
  /** Sends the copy; resolves to its ids or to why it was not sent. */
  onSupersede: (payload: unknown, reason: string) => Promise<SupersedeResult>;
  onCancel: () => void;
  /** Backs out to the refusal, for a dead letter the receiver applied. */
  onRefuseInstead: () => void;
  /** Prefix of the `data-testid`s: `<prefix>-payload`, `-reason`, ... */
  testid: string;
}

const APPLIED = /^already applied: (.*)$/;

/** What went wrong, shaped for the operator. */
interface Problem {
  title: string;
  detail: string;
  /** The receiver had applied it: refusing is what closes it. */
  applied: boolean;
  issues: { path: string; message: string }[];
}

function problemOf(result: Exclude<SupersedeResult, { messageId: string }>) {
  const applied = result.status === 409 ? APPLIED.exec(result.error) : null;
  if (applied) {
    return {
      title: "Already applied: nothing was sent.",
      detail: `${
        applied[1].charAt(0).toUpperCase() + applied[1].slice(1)
      }. The receiver applied this message after all (its acknowledgement was lost, or it answered too late), so a copy would apply it twice.`,
      applied: true,
      issues: [],
    };
  }
  const fix = result.status === 400;
  return {
    title: fix ? "Not sent: fix the payload." : "Not sent.",
    // The issues say it field by field; the message would say it again.
    detail: fix && result.issues.length > 0 ? "" : result.error,
    applied: false,
    issues: result.issues,
  };
}

/** A payload editor, a required reason, a send button and a cancel button. */
export function SupersedeForm(props: SupersedeFormProps) {
  const text = useSignal(JSON.stringify(props.payload ?? {}, null, 2));
  const reason = useSignal("");
  const problem = useSignal<Problem | null>(null);
  const busy = useSignal(false);
  const editor = useRef<HTMLTextAreaElement>(null);
  const because = useRef<HTMLInputElement>(null);
  const alert = useRef<HTMLDivElement>(null);
  // At once, not at the next frame: a key pressed meanwhile would go to the
  // button that opened the form (islands/_focus.ts).
  useLayoutEffect(() => editor.current?.focus(), []);

  const local = (title: string, field: HTMLElement | null) => {
    problem.value = { title, detail: "", applied: false, issues: [] };
    field?.focus();
  };

  async function submit(event: JSX.TargetedSubmitEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy.value) return;
    let payload: unknown;
    try {
      payload = JSON.parse(text.value);
    } catch (error) {
      local(
        `The payload is not JSON: ${(error as Error).message}`,
        editor.current,
      );
      return;
    }
    if (!reason.value.trim()) {
      local("A reason is required.", because.current);
      return;
    }
    busy.value = true;
    const result = await props.onSupersede(payload, reason.value.trim());
    busy.value = false;
    if ("messageId" in result) return;
    problem.value = problemOf(result);
    // The send button was disabled meanwhile, and lost the focus.
    if (problem.value.applied) alert.current?.focus();
    else editor.current?.focus();
  }

  const p = problem.value;
  return (
    <form
      class="supersede-form"
      onSubmit={submit}
      onKeyDown={(e) => {
        if (e.key === "Escape") {
          e.preventDefault();
          props.onCancel();
        }
      }}
      noValidate
      data-testid={props.testid}
    >
      <label>
        <span>Corrected payload of {props.what} (JSON)</span>
        <textarea
          ref={editor}
          rows={12}
          spellcheck={false}
          value={text.value}
          onInput={(e) => {
            text.value = e.currentTarget.value;
            problem.value = null;
          }}
          aria-invalid={p && !p.applied ? true : undefined}
          data-testid={`${props.testid}-payload`}
        />
      </label>
      <label>
        <span>Why a corrected copy?</span>
        <input
          ref={because}
          maxLength={500}
          required
          value={reason.value}
          onInput={(e) => {
            reason.value = e.currentTarget.value;
            problem.value = null;
          }}
          data-testid={`${props.testid}-reason`}
        />
      </label>
      <div class="supersede-buttons">
        <button
          type="submit"
          class="button small"
          disabled={busy.value}
          data-testid={`${props.testid}-confirm`}
        >
          Send corrected copy
        </button>
        <button
          type="button"
          class="button small quiet"
          onClick={props.onCancel}
          data-testid={`${props.testid}-cancel`}
        >
          Cancel
        </button>
      </div>
      {p && (
        <div
          ref={alert}
          class={p.applied ? "form-error supersede-applied" : "form-error"}
          role="alert"
          tabIndex={-1}
          data-testid={`${props.testid}-error`}
          data-applied={p.applied ? "true" : undefined}
        >
          <strong>{p.title}</strong>
          {p.detail && <p>{p.detail}</p>}
          {p.issues.length > 0 && (
            <ul>
              {p.issues.map((i) => (
                <li key={i.path}>
                  <code>{i.path}</code>: {i.message}
                </li>
              ))}
            </ul>
          )}
          {p.applied && (
            <button
              type="button"
              class="button small refuse"
              onClick={props.onRefuseInstead}
              data-testid={`${props.testid}-refuse-instead`}
            >
              Refuse the dead letter instead…
            </button>
          )}
        </div>
      )}
    </form>
  );
}
