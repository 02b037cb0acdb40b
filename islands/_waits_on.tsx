/**
 * The warning a redrive's dry run gives when its selection waits on earlier
 * dead letters (the same order's messages to the same receiver, written
 * before and dead too): sent without them, the receiver answers "not yet"
 * and the redriven ones die again at once. It names each, and offers to
 * include them in the redrive.
 */
import type { WaitedOn } from "./_console_types.ts";
import { OrderCode } from "./_order_code.tsx";
import { serviceLabel } from "../format.ts";

/** Props: what the dry run named, and the tick that includes them. */
export interface WaitsOnListProps {
  waitsOn: WaitedOn[];
  include: boolean;
  onInclude: (include: boolean) => void;
  /** The test id of the warning; its parts add `-item-<id>` and `-include`. */
  testid: string;
}

/** The earlier dead letters, and "Include the N earlier messages". */
export function WaitsOnList(props: WaitsOnListProps) {
  const n = props.waitsOn.length;
  return (
    <div class="waits-on warning" data-testid={props.testid}>
      <p>
        {n === 1 ? "One of these waits" : "These wait"} on{" "}
        {n === 1 ? "an earlier message" : `${n} earlier messages`}{" "}
        of the same order to the same receiver, dead too. Sent without{" "}
        {n === 1 ? "it" : "them"}, the receiver answers "not yet" and they die
        again:
      </p>
      <ul>
        {props.waitsOn.map((d) => (
          <li key={d.id} data-testid={`${props.testid}-item-${d.id}`}>
            <a href={`/console/deliveries/${d.id}`}>#{d.id}</a> {d.eventType} to
            {" "}
            {serviceLabel(d.subscriber)}, order <OrderCode id={d.orderId} />
            {d.lastError && (
              <>
                : <span class="error-text">{d.lastError}</span>
              </>
            )}
          </li>
        ))}
      </ul>
      <label>
        <input
          type="checkbox"
          checked={props.include}
          onChange={(e) => props.onInclude(e.currentTarget.checked)}
          data-testid={`${props.testid}-include`}
        />{" "}
        Include the {n === 1 ? "earlier message" : `${n} earlier messages`}{" "}
        (sent first, in the order they were written)
      </label>
    </div>
  );
}
