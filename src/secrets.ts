/** The webhook secrets of a source, read from the environment per request. */

/** `stripe` → `STRIPE_WEBHOOK_SECRET`, `my-shop` → `MY_SHOP_WEBHOOK_SECRET`. */
export function secretVarName(source: string): string {
  return `${source.toUpperCase().replaceAll("-", "_")}_WEBHOOK_SECRET`;
}

/**
 * The secrets configured for a source: the var split on spaces and commas, so that during a
 * rotation the old and the new secret are both accepted. Empty when the var is unset.
 */
export function secretsFor(env: object, source: string): string[] {
  const value = (env as Record<string, unknown>)[secretVarName(source)];
  if (typeof value !== "string") return [];
  return value.split(/[\s,]+/).filter((secret) => secret.length > 0);
}
