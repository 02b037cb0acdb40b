/**
 * Where the keyboard's focus goes once the page shows what an action did:
 * the button that was pressed may be gone (a row's) or disabled, and a
 * focus left on nothing starts again at the top of the page.
 *
 * The element is looked up by its id in a layout effect, right after the
 * render that shows it and before the browser handles the next key press.
 * An effect (`useEffect`) waits for the next frame, which a browser may
 * hold back: a key pressed meanwhile went to the page's body.
 */
import { type Signal, useSignal } from "@preact/signals";
import { useLayoutEffect } from "preact/hooks";

/** Set its value to an element's id to move the focus there. */
export function useFocusNext(): Signal<string | null> {
  const next = useSignal<string | null>(null);
  useLayoutEffect(() => {
    if (!next.value) return;
    document.getElementById(next.value)?.focus();
    next.value = null;
  }, [next.value]);
  return next;
}
