/**
 * Slows down guessing the admin token: a `SignInThrottle` Durable Object per client address,
 * shared by every isolate and location, so that spreading attempts across them gains nothing.
 *
 * Every attempt is counted before the token is compared (two attempts sent at once both count:
 * the object handles one call at a time); a right token then clears the count. The first
 * FREE_ATTEMPTS cost nothing; each one after that closes sign-in from that address for twice as
 * long as the one before (2 s, 4 s, … up to MAX_LOCK_SECONDS), during which every attempt is
 * refused unseen, the right token too: otherwise the lock would not stop the guessing. The count
 * is forgotten FORGET_AFTER_SECONDS after the last attempt (the object's alarm deletes it).
 */
import { DurableObject } from "cloudflare:workers";

export const FREE_ATTEMPTS = 5;
export const MAX_LOCK_SECONDS = 15 * 60;
export const FORGET_AFTER_SECONDS = 60 * 60;

/** The answer to "may this address try a token now?". */
export type SignInGate = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number };

interface ThrottleState {
  attempts: number;
  lockedUntilMs: number;
}

const STATE_KEY = "state";

export class SignInThrottle extends DurableObject<Env> {
  /**
   * Counts an attempt and says whether it may go ahead. Refused while locked (not counted then,
   * so a locked-out address does not lock itself out longer by trying).
   */
  async attempt(): Promise<SignInGate> {
    const now = Date.now();
    const state = (await this.ctx.storage.get<ThrottleState>(STATE_KEY)) ?? { attempts: 0, lockedUntilMs: 0 };
    if (state.lockedUntilMs > now) return { allowed: false, retryAfterSeconds: Math.ceil((state.lockedUntilMs - now) / 1000) };
    state.attempts += 1;
    if (state.attempts > FREE_ATTEMPTS) {
      state.lockedUntilMs = now + Math.min(MAX_LOCK_SECONDS, 2 ** (state.attempts - FREE_ATTEMPTS)) * 1000;
    }
    await this.ctx.storage.put(STATE_KEY, state);
    await this.ctx.storage.setAlarm(Math.max(now, state.lockedUntilMs) + FORGET_AFTER_SECONDS * 1000);
    return { allowed: true };
  }

  /** A right token: forget this address's attempts. */
  async succeeded(): Promise<void> {
    await this.ctx.storage.deleteAll();
  }

  /** Nothing tried for FORGET_AFTER_SECONDS: nothing is kept. */
  override async alarm(): Promise<void> {
    await this.ctx.storage.deleteAll();
  }
}

/**
 * The throttle of the address a request came from: `CF-Connecting-IP`, which Cloudflare sets
 * (a client cannot); without it (`wrangler dev`) every request shares one throttle. An IPv6
 * address counts by its /64: one client holds a whole /64, and would otherwise get a fresh
 * throttle per address.
 */
export function throttleFor(env: Env, request: Request): DurableObjectStub<SignInThrottle> {
  const address = throttleKey(request.headers.get("cf-connecting-ip"));
  return env.SIGN_IN_THROTTLE.get(env.SIGN_IN_THROTTLE.idFromName(address));
}

/**
 * What a client's sign-ins are counted by: an IPv4 address whole, an IPv6 one by its first four
 * groups (its /64), "unknown" without one.
 * @example
 * throttleKey("2001:db8:1:2::b"); // "2001:db8:1:2::/64"
 */
export function throttleKey(address: string | null): string {
  if (!address) return "unknown";
  if (!address.includes(":")) return address;
  const [head = "", tail = ""] = address.toLowerCase().split("::", 2);
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = address.includes("::") ? (tail === "" ? [] : tail.split(":")) : [];
  const groups = [...headGroups, ...Array(Math.max(0, 8 - headGroups.length - tailGroups.length)).fill("0"), ...tailGroups];
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}
