/**
 * The names of the forwarding vars, and the one reader of them: `<PREFIX>_FORWARD_<SUFFIX>` is a
 * source's first destination (the subscriber `forward`), `<PREFIX>_FORWARD_<NAME>_<SUFFIX>` its
 * destination `<name>`. Every var is read by this grammar, so a name can never be taken for a
 * setting or the other way round:
 *
 * - the suffix is one of SUFFIXES, matched whole at the end;
 * - a name is one segment of [A-Z0-9]+ (no `_`), so `STRIPE_FORWARD_CRM_SECRET` is `crm`'s secret
 *   and `STRIPE_FORWARD_SECRET` the first destination's, never a destination named `SECRET`;
 * - no suffix ends with another one behind a single segment (`TIMEOUT_SECONDS` and `SECONDS`
 *   would be ambiguous; `RESERVED_NAMES` holds every segment of every suffix), and a name that is a
 *   reserved word is refused outright, so a typo like `STRIPE_FORWARD_SECRET_URL` is a config problem
 *   instead of a destination named `secret`;
 * - the prefix is the longest that fits (a source may be named `a-forward`: `A_FORWARD_FORWARD_URL` is
 *   its first destination; `FORWARD` is reserved as a name for that reason).
 */

/** What a forwarding var sets, by its suffix. */
export const SUFFIXES = {
  URL: "url",
  SECRET: "secret",
  TIMEOUT_SECONDS: "timeout",
  CONCURRENCY: "concurrency",
  MAX_ATTEMPTS: "maxAttempts",
  RETRY_BASE_SECONDS: "retryBase",
  FILTER: "filter",
  BREAKER_FAILURES: "breakerFailures",
  BREAKER_OPEN_SECONDS: "breakerOpenSeconds",
} as const;

export type ForwardSetting = (typeof SUFFIXES)[keyof typeof SUFFIXES];

/** The subscriber name of a source's first destination (`<SOURCE>_FORWARD_URL`). */
export const FIRST_DESTINATION_NAME = "forward";

/** Words a destination's name may not be: every segment of a suffix, and FORWARD itself. */
export const RESERVED_NAMES: ReadonlySet<string> = new Set(["FORWARD", ...Object.keys(SUFFIXES).flatMap((suffix) => suffix.split("_"))]);

const SUFFIX_PATTERN = Object.keys(SUFFIXES)
  .sort((a, b) => b.length - a.length)
  .join("|");
/** Greedy prefix, then an optional one-segment name, then a whole suffix. */
const VAR = new RegExp(`^([A-Z0-9_]+)_FORWARD_(?:([A-Z0-9]+)_)?(${SUFFIX_PATTERN})$`);

/** One forwarding var, read: whose (prefix and destination name, lower-case) and what it sets. */
export interface ForwardVar {
  readonly prefix: string;
  /** `forward` for the first destination, else the name lower-cased (`CRM` → `crm`). */
  readonly name: string;
  /** The name as written in the var (`CRM`), or null for the first destination. */
  readonly varName: string | null;
  readonly setting: ForwardSetting;
}

/**
 * The forwarding var `name` read, or null when it is not one.
 * @example
 * readForwardVar("STRIPE_FORWARD_CRM_SECRET"); // { prefix: "STRIPE", name: "crm", varName: "CRM", setting: "secret" }
 * readForwardVar("STRIPE_FORWARD_SECRET"); // { prefix: "STRIPE", name: "forward", varName: null, setting: "secret" }
 */
export function readForwardVar(name: string): ForwardVar | null {
  const match = VAR.exec(name);
  if (!match) return null;
  const [, prefix, varName, suffix] = match as unknown as [string, string, string | undefined, keyof typeof SUFFIXES];
  return { prefix, name: varName === undefined ? FIRST_DESTINATION_NAME : varName.toLowerCase(), varName: varName ?? null, setting: SUFFIXES[suffix] };
}

/** The var that sets `suffix` of destination `varName` (null: the first) of `prefix`. */
export function forwardVarName(prefix: string, varName: string | null, suffix: keyof typeof SUFFIXES): string {
  return varName === null ? `${prefix}_FORWARD_${suffix}` : `${prefix}_FORWARD_${varName}_${suffix}`;
}
