/**
 * Fault switches, per tenant (switches.ts), and the decorators that obey
 * them: a faulty transport (queue.ts), a faulty dispatcher (dispatcher.ts)
 * and a faulty receiver (receiver.ts). A switch acts in the running code,
 * around the hot path, never as a branch inside it.
 */
export {
  type ActiveFaults,
  type FaultReader,
  isOn,
  pgFaults,
  setFault,
} from "./switches.ts";
export { faultyQueue, REFUSED_SEND, RELAY_FAULTS } from "./queue.ts";
export { CONSUMER_FAULTS, faultyDispatcher, type Send } from "./dispatcher.ts";
export {
  faultyReceiver,
  RECEIVER_FAULTS,
  type ReceiverFaults,
} from "./receiver.ts";
