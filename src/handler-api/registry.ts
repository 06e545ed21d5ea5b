/**
 * Which handlers run for a delivery. The user declares a registry (`defineHandlers`): handlers by
 * source, then by event type. The consumer asks a resolver, which the Worker wires from the
 * registry and what else runs for a source (src/index.ts: the configured forwarding,
 * forwarding/resolver.ts), so that processing knows nothing of forwarding.
 */
import type { Handler } from "./context";

/**
 * Handlers by source, then by event type. `"*"` matches any event type of that source.
 * A delivery with no matching handler is marked done and shown as unhandled, not failed.
 */
export type HandlerRegistry = Readonly<Record<string, Readonly<Record<string, Handler>>>>;

/**
 * The handlers to run for a delivery, in order, all in one attempt (their effects commit together
 * with the done mark); none: the delivery is done and shown as unhandled.
 */
export type HandlerResolver = (source: string, eventType: string | null, env: Env) => readonly Handler[];

/** Declares the registry with its types checked. */
export function defineHandlers<Registry extends HandlerRegistry>(registry: Registry): Registry {
  return registry;
}

/** The handler for a delivery, or undefined when none matches. */
export function findHandler(registry: HandlerRegistry, source: string, eventType: string | null): Handler | undefined {
  const bySource = Object.hasOwn(registry, source) ? registry[source] : undefined;
  if (!bySource) return undefined;
  if (eventType !== null && Object.hasOwn(bySource, eventType)) return bySource[eventType];
  return Object.hasOwn(bySource, "*") ? bySource["*"] : undefined;
}

/** The resolver of a registry alone: its matching handler, if any. */
export function registryResolver(registry: HandlerRegistry): HandlerResolver {
  return (source, eventType) => {
    const handler = findHandler(registry, source, eventType);
    return handler ? [handler] : [];
  };
}
