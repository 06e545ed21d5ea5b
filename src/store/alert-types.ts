/** The failure groups alerting counts (store/alerts.ts), in a module of their own so that src/alerts and the stores share it. */

/** The failed deliveries of one (source, subscriber, error), as the triggers of migrations/0015 count them. */
export interface FailureGroup {
  readonly source: string;
  /** null until sources have several subscribers (issue 26). */
  readonly subscriber: string | null;
  /** The error's first 160 characters, each run of digits made one '#'. */
  readonly errorKey: string;
  /** Deliveries failed now (a replay takes one back). */
  readonly failedNow: number;
  /** When failedNow last rose from 0 (ms). */
  readonly sinceMs: number | null;
}
