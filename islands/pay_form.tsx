/**
 * Paying for an order. In test mode: a card form that checks what was typed,
 * sends the card number to `POST /api/orders/:id/pay`, and goes back to the
 * order's page, where the payment lands a moment later through the
 * Stripe-signed webhook. With real Stripe keys: one button that asks for a
 * Checkout session and goes there.
 */
import { useSignal } from "@preact/signals";
import type { JSX } from "preact";
import { postJson } from "./_api.ts";
import {
  cardDigits,
  checkCard,
  checkCvc,
  checkExpiry,
  formatExpiry,
  groupCard,
} from "./_card.ts";
import { formatEuros } from "../format.ts";

/** Props: which order, how much, and which gateway the bakery runs. */
export interface PayFormProps {
  orderId: string;
  amountCents: number;
  /** The order's version now; the order page waits for it to move on. */
  version: number;
  mode: "test" | "stripe";
}

type Field = "card" | "expiry" | "cvc";

/** The card form (test mode) or the way to Stripe Checkout. */
export default function PayForm(props: PayFormProps) {
  const card = useSignal("");
  const expiry = useSignal("");
  const cvc = useSignal("");
  const errors = useSignal<Partial<Record<Field, string>>>({});
  const formError = useSignal("");
  const posting = useSignal(false);
  // After the first submit, messages follow the input as it is corrected.
  const submitted = useSignal(false);
  const id = encodeURIComponent(props.orderId);

  function check() {
    const found: Partial<Record<Field, string>> = {};
    const add = (field: Field, message: string | null) => {
      if (message) found[field] = message;
    };
    add("card", checkCard(card.value));
    add("expiry", checkExpiry(expiry.value));
    add("cvc", checkCvc(cvc.value));
    errors.value = found;
    return Object.keys(found).length === 0;
  }

  function edit(apply: () => void) {
    apply();
    if (submitted.value) check();
  }

  async function pay(body: { card?: string }) {
    posting.value = true;
    formError.value = "";
    try {
      const { status, body: answer } = await postJson(
        `/api/orders/${id}/pay`,
        body,
      );
      if (status === 202) {
        // posting stays true: the button stays disabled while the page goes.
        if (answer.checkoutUrl) location.assign(answer.checkoutUrl);
        else location.assign(`/orders/${id}?awaiting=${props.version}`);
        return;
      }
      if (status === 400 && Array.isArray(answer.issues)) {
        const found: Partial<Record<Field, string>> = {};
        for (const issue of answer.issues) {
          if (issue.path === "card") found.card ??= issue.message;
        }
        errors.value = found;
      }
      formError.value = typeof answer.error === "string"
        ? answer.error
        : `The bakery answered ${status}. Please try again.`;
    } catch {
      formError.value = "We could not reach the bakery. Please try again.";
    }
    posting.value = false;
  }

  function submit(event: JSX.TargetedSubmitEvent<HTMLFormElement>) {
    event.preventDefault();
    if (posting.value) return;
    if (props.mode === "stripe") return pay({});
    submitted.value = true;
    if (check()) pay({ card: cardDigits(card.value) });
  }

  const e = errors.value;
  const field = (name: Field) => ({
    id: name,
    name,
    "aria-invalid": e[name] ? true : undefined,
    "aria-describedby": e[name] ? `${name}-error` : `${name}-hint`,
  });
  const message = (name: Field) =>
    e[name] && <span class="field-error" id={`${name}-error`}>{e[name]}</span>;
  const amount = formatEuros(props.amountCents);

  if (props.mode === "stripe") {
    return (
      <form class="pay-form" onSubmit={submit}>
        {formError.value && (
          <p class="form-error" role="alert">{formError.value}</p>
        )}
        <button
          type="submit"
          class="button primary wide"
          disabled={posting.value}
          aria-busy={posting.value || undefined}
        >
          {posting.value ? "Opening Stripe…" : `Pay ${amount} with Stripe`}
        </button>
      </form>
    );
  }

  return (
    <form class="pay-form" onSubmit={submit} noValidate>
      <div class="field">
        <label for="card">Card number</label>
        <input
          {...field("card")}
          inputMode="numeric"
          autocomplete="cc-number"
          placeholder="1234 1234 1234 1234"
          maxLength={23}
          value={card.value}
          onInput={(ev) => edit(() => card.value = ev.currentTarget.value)}
          onBlur={() => card.value = groupCard(card.value)}
        />
        {message("card")}
        <ul class="card-hints" id="card-hint">
          <li>
            <code>4242 4242 4242 4242</code>{" "}
            <span class="badge badge-ok">succeeds</span>
          </li>
          <li>
            <code>4000 0000 0000 0002</code>{" "}
            <span class="badge badge-bad">declined</span>
          </li>
        </ul>
      </div>
      <div class="field-row">
        <div class="field">
          <label for="expiry">Expiry</label>
          <input
            {...field("expiry")}
            inputMode="numeric"
            autocomplete="cc-exp"
            placeholder="MM/YY"
            maxLength={5}
            value={expiry.value}
            onInput={(ev) =>
              edit(() => expiry.value = formatExpiry(ev.currentTarget.value))}
          />
          <small class="muted" id="expiry-hint">Any future month</small>
          {message("expiry")}
        </div>
        <div class="field">
          <label for="cvc">CVC</label>
          <input
            {...field("cvc")}
            inputMode="numeric"
            autocomplete="cc-csc"
            placeholder="123"
            maxLength={3}
            value={cvc.value}
            onInput={(ev) => edit(() => cvc.value = ev.currentTarget.value)}
          />
          <small class="muted" id="cvc-hint">Any 3 digits</small>
          {message("cvc")}
        </div>
      </div>
      {formError.value && (
        <p class="form-error" role="alert">{formError.value}</p>
      )}
      <button
        type="submit"
        class="button primary wide"
        disabled={posting.value}
        aria-busy={posting.value || undefined}
      >
        {posting.value ? "Paying…" : `Pay ${amount}`}
      </button>
    </form>
  );
}
