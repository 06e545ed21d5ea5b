/**
 * The one judgement of a done commit that reported an error, shared by both stores
 * (store/d1/index.ts and store/postgres/lifecycle.ts `commitDone`).
 */
import type { CommitResult } from "./store";

/** What a store knows of its own errors and rows, to judge a failed commit. */
export interface CommitErrorJudge {
  /** The database refused a statement itself (a constraint, a trigger, bad SQL). */
  readonly isStatementError: (error: unknown) => boolean;
  /** The lease fence's own refusal (`LEASE_LOST`). */
  readonly isLeaseLost: (error: unknown) => boolean;
  /** True when the delivery is done under this run's token: the commit landed after all. */
  readonly committed: () => Promise<boolean>;
}

/**
 * The handler's effects refused by the database: `refused` (counted like a handler error). Else a
 * commit of ours may have landed although the error came back (a lost answer): then it stands.
 * Else the fence's refusal is a lost lease, and anything else is infrastructure: thrown, so that
 * it is retried counting nothing.
 */
export async function judgeFailedCommit(error: unknown, judge: CommitErrorJudge): Promise<CommitResult> {
  if (judge.isStatementError(error) && !judge.isLeaseLost(error)) return { kind: "refused", error, permanent: false };
  if (await judge.committed()) return { kind: "committed" };
  if (judge.isLeaseLost(error)) return { kind: "lease_lost" };
  throw error;
}
