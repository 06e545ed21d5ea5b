import { runInDurableObject } from "cloudflare:test";

/**
 * Fires a Durable Object's alarm as the runtime does: the runtime removes the alarm, then calls
 * `alarm()`. `runDurableObjectAlarm` removes it with the object's own `storage.deleteAlarm()`, which
 * a write counter installed on that storage would count as the object's write; this removes it with
 * the storage's unwrapped method, so only what `alarm()` itself writes is counted. False when no
 * alarm was set.
 */
export async function fireAlarm(stub: DurableObjectStub): Promise<boolean> {
  return runInDurableObject(stub, async (instance, ctx) => {
    const storage = ctx.storage;
    if ((await storage.getAlarm()) === null) return false;
    const unwrapped = Object.getPrototypeOf(storage) as DurableObjectStorage;
    await unwrapped.deleteAlarm.call(storage);
    await (instance as unknown as { alarm(): Promise<void> }).alarm();
    return true;
  });
}
