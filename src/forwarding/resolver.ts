/**
 * The Worker's subscribers of a source: its code subscribers from the registry, then its configured
 * forward destination (`<SOURCE>_FORWARD_URL`, the subscriber named `forward`). Each has its own
 * progress (handler-api/registry.ts). Wired in src/index.ts, so that processing runs subscribers
 * without knowing that forwarding exists.
 */
import { loadConfig } from "../config";
import { destinationsOf, type NamedDestination } from "../config/forwarding";
import { acceptsFilter } from "../filters";
import type { Handler, HandlerRegistry, Subscriber, SubscriberResolver } from "../handler-api";
import { codeSubscribers } from "../handler-api/registry";
import { forwardDelivery, forwardedDelivery } from "./forward";

/** The handler that forwards every delivery it is given to `destination`. */
function forwardingTo(destination: NamedDestination): Handler {
  return (_event, ctx) => forwardDelivery(ctx.env, destination, forwardedDelivery(ctx), ctx.signal);
}

/** A forward destination as a subscriber: its name, its own retry schedule and filter (docs/subscribers.md). */
function destinationSubscriber(destination: NamedDestination): Subscriber {
  const handlers = [forwardingTo(destination)];
  return {
    name: destination.name,
    handlersFor: () => handlers,
    retry: { maxAttempts: destination.maxAttempts, retryBaseSeconds: destination.retryBaseSeconds },
    // Checked with the configuration (config/forwarding.ts): a bad filter never gets here.
    ...(destination.filterJson === null ? {} : { accepts: acceptsFilter(JSON.parse(destination.filterJson)) }),
  };
}

/**
 * `registry`'s subscribers of a source, then its forward destinations' (`<SOURCE>_FORWARD_URL`, named
 * `forward`, then each `<SOURCE>_FORWARD_<NAME>_URL`, named `<name>`).
 * @example
 * const resolve = withConfiguredForwarding(HANDLERS);
 * resolve("stripe", env); // [its code subscribers…, { name: "forward", … }, { name: "crm", … }]
 */
export function withConfiguredForwarding(registry: HandlerRegistry): SubscriberResolver {
  const forwards = new WeakMap<NamedDestination, Subscriber>();
  return (source, env) => {
    const subscribers = codeSubscribers(registry, source);
    for (const destination of destinationsOf(loadConfig(env).forwarding, source)) {
      let forward = forwards.get(destination);
      if (!forward) forwards.set(destination, (forward = destinationSubscriber(destination)));
      if (subscribers.some((subscriber) => subscriber.name === forward!.name)) {
        throw new Error(`source ${source} has a code subscriber named "${forward.name}", the name of one of its forward destinations: rename it`);
      }
      subscribers.push(forward);
    }
    return subscribers;
  };
}
