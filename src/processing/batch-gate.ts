/**
 * Suspects run alone: the gate between a delivery's claim and its work, one per queue batch.
 *
 * A handler that kills its whole invocation (a CPU-bound loop, a catastrophic regex, the isolate's
 * 128 MB used up) takes every delivery running beside it down too. Their leases end together and
 * come back as takeovers together, and each takeover that vanishes again counts a run
 * (store/d1/lifecycle.ts `markTakeover`): run side by side, healthy deliveries would be charged
 * for the poison one's crash loop until they ended `failed`. So a takeover (a suspect: its last run
 * vanished) waits until nothing else of its batch runs, and nothing else of its batch starts while
 * it runs. If it kills the invocation, it dies alone, and only it is charged. The others that
 * waited were claimed but not recorded in the store, so their next run counts nothing for this one.
 *
 * Per batch, not per isolate: workerd does not let one request wait on a promise that another
 * request settles (it may hang, or refuse the I/O), so a gate cannot span invocations. A delivery
 * of another batch that happens to run in the same isolate can still die with a suspect; the
 * lease alarms' jitter (lease.ts) makes such meetings rare, and a first run that dies that way
 * counts nothing.
 *
 * First come, first served: a delivery that asks for shared entry behind a waiting suspect waits
 * too, so that a steady stream of deliveries cannot starve a suspect.
 */

/** Leaves the gate; call it exactly once, when the delivery's work is over. */
export type Leave = () => void;

interface Waiter {
  readonly alone: boolean;
  readonly admit: (leave: Leave) => void;
}

export class BatchGate {
  #running = 0;
  #alone = false;
  #waiting: Waiter[] = [];

  /** How many deliveries are inside (for tests and logs). */
  get running(): number {
    return this.#running;
  }

  /**
   * Waits for entry: `alone` (a suspect) when nothing else is inside, shared otherwise when no
   * suspect is inside or waiting ahead. Rejects with `signal`'s reason if it is aborted first (the
   * lease was lost while waiting), leaving the queue as if it had never asked.
   */
  enter(alone: boolean, signal?: AbortSignal): Promise<Leave> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<Leave>((resolve, reject) => {
      const waiter: Waiter = { alone, admit: resolve };
      this.#waiting.push(waiter);
      signal?.addEventListener(
        "abort",
        () => {
          const index = this.#waiting.indexOf(waiter);
          if (index === -1) return; // admitted already: the caller leaves as usual
          this.#waiting.splice(index, 1);
          reject(signal.reason);
          this.#admit();
        },
        { once: true },
      );
      this.#admit();
    });
  }

  #admit(): void {
    while (this.#waiting.length > 0 && !this.#alone) {
      const next = this.#waiting[0]!;
      if (next.alone && this.#running > 0) return;
      this.#waiting.shift();
      this.#running++;
      this.#alone = next.alone;
      let left = false;
      next.admit(() => {
        if (left) return;
        left = true;
        this.#running--;
        if (next.alone) this.#alone = false;
        this.#admit();
      });
      if (next.alone) return;
    }
  }
}
