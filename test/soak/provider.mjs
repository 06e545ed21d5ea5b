/**
 * The soak's provider: Stripe payment events at a steady rate, some posted twice at once (two
 * connections carrying the same event), each copy re-signed and sent again, with backoff, until it
 * is answered 200, as Stripe retries every unanswered or non-200 delivery. It keeps the figures:
 * what was sent, every answer by status, resends, and per event the answers `stored` (the store
 * must decide "new" once per event, whatever the number of copies and resends).
 */
import { setTimeout as delay } from "node:timers/promises";
import { paymentEvent, stripeDelivery } from "../e2e/signers.mjs";

/** A provider gives up on one request after this long, and counts it as unanswered. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Backoff before the n-th resend of a copy: 1 s, 2 s, 4 s, … up to 16 s, each ×0.5–1.5 (jitter). */
const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 16_000;
/** Requests in flight at most: the load stays bounded even while the runtime is down or slow. */
const MAX_IN_FLIGHT = 64;

export class Provider {
  /**
   * @param {object} options
   * @param {import("../e2e/harness.mjs").LocalInbox} options.inbox where to post (its current URL at each post)
   * @param {string} options.secret the Stripe signing secret the inbox runs with
   * @param {string} options.prefix event ids are `${prefix}${n}`
   * @param {number} options.twiceShare the share of events posted twice at once (0–1)
   */
  constructor({ inbox, secret, prefix, twiceShare }) {
    this.inbox = inbox;
    this.secret = secret;
    this.prefix = prefix;
    this.twiceShare = twiceShare;
    /** @type {Map<string, { event: object, amount: number, copies: number, answered: number, storedAnswers: number }>} */
    this.events = new Map();
    this.posts = 0;
    this.resends = 0;
    this.sentTwice = 0;
    /** answers by status: "200 stored", "200 duplicate", "503", "connection error", "timeout", … */
    this.answers = new Map();
    this.copiesInFlight = new Set();
    this.inFlight = 0;
    this.slotWaiters = [];
    /** No resend starts after this (ms since epoch); a copy still unanswered then is given up. */
    this.giveUpAt = Infinity;
    this.lastAnsweredAt = 0;
    this.stopping = new AbortController();
  }

  /** Stops at once: no new post or resend, the posts in flight and the backoffs cut short. */
  stop() {
    this.giveUpAt = 0;
    this.stopping.abort();
  }

  /** Sends one new event (once, or twice at once); does not wait for its answers. */
  sendNext() {
    const id = `${this.prefix}${this.events.size}`;
    const amount = 100 + Math.floor(Math.random() * 9_900);
    const copies = Math.random() < this.twiceShare ? 2 : 1;
    if (copies === 2) this.sentTwice++;
    // Built once: every copy and every resend carries the same body (only the signature is new).
    const event = paymentEvent(id, amount, "cus_soak");
    this.events.set(id, { event, amount, copies, answered: 0, storedAnswers: 0 });
    for (let copy = 0; copy < copies; copy++) {
      const running = this.#deliver(id);
      this.copiesInFlight.add(running);
      running.finally(() => this.copiesInFlight.delete(running));
    }
  }

  /** Copies not yet answered 200 (waiting for an answer or for their next resend). */
  get unanswered() {
    return this.copiesInFlight.size;
  }

  /** Non-200 answers by status, e.g. { "503": 4, "connection error": 31 }. */
  get non200() {
    return Object.fromEntries([...this.answers].filter(([status]) => !status.startsWith("200")).sort(([a], [b]) => a.localeCompare(b)));
  }

  /** Waits until every copy is answered 200 or given up (at `giveUpAt`). */
  async drain() {
    while (this.copiesInFlight.size > 0) await Promise.allSettled([...this.copiesInFlight]);
  }

  /** One copy of an event, posted and posted again until a 200 (or the give-up time). */
  async #deliver(id) {
    const sent = this.events.get(id);
    if (!sent) throw new Error(`no event ${id}`);
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1) this.resends++;
      const status = await this.#post(sent.event);
      this.answers.set(status, (this.answers.get(status) ?? 0) + 1);
      if (status.startsWith("200")) {
        sent.answered++;
        if (status === "200 stored") sent.storedAnswers++;
        this.lastAnsweredAt = Date.now();
        return;
      }
      const backoff = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (attempt - 1)) * (0.5 + Math.random());
      if (Date.now() + backoff > this.giveUpAt) return;
      try {
        await delay(backoff, undefined, { signal: this.stopping.signal });
      } catch {
        return; // stopped
      }
    }
  }

  /** One POST, freshly signed (a retry carries a new timestamp, as Stripe's do); returns its status. */
  async #post(event) {
    await this.#slot();
    this.posts++;
    try {
      const delivery = stripeDelivery(event, this.secret);
      const signal = AbortSignal.any([AbortSignal.timeout(REQUEST_TIMEOUT_MS), this.stopping.signal]);
      const { status, json } = await this.inbox.post(delivery.path, delivery.body, delivery.headers, { signal });
      return status === 200 ? `200 ${json?.status ?? "?"}` : String(status);
    } catch (error) {
      return /** @type {Error} */ (error).name === "TimeoutError" ? "timeout" : "connection error";
    } finally {
      this.inFlight--;
      this.slotWaiters.shift()?.();
    }
  }

  async #slot() {
    while (this.inFlight >= MAX_IN_FLIGHT) await new Promise((resolve) => this.slotWaiters.push(resolve));
    this.inFlight++;
  }
}
