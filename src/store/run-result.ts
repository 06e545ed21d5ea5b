/**
 * A run's result other than done, and what each store writes for it in its one fenced result
 * statement (store/d1/lifecycle.ts `recordResult`, and Postgres's). Done is a commit of its own
 * (`Store.commitDone`): it carries the handler's effects.
 */
import { attemptJson, type RunTiming } from "./attempts";

export type RunResult =
  /** A retryable failure: back to `received` with the error, waiting for its retry; the run counted. */
  | { readonly kind: "retry"; readonly error: string }
  /** Set aside as `failed` with the error; the run counted. */
  | { readonly kind: "failed"; readonly error: string }
  /**
   * Cut short or deferred, not the handler's fault (the batch's time, a busy forward destination,
   * a lease that could not be renewed, a commit that failed with an infrastructure error): back
   * to `received`, the run not counted, `why` in its history.
   */
  | { readonly kind: "deferred"; readonly why: string };

/** The values a result statement binds, the same in both stores. */
export interface ResultWrite {
  readonly status: "received" | "failed";
  /** The row's new error; null keeps the one it has (a deferral says nothing of the handler). */
  readonly error: string | null;
  /** 1 when the run counts (its `attempts` + 1, a new history entry), 0 for a deferral (merged with one just before it). */
  readonly counted: 0 | 1;
  /** The history entry's JSON (`attemptJson`). */
  readonly entry: string;
}

/**
 * What `result` writes; `text` is how the store keeps text of others' making (Postgres cleans NULs).
 * @example
 * resultWrite({ kind: "retry", error: "HTTP 503" }, Date.now(), { startedAtMs }); // { status: "received", error: "HTTP 503", counted: 1, … }
 */
export function resultWrite(result: RunResult, nowMs: number, run: RunTiming | undefined, text: (value: string) => string = (value) => value): ResultWrite {
  switch (result.kind) {
    case "retry":
      return { status: "received", error: text(result.error), counted: 1, entry: attemptJson("retry", nowMs, run, text(result.error)) };
    case "failed":
      return { status: "failed", error: text(result.error), counted: 1, entry: attemptJson("failed", nowMs, run, text(result.error)) };
    case "deferred":
      return { status: "received", error: null, counted: 0, entry: attemptJson("deferred", nowMs, run, `${text(result.why)} (not counted)`) };
  }
}

/** Why a deferral with no reason of its own was deferred: the batch's time ran out (processing/consumer.ts). */
export const CUT_SHORT = "cut short: the consumer invocation's time ran out";
