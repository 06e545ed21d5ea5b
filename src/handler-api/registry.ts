/**
 * Which subscribers a delivery goes to. The user declares a registry (`defineHandlers`): by source,
 * either handlers by event type (the source's one code subscriber, named `handler`) or, with
 * `subscribers({...})`, several named code subscribers, each with its own handlers, filter and
 * retry schedule. The consumer asks a resolver, which the Worker wires from the registry and what
 * else subscribes to a source (src/index.ts: the configured forward destinations,
 * forwarding/resolver.ts), so that processing knows nothing of forwarding.
 *
 * Each subscriber of a delivery has its own progress (its attempts, retries, result and replay):
 * one failing, slow or down never re-runs another's handler or holds it back
 * (processing/consumer.ts, store/d1/subscriber-runs.ts).
 */
import type { Handler } from "./context";

/** Handlers by event type; `"*"` matches any event type of the source. */
export type HandlersByEventType = Readonly<Record<string, Handler>>;

/** A retry schedule: attempts before a delivery fails, and the first backoff (doubling from there). */
export interface RetrySchedule {
  readonly maxAttempts: number;
  readonly retryBaseSeconds: number;
}

/** What a subscriber's filter sees of a delivery. */
export interface DeliveryView {
  readonly eventType: string | null;
  /** A request header as stored (credentials never are), by name in any case; null when absent. */
  header(name: string): string | null;
  /** The body parsed as JSON; undefined when it is not JSON. */
  readonly body: unknown;
}

/** A filter's verdict: a delivery that does not match is not run for that subscriber. */
export type Accepts = (delivery: DeliveryView) => boolean;

/** A code subscriber as declared in `subscribers({...})`. */
export interface CodeSubscriber {
  /** Its handlers by event type (`"*"`: any); an event type with none is not this subscriber's. */
  readonly on: HandlersByEventType;
  /** Runs only for the deliveries this accepts (see filters in docs/handlers.md). */
  readonly accepts?: Accepts;
  /** Its own retry schedule; the inbox's MAX_ATTEMPTS and RETRY_BASE_SECONDS when absent. */
  readonly retry?: RetrySchedule;
}

const SUBSCRIBERS: unique symbol = Symbol("webhook-inbox subscribers");

/** Several named code subscribers of one source (`subscribers({...})`). */
export interface SubscriberSet {
  readonly [SUBSCRIBERS]: Readonly<Record<string, CodeSubscriber>>;
}

/**
 * By source: handlers by event type (one subscriber, named `handler`), or several named subscribers.
 * A delivery no subscriber takes is marked done and shown as unhandled, not failed.
 */
export type HandlerRegistry = Readonly<Record<string, HandlersByEventType | SubscriberSet>>;

/** One subscriber of a source, as the consumer runs it. */
export interface Subscriber {
  /** Unique within its source: its progress, lease, listing and replay go by it. */
  readonly name: string;
  /** The handlers to run, in order, in one attempt, for a delivery of `eventType`; none: not this subscriber's. */
  handlersFor(eventType: string | null): readonly Handler[];
  readonly accepts?: Accepts;
  readonly retry?: RetrySchedule;
}

/** A source's subscribers (src/index.ts wires the Worker's). */
export type SubscriberResolver = (source: string, env: Env) => readonly Subscriber[];

/** The name of a source's one code subscriber when it is declared as handlers by event type. */
export const DEFAULT_SUBSCRIBER = "handler";

/** A subscriber's name: lower-case letters, digits, `-` and `_`, as in a var's name (forward destinations). */
export const SUBSCRIBER_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** Declares the registry with its types checked. */
export function defineHandlers<Registry extends HandlerRegistry>(registry: Registry): Registry {
  return registry;
}

/**
 * Several named code subscribers for one source of the registry.
 * @example
 * defineHandlers({
 *   stripe: subscribers({
 *     ledger: { on: { "invoice.paid": recordInvoice } },
 *     analytics: { on: { "*": track }, retry: { maxAttempts: 3, retryBaseSeconds: 60 } },
 *   }),
 * });
 */
export function subscribers(set: Readonly<Record<string, CodeSubscriber>>): SubscriberSet {
  for (const name of Object.keys(set)) {
    if (!SUBSCRIBER_NAME.test(name)) throw new TypeError(`subscriber name ${JSON.stringify(name)} must match ${SUBSCRIBER_NAME}`);
  }
  return { [SUBSCRIBERS]: set };
}

/** The handler of `byType` for `eventType` (`"*"` else), or undefined. */
function handlerOf(byType: HandlersByEventType, eventType: string | null): Handler | undefined {
  if (eventType !== null && Object.hasOwn(byType, eventType)) return byType[eventType];
  return Object.hasOwn(byType, "*") ? byType["*"] : undefined;
}

function isSubscriberSet(value: HandlersByEventType | SubscriberSet): value is SubscriberSet {
  return Object.hasOwn(value, SUBSCRIBERS);
}

/** The code subscribers `registry` declares for `source`, in declaration order. */
export function codeSubscribers(registry: HandlerRegistry, source: string): Subscriber[] {
  const declared = Object.hasOwn(registry, source) ? registry[source] : undefined;
  if (!declared) return [];
  const set = isSubscriberSet(declared) ? declared[SUBSCRIBERS] : { [DEFAULT_SUBSCRIBER]: { on: declared } };
  return Object.entries(set).map(([name, subscriber]) => ({
    name,
    handlersFor: (eventType) => {
      const handler = handlerOf(subscriber.on, eventType);
      return handler ? [handler] : [];
    },
    ...(subscriber.accepts ? { accepts: subscriber.accepts } : {}),
    ...(subscriber.retry ? { retry: subscriber.retry } : {}),
  }));
}

/** The handler of the source's first code subscriber for a delivery, or undefined when none matches. */
export function findHandler(registry: HandlerRegistry, source: string, eventType: string | null): Handler | undefined {
  return codeSubscribers(registry, source)
    .map((subscriber) => subscriber.handlersFor(eventType)[0])
    .find((handler) => handler !== undefined);
}

/** The resolver of a registry alone: its code subscribers. */
export function registryResolver(registry: HandlerRegistry): SubscriberResolver {
  return (source) => codeSubscribers(registry, source);
}
