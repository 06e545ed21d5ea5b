import { DurableObject } from "cloudflare:workers";
export class DeliveryLease extends DurableObject<Env> {}
