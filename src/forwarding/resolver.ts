/**
 * The Worker's subscribers of a source: its code subscribers from the registry, then its configured
 * forward destination (`<SOURCE>_FORWARD_URL`, the subscriber named `forward`). Each has its own
 * progress (handler-api/registry.ts). Wired in src/index.ts, so that processing runs subscribers
 * without knowing that forwarding exists.
 */
import { loadConfig } from "../config";
import { destinationOf } from "../config/forwarding";
import type { ForwardDestination } from "../config/destination";
import type { Handler, HandlerRegistry, Subscriber, SubscriberResolver } from "../handler-api";
import { codeSubscribers } from "../handler-api/registry";
import { forwardDelivery, forwardedDelivery } from "./forward";

/** The subscriber name of a source's first forward destination (`<SOURCE>_FORWARD_URL`). */
export const FORWARD_SUBSCRIBER = "forward";

/** The handler that forwards every delivery it is given to `destination`. */
function forwardingTo(destination: ForwardDestination): Handler {
  return (_event, ctx) => forwardDelivery(ctx.env, destination, forwardedDelivery(ctx), ctx.signal);
}

/**
 * `registry`'s subscribers of a source, then its forward destination's.
 * @example
 * const resolve = withConfiguredForwarding(HANDLERS);
 * resolve("stripe", env); // [its code subscribers…, { name: "forward", … } if STRIPE_FORWARD_URL is set]
 */
export function withConfiguredForwarding(registry: HandlerRegistry): SubscriberResolver {
  const forwards = new WeakMap<ForwardDestination, Subscriber>();
  return (source, env) => {
    const subscribers = codeSubscribers(registry, source);
    const destination = destinationOf(loadConfig(env).forwarding, source);
    if (destination) {
      let forward = forwards.get(destination);
      if (!forward) {
        const handlers = [forwardingTo(destination)];
        forward = { name: FORWARD_SUBSCRIBER, handlersFor: () => handlers };
        forwards.set(destination, forward);
      }
      if (subscribers.some((subscriber) => subscriber.name === forward!.name)) {
        throw new Error(`source ${source} has a code subscriber named "${forward.name}", the name of its forward destination: rename it`);
      }
      subscribers.push(forward);
    }
    return subscribers;
  };
}
