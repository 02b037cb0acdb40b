/**
 * Every island, by the name its markup carries. The client bundle hydrates
 * from this table, and pages render islands through `Island`, which accepts
 * only these names with their props.
 */
import { createIsland, type IslandRegistry } from "../kit/http/islands.ts";
import AddToCart from "./add_to_cart.tsx";
import BasketLink from "./basket_link.tsx";
import Cart from "./cart.tsx";
import CheckoutForm from "./checkout_form.tsx";
import OrderTimeline from "./order_timeline.tsx";
import PayForm from "./pay_form.tsx";
import AlertBanner from "./alert_banner.tsx";
import ClosureMatrix from "./closure_matrix.tsx";
import ClosureRows from "./closure_rows.tsx";
import ConsoleOverview from "./console_overview.tsx";
import DeadLetters from "./dead_letters.tsx";
import DeliveriesList from "./deliveries_list.tsx";
import DeliveryDetail from "./delivery_detail.tsx";
import FailureGroups from "./failure_groups.tsx";
import FaultSwitches from "./fault_switches.tsx";
import KitchenBoard from "./kitchen_board.tsx";
import LiveStatus from "./live_status.tsx";
import OrderViolationsList from "./order_violations_list.tsx";
import OutboxRows from "./outbox_rows.tsx";
import ReceiverPauses from "./receiver_pauses.tsx";
import ReceiversList from "./receivers_list.tsx";
import WorkersList from "./workers_list.tsx";
import SignInForm from "./sign_in_form.tsx";
import TryIt from "./try_it.tsx";
import HowCosts from "./how_costs.tsx";

/** The island components by name. */
export const islands = {
  add_to_cart: AddToCart,
  basket_link: BasketLink,
  cart: Cart,
  checkout_form: CheckoutForm,
  order_timeline: OrderTimeline,
  pay_form: PayForm,
  // The operator console.
  alert_banner: AlertBanner,
  closure_matrix: ClosureMatrix,
  closure_rows: ClosureRows,
  console_overview: ConsoleOverview,
  dead_letters: DeadLetters,
  deliveries_list: DeliveriesList,
  delivery_detail: DeliveryDetail,
  failure_groups: FailureGroups,
  fault_switches: FaultSwitches,
  kitchen_board: KitchenBoard,
  live_status: LiveStatus,
  order_violations_list: OrderViolationsList,
  outbox_rows: OutboxRows,
  receiver_pauses: ReceiverPauses,
  receivers_list: ReceiversList,
  workers_list: WorkersList,
  sign_in_form: SignInForm,
  // The How it's built page.
  try_it: TryIt,
  how_costs: HowCosts,
} satisfies IslandRegistry;

/**
 * Renders an island on the server and marks it for hydration.
 *
 * @example
 * ```tsx
 * <Island name="cart" props={{ menu }} />;
 * ```
 */
export const Island = /* @__PURE__ */ createIsland(islands);
