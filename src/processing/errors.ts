/**
 * Retry policy as error types: what a handler throws decides what happens to the delivery.
 *
 * - `PermanentError`: retrying cannot help (the payload fails its schema, the entity it names
 *   does not exist). The delivery is `failed` at once, with this message, and dead-lettered.
 * - Anything else: retried with exponential backoff until MAX_ATTEMPTS, then `failed`.
 */
export class PermanentError extends Error {
  override readonly name = "PermanentError";
}

/** A readable one-line description of whatever was thrown, for the `error` column. */
export function describeError(error: unknown): string {
  const text = error instanceof Error ? `${error.name === "Error" ? "" : `${error.name}: `}${error.message}` : String(error);
  return text.length > 1_000 ? `${text.slice(0, 1_000)}…` : text;
}
