/**
 * The shapes of the console's JSON twins, as the islands read them: the
 * types of the wire contracts in services/console/contracts.ts, which the
 * read models parse their SQL results against before a page or a twin
 * sends them. Types only: `import type` keeps zod and the database code
 * out of the browser bundle.
 */
export type {
  Alert,
  AlertBoard,
  AlertEpisode,
  AlertsData,
  BoardData,
  CheckoutEvents,
  ClosureCounts,
  ClosureData,
  ClosureRowsData,
  ClosureState,
  DeadLettersData,
  DeliveriesData,
  DeliveryDetailData,
  DeliveryItem,
  DryRunAnswer,
  FailureGroup,
  FaultsData,
  JobView,
  KitchenCard,
  OrderViolations,
  OutboxAges,
  OverviewData,
  ReceiverMinute,
  ReceiversData,
  ReceiverStats,
  RedriveAnswer,
  RedriveOutcomeView,
  RefuseAnswer,
  ReleaseAnswer,
  WaitedOn,
  WorkersData,
} from "../services/console/contracts.ts";
