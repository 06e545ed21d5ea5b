/**
 * A stored delivery's identity: its source and the provider's delivery id (the primary key).
 * Below both the store and processing, so that each can name it without importing the other.
 */
export interface DeliveryRef {
  readonly source: string;
  readonly id: string;
}
