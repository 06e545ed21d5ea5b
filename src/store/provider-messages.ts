/**
 * Provider messages that are not deliveries (a Twitch revocation, a Graph reauthorizationRequired,
 * an SNS subscription confirmed): counted apart per source and kind, never run through a handler.
 * Shared by the D1 store (d1/secrets.ts) and the Postgres store (postgres/secrets.ts).
 */

export interface ProviderMessage {
  readonly source: string;
  readonly kind: string;
  /** What it said, shortened (signed text from the provider: shown escaped). */
  readonly detail: string;
}

export interface ProviderMessageCount {
  readonly source: string;
  readonly kind: string;
  readonly count: number;
  readonly lastAt: string;
  readonly lastDetail: string;
}
