/**
 * Which subscriber a run is for, and a delivery's fan-out (issue 26). A delivery that one subscriber
 * takes runs in its own row, as before: no row or queue message more. One that several take is
 * fanned out once: each gets a run of its own (store/d1/subscriber-runs.ts), its own lease and its
 * own progress (the runs share queue messages, each still acked or retried on its own: bundles.ts);
 * the delivery's row then summarises them.
 */
import type { DeliveryView, Handler, RetrySchedule, Subscriber } from "../handler-api";
import type { DeliveryToRun } from "../store";
import { sendRuns } from "./enqueue";
import { isSubscriberRun, type DeliveryRef, type RunRef } from "./messages";

/** What a claimed run is for. */
export type Choice =
  /** Run `handlers` (none: the delivery is done and unhandled) with `schedule`; `subscriber` names whose they are (null: nobody's). */
  | { readonly kind: "run"; readonly subscriber: string | null; readonly handlers: readonly Handler[]; readonly schedule: RetrySchedule }
  /** Several subscribers take the delivery: fan it out to them. */
  | { readonly kind: "fan_out"; readonly subscribers: readonly string[] }
  /** A subscriber's run whose subscriber is no longer configured for its source. */
  | { readonly kind: "unknown_subscriber"; readonly subscriber: string };

/**
 * What the claimed `ref` runs. A subscriber's run runs its subscriber's handlers. A delivery goes
 * to the subscribers that have a handler for its event type and whose filter accepts it: none, one
 * (run here), or several (fanned out).
 */
export function chooseRun(subscribers: readonly Subscriber[], ref: RunRef, delivery: DeliveryToRun, inbox: RetrySchedule): Choice {
  if (isSubscriberRun(ref)) {
    const subscriber = subscribers.find((candidate) => candidate.name === ref.subscriber);
    if (!subscriber) return { kind: "unknown_subscriber", subscriber: ref.subscriber };
    return { kind: "run", subscriber: subscriber.name, handlers: subscriber.handlersFor(delivery.eventType), schedule: subscriber.retry ?? inbox };
  }
  const view = deliveryView(delivery);
  const taking = subscribers.filter((subscriber) => subscriber.handlersFor(delivery.eventType).length > 0 && accepts(subscriber, view));
  if (taking.length > 1) return { kind: "fan_out", subscribers: taking.map((subscriber) => subscriber.name) };
  const only = taking[0];
  return only
    ? { kind: "run", subscriber: only.name, handlers: only.handlersFor(delivery.eventType), schedule: only.retry ?? inbox }
    : { kind: "run", subscriber: null, handlers: [], schedule: inbox };
}

/** The retry schedule of a run's subscriber (a takeover's claim needs its MAX_ATTEMPTS before the run is read). */
export function scheduleOf(subscribers: readonly Subscriber[], ref: RunRef, inbox: RetrySchedule): RetrySchedule {
  if (!isSubscriberRun(ref)) return inbox;
  return subscribers.find((candidate) => candidate.name === ref.subscriber)?.retry ?? inbox;
}

/**
 * A subscriber's filter. One that throws (a bug in a filter written as code) is logged and counts as
 * accepting: a delivery is never dropped for a subscriber by an error; its handler decides.
 */
function accepts(subscriber: Subscriber, view: DeliveryView): boolean {
  if (!subscriber.accepts) return true;
  try {
    return subscriber.accepts(view);
  } catch (error) {
    console.error(`the filter of subscriber ${subscriber.name} threw; running it:`, error instanceof Error ? error.message : String(error));
    return true;
  }
}

/** What a filter sees of a claimed delivery; its body parsed on first use only. */
export function deliveryView(delivery: DeliveryToRun): DeliveryView {
  let parsed: { value: unknown } | null = null;
  const headers = new Map(delivery.headers.map(([name, value]) => [name.toLowerCase(), value]));
  return {
    eventType: delivery.eventType,
    header: (name) => headers.get(name.toLowerCase()) ?? null,
    get body() {
      if (!parsed) {
        try {
          parsed = { value: JSON.parse(new TextDecoder().decode(delivery.body)) as unknown };
        } catch {
          parsed = { value: undefined };
        }
      }
      return parsed.value;
    },
  };
}

/**
 * Puts the runs of `subscribers` of a fanned-out delivery on the queue. Throws when the queue does:
 * the delivery's lease is then released and its retry queues them again (its claim finds it fanned
 * out); a run queued twice meets its own lease.
 */
export function queueRuns(env: Env, ref: DeliveryRef, subscribers: readonly string[]): Promise<void> {
  return sendRuns(
    env.DELIVERIES,
    subscribers.map((subscriber) => ({ source: ref.source, id: ref.id, subscriber })),
  );
}
