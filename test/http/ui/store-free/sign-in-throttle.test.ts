/** The SignInThrottle object alone: free attempts, a lock that doubles up to its cap, forgetting. */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FREE_ATTEMPTS, MAX_LOCK_SECONDS, throttleKey } from "../../../../src/http/ui/sign-in-throttle";

function throttle() {
  return env.SIGN_IN_THROTTLE.get(env.SIGN_IN_THROTTLE.idFromName(`test-${crypto.randomUUID()}`));
}

/** Stops the clock the object reads (it runs in this isolate) at now + `offsetMs()`. */
function clockAt(offsetMs: () => number) {
  const start = Date.now();
  return vi.spyOn(Date, "now").mockImplementation(() => start + offsetMs());
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("SignInThrottle", () => {
  it(`allows ${FREE_ATTEMPTS} attempts freely, then locks for 2 s, 4 s, 8 s: twice as long each time`, async () => {
    const stub = throttle();
    let offset = 0;
    clockAt(() => offset);
    for (let attempt = 1; attempt <= FREE_ATTEMPTS; attempt++) expect(await stub.attempt()).toEqual({ allowed: true });
    for (const lockSeconds of [2, 4, 8]) {
      // This attempt goes ahead, and closes sign-in after it.
      expect(await stub.attempt()).toEqual({ allowed: true });
      expect(await stub.attempt()).toEqual({ allowed: false, retryAfterSeconds: lockSeconds });
      offset += lockSeconds * 1000 - 1;
      expect((await stub.attempt()).allowed).toBe(false);
      offset += 1;
    }
  });

  it(`never locks for longer than ${MAX_LOCK_SECONDS} s`, async () => {
    const stub = throttle();
    let offset = 0;
    clockAt(() => offset);
    for (let attempt = 1; attempt <= FREE_ATTEMPTS + 20; attempt++) {
      const gate = await stub.attempt();
      if (!gate.allowed) {
        expect(gate.retryAfterSeconds).toBeLessThanOrEqual(MAX_LOCK_SECONDS);
        offset += gate.retryAfterSeconds * 1000;
        attempt--;
      }
    }
    expect(await stub.attempt()).toEqual({ allowed: false, retryAfterSeconds: MAX_LOCK_SECONDS });
  });

  it("does not count an attempt refused while locked", async () => {
    const stub = throttle();
    for (let attempt = 1; attempt <= FREE_ATTEMPTS + 1; attempt++) await stub.attempt();
    for (let refused = 0; refused < 5; refused++) expect((await stub.attempt()).allowed).toBe(false);
    const state = await runInDurableObject(stub, (_instance, state) => state.storage.get<{ attempts: number }>("state"));
    expect(state?.attempts).toBe(FREE_ATTEMPTS + 1);
  });

  it("forgets everything on a success, and when its alarm fires (an hour after the last attempt)", async () => {
    const stub = throttle();
    for (let attempt = 1; attempt <= FREE_ATTEMPTS + 1; attempt++) await stub.attempt();
    await stub.succeeded();
    expect(await stub.attempt()).toEqual({ allowed: true });
    for (let attempt = 1; attempt <= FREE_ATTEMPTS + 1; attempt++) await stub.attempt();
    expect((await stub.attempt()).allowed).toBe(false);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await runInDurableObject(stub, (_instance, state) => state.storage.get("state"))).toBeUndefined();
    expect(await stub.attempt()).toEqual({ allowed: true });
  });
});

describe("throttleKey", () => {
  it("counts an IPv4 address whole and an IPv6 one by its /64, however it is written", () => {
    expect(throttleKey("203.0.113.7")).toBe("203.0.113.7");
    expect(throttleKey(null)).toBe("unknown");
    const sixtyFour = ["2001:db8:1:2::b", "2001:DB8:1:2:ffff:0:0:1", "2001:0db8:0001:0002::", "2001:db8:1:2:a:b:c:d"].map(throttleKey);
    expect(new Set(sixtyFour)).toEqual(new Set(["2001:db8:1:2::/64"]));
    expect(throttleKey("2001:db8:1:3::b")).toBe("2001:db8:1:3::/64");
    expect(throttleKey("::1")).toBe("0:0:0:0::/64");
    expect(throttleKey("fe80::1")).toBe("fe80:0:0:0::/64");
  });
});
