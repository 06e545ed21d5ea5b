/**
 * The Worker's handler resolver: the source's code handler from the registry, then its configured
 * forward (`<SOURCE>_FORWARD_URL`), in that order (processing/attempt.ts `runHandler` says why).
 * Wired in src/index.ts, so that processing runs handlers without knowing that forwarding exists.
 */
import { loadConfig } from "../config";
import { destinationOf } from "../config/forwarding";
import type { Handler, HandlerRegistry, HandlerResolver } from "../handler-api";
import { findHandler } from "../handler-api/registry";
import type { ForwardDestination } from "../config/destination";
import { forwardDelivery, forwardedDelivery } from "./forward";

/** The handler that forwards every delivery it is given to `destination`. */
function forwardingTo(destination: ForwardDestination): Handler {
  return (_event, ctx) => forwardDelivery(ctx.env, destination, forwardedDelivery(ctx), ctx.signal);
}

/**
 * `registry`'s handlers, each source's configured forward after its code handler.
 * @example
 * const resolve = withConfiguredForwarding(HANDLERS);
 * resolve("stripe", "invoice.paid", env); // [the code handler, if any; the forward, if configured]
 */
export function withConfiguredForwarding(registry: HandlerRegistry): HandlerResolver {
  const forwards = new WeakMap<ForwardDestination, Handler>();
  return (source, eventType, env) => {
    const handlers: Handler[] = [];
    const handler = findHandler(registry, source, eventType);
    if (handler) handlers.push(handler);
    const destination = destinationOf(loadConfig(env).forwarding, source);
    if (destination) {
      let forward = forwards.get(destination);
      if (!forward) forwards.set(destination, (forward = forwardingTo(destination)));
      handlers.push(forward);
    }
    return handlers;
  };
}
