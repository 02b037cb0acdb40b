/**
 * The checkout form: who, how and when. It checks the order request against
 * the same schema the server applies, posts it with an idempotency key and
 * the CSRF token, and goes to the order's page once the order is placed.
 */
import { useSignal } from "@preact/signals";
import { useEffect } from "preact/hooks";
import type { JSX } from "preact";
import {
  cartLines,
  cartReady,
  type CatalogItem,
  clearCart,
  startCart,
} from "./_cart_store.ts";
import {
  addDays,
  localToday,
  MAX_DAYS_AHEAD,
  orderRequestSchema,
} from "./_checkout_schema.ts";
import { checkoutKey, forgetCheckoutKey } from "./_idempotency.ts";

/** Props: the menu, so that only items it sells are sent. */
export interface CheckoutFormProps {
  menu: CatalogItem[];
}

interface Issue {
  path: string;
  message: string;
}

// Fields that show their own message; any other issue path is shown above
// the button. `items.0.qty` and the like belong to the basket.
const FIELDS = ["customer.name", "customer.email", "fulfilment", "day"];

function byField(issues: Issue[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { path, message } of issues) {
    const field = FIELDS.includes(path)
      ? path
      : path.startsWith("items")
      ? "items"
      : "form";
    out[field] ??= message;
  }
  return out;
}

function csrfToken(): string | undefined {
  return document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')
    ?.content || undefined;
}

/** Collects the customer's details and places the order. */
export default function CheckoutForm({ menu }: CheckoutFormProps) {
  const name = useSignal("");
  const email = useSignal("");
  const fulfilment = useSignal<"pickup" | "delivery">("pickup");
  const day = useSignal("");
  const today = useSignal("");
  const errors = useSignal<Record<string, string>>({});
  const formError = useSignal("");
  const posting = useSignal(false);
  // After the first submit, messages follow the input as it is corrected.
  const submitted = useSignal(false);

  useEffect(() => {
    startCart();
    today.value = localToday();
    if (!day.value) day.value = today.value;
  }, []);

  function request() {
    const items = cartLines(menu);
    return {
      items,
      customer: { name: name.value, email: email.value },
      fulfilment: fulfilment.value,
      day: day.value,
      idempotencyKey: checkoutKey(JSON.stringify(items)),
    };
  }

  function check() {
    const result = orderRequestSchema(today.value || localToday())
      .safeParse(request());
    errors.value = result.success ? {} : byField(
      result.error.issues.map((i) => ({
        path: i.path.join("."),
        message: i.message,
      })),
    );
    return result;
  }

  function edit(apply: () => void) {
    apply();
    if (submitted.value) check();
  }

  async function submit(event: JSX.TargetedSubmitEvent<HTMLFormElement>) {
    event.preventDefault();
    if (posting.value) return;
    submitted.value = true;
    formError.value = "";
    const checked = check();
    if (!checked.success) return;
    posting.value = true;
    try {
      const token = csrfToken();
      const response = await fetch("/api/orders", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json",
          ...(token ? { "x-csrf-token": token } : {}),
        },
        body: JSON.stringify(checked.data),
      });
      const body = await response.json().catch(() => ({}));
      if (
        (response.status === 201 || response.status === 200) && body.orderId
      ) {
        clearCart();
        forgetCheckoutKey();
        // posting stays true: the button stays disabled while the page goes.
        location.assign(`/orders/${encodeURIComponent(body.orderId)}`);
        return;
      }
      if (response.status === 400 && Array.isArray(body.issues)) {
        errors.value = byField(body.issues);
      }
      formError.value = typeof body.error === "string"
        ? body.error
        : `The bakery answered ${response.status}. Please try again.`;
    } catch {
      // The order may or may not have arrived; the same key goes again.
      formError.value =
        "We could not reach the bakery. Try again: you will not be charged twice.";
    }
    posting.value = false;
  }

  const e = errors.value;
  const field = (id: string, path: string) => ({
    id,
    "aria-invalid": e[path] ? true : undefined,
    "aria-describedby": e[path] ? `${id}-error` : undefined,
  });
  const message = (id: string, path: string) =>
    e[path] && <span class="field-error" id={`${id}-error`}>{e[path]}</span>;
  const empty = cartReady.value && cartLines(menu).length === 0;

  return (
    <form class="checkout-form" onSubmit={submit} noValidate>
      <div class="field">
        <label for="name">Name</label>
        <input
          {...field("name", "customer.name")}
          name="name"
          autocomplete="name"
          required
          value={name.value}
          onInput={(ev) => edit(() => name.value = ev.currentTarget.value)}
        />
        {message("name", "customer.name")}
      </div>
      <div class="field">
        <label for="email">Email</label>
        <input
          {...field("email", "customer.email")}
          name="email"
          type="email"
          autocomplete="email"
          required
          value={email.value}
          onInput={(ev) => edit(() => email.value = ev.currentTarget.value)}
        />
        {message("email", "customer.email")}
      </div>
      <fieldset
        class="field choice"
        aria-describedby={e.fulfilment ? "fulfilment-error" : undefined}
      >
        <legend>Pickup or delivery</legend>
        {(["pickup", "delivery"] as const).map((value) => (
          <label key={value} class="choice-option">
            <input
              type="radio"
              name="fulfilment"
              value={value}
              checked={fulfilment.value === value}
              onChange={() =>
                edit(() =>
                  fulfilment.value = value
                )}
            />
            <span>
              <strong>{value === "pickup" ? "Pickup" : "Delivery"}</strong>
              <small>
                {value === "pickup"
                  ? "From the counter, 7:00 to 14:00"
                  : "By bike, in the morning"}
              </small>
            </span>
          </label>
        ))}
        {message("fulfilment", "fulfilment")}
      </fieldset>
      <div class="field">
        <label for="day">Day</label>
        <input
          {...field("day", "day")}
          name="day"
          type="date"
          required
          min={today.value || undefined}
          max={today.value ? addDays(today.value, MAX_DAYS_AHEAD) : undefined}
          value={day.value}
          onInput={(ev) => edit(() => day.value = ev.currentTarget.value)}
        />
        {message("day", "day")}
      </div>
      {(e.items || empty) && (
        <p class="form-error" role="alert">
          {e.items ?? "Your basket is empty."} <a href="/">Back to the menu</a>
        </p>
      )}
      {(formError.value || e.form) && (
        <p class="form-error" role="alert">{formError.value || e.form}</p>
      )}
      <button
        type="submit"
        class="button primary wide"
        disabled={posting.value || !cartReady.value || empty}
        aria-busy={posting.value || undefined}
      >
        {posting.value ? "Placing your order…" : "Place order"}
      </button>
    </form>
  );
}
