import { DurableObject } from "cloudflare:workers";
export class Sweeper extends DurableObject<Env> {}
