/**
 * The webhook secrets of a source, read from the environment per request.
 *
 * A source has one secret, `<SOURCE>_WEBHOOK_SECRET`, taken verbatim: a secret may contain any
 * character, spaces and commas included. During a rotation the one being replaced goes in
 * `<SOURCE>_WEBHOOK_SECRET_PREVIOUS`, and both verify while both are set.
 */

/** How a source's vars begin: `stripe` → `STRIPE`, `my-shop` → `MY_SHOP`. */
export function sourceVarPrefix(source: string): string {
  return source.toUpperCase().replaceAll("-", "_");
}

/** `stripe` → `STRIPE_WEBHOOK_SECRET`, `my-shop` → `MY_SHOP_WEBHOOK_SECRET`. */
export function secretVarName(source: string): string {
  return `${sourceVarPrefix(source)}_WEBHOOK_SECRET`;
}

/** `stripe` → `STRIPE_WEBHOOK_SECRET_PREVIOUS`: the secret being rotated out. */
export function previousSecretVarName(source: string): string {
  return `${secretVarName(source)}_PREVIOUS`;
}

/**
 * The secrets configured for a source: the current one, then the previous one during a rotation.
 * Each var is one secret, verbatim (never split); an unset or empty var counts as absent. Empty
 * when neither is set.
 * @example
 * secretsFor({ GITHUB_WEBHOOK_SECRET: "my secret, phrase" }, "github"); // ["my secret, phrase"]
 */
export function secretsFor(env: object, source: string): string[] {
  const vars = env as Record<string, unknown>;
  return [vars[secretVarName(source)], vars[previousSecretVarName(source)]].filter(
    (secret): secret is string => typeof secret === "string" && secret.length > 0,
  );
}
