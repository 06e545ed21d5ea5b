/**
 * The handler API: everything a handler author imports, from this one door.
 *
 * @example
 * import { defineHandlers, PermanentError, type Handler } from "../handler-api";
 *
 * Below processing and forwarding: both build on it, and it imports neither.
 */
export type { Handler, HandlerContext, OrderGuard } from "./context";
export {
  defineHandlers,
  subscribers,
  DEFAULT_SUBSCRIBER,
  type Accepts,
  type CodeSubscriber,
  type DeliveryView,
  type HandlerRegistry,
  type RetrySchedule,
  type Subscriber,
  type SubscriberResolver,
} from "./registry";
export { DeferredError, PermanentError, RetryAfterError } from "./errors";
export { sql, SqlStatement, type Effect, type SqlValue } from "../sql";
export { acceptsFilter } from "../filters";
export { isoTime } from "../store/clock";
