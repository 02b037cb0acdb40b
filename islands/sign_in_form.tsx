/**
 * The console's sign-in form.
 *
 * Why an island that posts JSON, and not only a classic form: the session
 * middleware checks a form post's `_csrf` field against the session's token,
 * and a first-time visitor has no session, so no token to send. Making one on
 * `GET /sign-in` would create a sandbox for every crawler and link preview
 * that fetches the page. A `fetch` from this page instead carries a same-site
 * `Origin`, which the CSRF check accepts with or without a session; the
 * server then names the guest's sandbox, or creates one for a newcomer
 * (`POST /api/session`). One path for both.
 *
 * The markup stays a real form (`POST /sign-in` with `_csrf`), so a guest
 * with a session can still sign in with scripts off.
 */
import { useSignal } from "@preact/signals";
import type { JSX } from "preact";
import { failure, sendJson } from "./_console_api.ts";

/** Props: where to go after signing in, the token (may be empty), errors. */
export interface SignInFormProps {
  next: string;
  csrfToken: string;
  name?: string;
  error?: string;
}

/** Asks for a name and signs in. */
export default function SignInForm(props: SignInFormProps) {
  const name = useSignal(props.name ?? "");
  const error = useSignal(props.error ?? "");
  const posting = useSignal(false);

  async function submit(event: JSX.TargetedSubmitEvent<HTMLFormElement>) {
    event.preventDefault();
    if (posting.value) return;
    if (!name.value.trim()) {
      error.value = "Please enter a name.";
      return;
    }
    posting.value = true;
    error.value = "";
    const answer = await sendJson("POST", "/api/session", { name: name.value });
    if (answer.status === 201) {
      // posting stays true: the button stays disabled while the page goes.
      location.assign(props.next);
      return;
    }
    error.value = answer.body?.issues?.[0]?.message ?? failure(answer);
    posting.value = false;
  }

  return (
    <form
      method="post"
      action="/sign-in"
      class="sign-in-form"
      onSubmit={submit}
      noValidate
      data-testid="sign-in-form"
    >
      <input type="hidden" name="_csrf" value={props.csrfToken} />
      <input type="hidden" name="next" value={props.next} />
      <div class="field">
        <label for="sign-in-name">Your name</label>
        <input
          id="sign-in-name"
          name="name"
          required
          maxLength={80}
          autocomplete="nickname"
          value={name.value}
          onInput={(e) => name.value = e.currentTarget.value}
          aria-invalid={error.value ? true : undefined}
          aria-describedby={error.value ? "sign-in-error" : undefined}
          data-testid="sign-in-name"
        />
      </div>
      {error.value && (
        <p
          class="form-error"
          id="sign-in-error"
          role="alert"
          data-testid="sign-in-error"
        >
          {error.value}
        </p>
      )}
      <button
        type="submit"
        class="button primary"
        disabled={posting.value}
        data-testid="sign-in-submit"
      >
        {posting.value ? "Signing in…" : "Sign in"}
      </button>
    </form>
  );
}
