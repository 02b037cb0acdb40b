/**
 * An order as people name it: its code ("61B797", what the customer reads
 * on their page and receipt), linked to the order's page, with the full id
 * on hover and a button that copies it. Server pages and islands both
 * render it; the copy button works through one listener of the bundle
 * (`listenForCopy`), so it needs no island of its own.
 */
import { idTail, orderCode } from "../format.ts";

/** The attribute a copy button carries: the text it copies. */
export const COPY_ATTR = "data-copy";

/** Props: the order's id; `link: false` for a code that is not a link. */
export interface OrderCodeProps {
  id: string | null | undefined;
  link?: boolean;
}

/** The order's code, its link, and Copy id. */
export function OrderCode({ id, link = true }: OrderCodeProps) {
  if (!id) return <span>–</span>;
  const code = (
    <code class="order-code" title={`Order ${id}`}>{orderCode(id)}</code>
  );
  return (
    <span class="id-with-copy">
      {link ? <a href={`/orders/${encodeURIComponent(id)}`}>{code}</a> : code}
      <CopyButton text={id} label={`Copy order id ${id}`} />
    </span>
  );
}

/** Props of a message id shown by its tail. */
export interface MessageIdProps {
  id: string;
}

/** A message id by its tail, the full id on hover and to copy. */
export function MessageId({ id }: MessageIdProps) {
  return (
    <span class="id-with-copy">
      <code title={`Message ${id}`}>{idTail(id)}</code>
      <CopyButton text={id} label={`Copy message id ${id}`} />
    </span>
  );
}

/** A small button that copies `text`; its label says what. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  return (
    <button
      type="button"
      class="copy-id"
      {...{ [COPY_ATTR]: text }}
      aria-label={label}
      title={label}
    >
      {/* Drawn, not a character: "⧉" is missing from common fonts. */}
      <svg
        aria-hidden="true"
        width="12"
        height="12"
        viewBox="0 0 12 12"
        fill="none"
        stroke="currentColor"
        stroke-width="1.3"
      >
        <rect x="3.5" y="3.5" width="7" height="7" rx="1" />
        <path d="M8.5 1.5h-6a1 1 0 0 0-1 1v6" />
      </svg>
    </button>
  );
}

/**
 * One listener for every copy button on the page, present or added later
 * by an island: copies the button's text and says so in its title for a
 * moment. The clipboard needs a secure context (https or localhost); where
 * it is missing the full id is still in the title to select.
 */
export function listenForCopy(root: Document = document): void {
  root.addEventListener("click", (event) => {
    const button = (event.target as Element | null)?.closest?.(
      `button[${COPY_ATTR}]`,
    ) as HTMLButtonElement | null;
    if (!button) return;
    const text = button.getAttribute(COPY_ATTR) ?? "";
    navigator.clipboard?.writeText(text).then(
      () => {
        button.dataset.copied = "true";
        setTimeout(() => delete button.dataset.copied, 1500);
      },
      () => {},
    );
  });
}
