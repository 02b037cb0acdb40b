/**
 * The kitchen board, live: one card per order in a column by its state, each
 * with its items and a link to the order's timeline. Twin of
 * `GET /api/kitchen/board`.
 */
import { formatWhen } from "../format.ts";
import { useLive } from "./_live.ts";
import type { BoardData, KitchenCard } from "./_console_types.ts";
import { OrderCode } from "./_order_code.tsx";

/** Props: the server's render of the twin. */
export interface KitchenBoardProps {
  initial: BoardData;
}

const COLUMNS = [
  { state: "new", label: "New", help: "Placed, not paid: bake only once paid" },
  { state: "confirmed", label: "Confirmed", help: "Paid: bake it" },
  { state: "cancelled", label: "Cancelled", help: "Do not bake" },
] as const;

/** Three columns of order cards. */
export default function KitchenBoard(props: KitchenBoardProps) {
  const live = useLive("/api/kitchen/board", props.initial);
  const cards = live.data.value.cards;
  return (
    <>
      {live.error.value && <p class="form-error">{live.error.value}</p>}
      <div class="board" data-testid="kitchen-board">
        {COLUMNS.map((column) => {
          const mine = cards.filter((c) => c.state === column.state);
          return (
            <section
              key={column.state}
              class={`board-column column-${column.state}`}
              aria-labelledby={`column-${column.state}`}
              data-testid={`kitchen-column-${column.state}`}
            >
              <h2 id={`column-${column.state}`}>
                {column.label} <span class="count">{mine.length}</span>
              </h2>
              <p class="muted">{column.help}</p>
              {mine.length === 0
                ? <p class="muted empty">No cards.</p>
                : mine.map((card) => <Card key={card.orderId} card={card} />)}
            </section>
          );
        })}
      </div>
    </>
  );
}

function Card({ card }: { card: KitchenCard }) {
  return (
    <article
      class="kitchen-card"
      data-testid={`kitchen-card-${card.orderId}`}
      data-state={card.state}
    >
      <header>
        <OrderCode id={card.orderId} link={false} />
        {card.day && <span class="muted">for {card.day}</span>}
      </header>
      <ul>
        {card.items.map((item) => (
          <li key={item.sku}>
            <strong>{item.qty} ×</strong> {item.name}
          </li>
        ))}
      </ul>
      <footer>
        <span class="muted">
          v{card.version}, {formatWhen(card.updatedAt)}
        </span>
        <a
          href={`/orders/${encodeURIComponent(card.orderId)}`}
          data-testid="kitchen-card-timeline"
        >
          Timeline
        </a>
      </footer>
    </article>
  );
}
