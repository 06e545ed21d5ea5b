/**
 * Retry policy as error types: what a handler throws decides what happens to the delivery.
 *
 * - `PermanentError`: retrying cannot help (the payload fails its schema, the entity it names
 *   does not exist). The delivery is `failed` at once, with this message, and dead-lettered.
 * - `RetryAfterError`: a retryable failure that says when to try again (a destination's
 *   `Retry-After`): retried after that long or the backoff, whichever is longer.
 * - `DeferredError`: not now, and not the delivery's fault (its forward destination is busy): it
 *   goes back on the queue after `delaySeconds`, using up no attempt.
 * - Anything else: retried with exponential backoff until MAX_ATTEMPTS, then `failed`.
 *
 * `InfrastructureError` is the inbox's own, not a handler's to throw: a store call made for the
 * handler (the order guard's read) failed. Like any infrastructure failure it uses up no attempt.
 */
export class PermanentError extends Error {
  override readonly name = "PermanentError";
}

/**
 * A retryable failure with a hint of when to retry, in seconds (null: none). It counts as an
 * attempt like any other error; the hint is honoured up to MAX_RETRY_AFTER_SECONDS (attempt.ts).
 */
export class RetryAfterError extends Error {
  override readonly name = "RetryAfterError";

  constructor(
    message: string,
    readonly retryAfterSeconds: number | null,
  ) {
    super(message);
  }
}

/**
 * The delivery must wait, through no fault of its own: it is put back on the queue after
 * `delaySeconds` and its run is not counted (like a run cut short by the batch's time limit).
 */
export class DeferredError extends Error {
  override readonly name = "DeferredError";

  constructor(
    message: string,
    readonly delaySeconds: number,
  ) {
    super(message);
  }
}

/**
 * A call the inbox made for the handler (the order guard reading the store) failed: the database,
 * not the handler, is at fault. The run is not counted: its lease is released and the delivery
 * retried with the consumer's infrastructure delay, even on its last attempt, and even when the
 * handler caught this and threw something else.
 */
export class InfrastructureError extends Error {
  override readonly name = "InfrastructureError";
}

/** A readable one-line description of whatever was thrown, for the `error` column. */
export function describeError(error: unknown): string {
  const text = error instanceof Error ? `${error.name === "Error" ? "" : `${error.name}: `}${error.message}` : String(error);
  if (text.length <= 1_000) return text;
  // Not between the two halves of a surrogate pair (an emoji): a lone half is not text to store.
  const end = /[\uD800-\uDBFF]/.test(text[999]!) ? 999 : 1_000;
  return `${text.slice(0, end)}…`;
}
