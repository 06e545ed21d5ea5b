/**
 * Alerting's slice of the store (src/store/alerts.ts) on either store: the failure groups the
 * triggers keep, signature-failure minutes, heartbeats, the evaluation's turn, and the outbox's
 * claims. And the beat's evaluation over a real store: a burst of failures of one bug is one
 * incident with one message per channel, and a replay that fixes them resolves it with one more.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { evaluate } from "../../src/alerts/beat";
import { loadConfig } from "../../src/config";
import { openStore, type IncidentChanges } from "../../src/store";

const body = new TextEncoder().encode('{"type":"x"}');
const ctx = { waitUntil: () => {} };
const store = () => openStore(env);
const MIN = 60_000;

async function failed(source: string, id: string, error: string, atMs: number): Promise<void> {
  await store().record({ source, id, eventType: null, body, receivedAtMs: atMs }, ctx);
  expect(await store().recordResult({ source, id }, atMs + 1, { kind: "failed", error }, atMs + 10)).toBe(1);
}

const group = async (source: string) => (await store().alerts.readings(Date.now())).failureGroups.filter((each) => each.source === source);

describe("failure groups", () => {
  it("count failed deliveries per source and error, a run of digits made one '#', and a replay takes one back", async () => {
    const t = Date.now();
    await failed("grp", "a", "payment 123 not found", t);
    await failed("grp", "b", "payment 4567 not found", t + 1);
    await failed("grp", "c", "database down", t + 2);
    expect((await group("grp")).map(({ errorKey, failedNow, subscriber }) => ({ errorKey, failedNow, subscriber })).sort((x, y) => x.errorKey.localeCompare(y.errorKey))).toEqual([
      { errorKey: "database down", failedNow: 1, subscriber: null },
      { errorKey: "payment # not found", failedNow: 2, subscriber: null },
    ]);
    expect(await store().resetForReplay({ source: "grp", id: "a" }, ["failed"], t + 100)).toHaveLength(1);
    expect((await group("grp")).find((each) => each.errorKey === "payment # not found")?.failedNow).toBe(1);
    // Failures ever are a counter: the replay does not take one back.
    expect((await store().alerts.readings(Date.now())).failedEver.grp).toBe(3);
  });

  it("drop a group once its last failed delivery is replayed", async () => {
    const t = Date.now();
    await failed("grp-gone", "a", "boom", t);
    expect(await store().resetFailedForReplay({ source: "grp-gone" }, 10, t + 100)).toHaveLength(1);
    expect(await group("grp-gone")).toEqual([]);
  });
});

describe("failure groups per subscriber", () => {
  it("name the subscriber a one-subscriber delivery failed in, and each failed run of a fanned-out delivery under its own, the delivery counted once", async () => {
    const t = Date.now();
    await store().record({ source: "grp-sub", id: "one", eventType: null, body, receivedAtMs: t }, ctx);
    expect(await store().recordResult({ source: "grp-sub", id: "one" }, t + 1, { kind: "failed", error: "crm said 500" }, t + 10, { startedAtMs: t + 5, subscriber: "crm" })).toBe(1);

    await store().record({ source: "grp-sub", id: "fan", eventType: null, body, receivedAtMs: t + 1 }, ctx);
    expect(await store().fanOut({ source: "grp-sub", id: "fan" }, t + 2, ["crm", "ledger", "sink"], t + 20)).toBe(true);
    for (const subscriber of ["crm", "ledger"]) {
      const run = { source: "grp-sub", id: "fan", subscriber };
      expect(await store().recordResult(run, t + 3, { kind: "failed", error: `${subscriber} said 503` }, t + 30)).toBe(1);
    }
    const sink = { source: "grp-sub", id: "fan", subscriber: "sink" };
    expect((await store().commitDone(sink, t + 3, { handled: true, effects: [] }, t + 31)).kind).toBe("committed");
    expect(await store().pendingRuns({ source: "grp-sub", id: "fan" }, t + 40)).toEqual([]);

    const groups = async () =>
      (await group("grp-sub"))
        .filter((each) => each.failedNow > 0)
        .map(({ subscriber, errorKey, failedNow }) => ({ subscriber, errorKey, failedNow }))
        .sort((x, y) => `${x.subscriber}${x.errorKey}`.localeCompare(`${y.subscriber}${y.errorKey}`));
    expect(await groups()).toEqual([
      { subscriber: "crm", errorKey: "crm said #", failedNow: 2 },
      { subscriber: "ledger", errorKey: "ledger said #", failedNow: 1 },
    ]);
    // The fanned-out delivery counts once towards the source's failures, its one-subscriber neighbour once.
    expect((await store().alerts.readings(Date.now())).failedEver["grp-sub"]).toBe(2);

    // Replaying the ledger's run takes its failure back; the CRM's stay. It fails again, for another reason.
    const ledger = { source: "grp-sub", id: "fan", subscriber: "ledger" };
    expect(await store().resetForReplay(ledger, ["failed"], t + 50)).toHaveLength(1);
    expect(await groups()).toEqual([{ subscriber: "crm", errorKey: "crm said #", failedNow: 2 }]);
    expect(await store().recordResult(ledger, t + 60, { kind: "failed", error: "ledger timed out" }, t + 61)).toBe(1);
    expect(await store().pendingRuns({ source: "grp-sub", id: "fan" }, t + 62)).toEqual([]);
    expect((await groups()).map((each) => each.errorKey)).toEqual(["crm said #", "ledger timed out"]);
    // Replayed again, the ledger's run now succeeds: the summary is failed again (the CRM's run), a
    // delivery that failed once, not twice.
    expect(await store().resetForReplay(ledger, ["failed"], t + 70)).toHaveLength(1);
    expect((await store().commitDone(ledger, t + 80, { handled: true, effects: [] }, t + 81)).kind).toBe("committed");
    expect(await store().pendingRuns({ source: "grp-sub", id: "fan" }, t + 82)).toEqual([]);
    expect((await groups()).map((each) => each.errorKey)).toEqual(["crm said #"]);
    expect((await store().alerts.readings(Date.now())).failedEver["grp-sub"]).toBe(2);
    // Each subscriber's failures ever, for its failure rate: the ledger's run failed twice.
    expect((await store().alerts.readings(Date.now())).failedEverBySubscriber["grp-sub"]).toEqual({ crm: 2, ledger: 2 });

    // Retention takes both deliveries, the fanned-out one's runs with it, and their failures.
    await store().applyRetention(t + 2, t - 1, 100);
    expect(await store().get({ source: "grp-sub", id: "fan" })).toBeNull();
    expect(await store().get({ source: "grp-sub", id: "one" })).toBeNull();
    expect(await groups()).toEqual([]);
  });
});

describe("failure groups and retention", () => {
  it("lose a failed delivery that retention deletes, and retention still counts what it deleted", async () => {
    const longAgo = Date.parse("2020-01-01T00:00:00.000Z");
    await failed("grp-old", "a", "boom", longAgo);
    await failed("grp-old", "b", "boom", longAgo + 1);
    expect((await group("grp-old"))[0]?.failedNow).toBe(2);
    const { deleted } = await store().applyRetention(longAgo + 1, longAgo, 100);
    expect(deleted).toBe(1);
    expect((await group("grp-old"))[0]?.failedNow).toBe(1);
  });
});

describe("signature failures and heartbeats", () => {
  it("sum the minutes within the window asked for", async () => {
    const t = Date.parse("2026-12-06T10:00:30.000Z");
    await store().alerts.noteSignatureFailures("sig", 3, t - 10 * MIN);
    await store().alerts.noteSignatureFailures("sig", 4, t - 2 * MIN);
    await store().alerts.noteSignatureFailures("sig", 5, t);
    expect((await store().alerts.readings(t - 5 * MIN)).signatureFailures.sig).toBe(9);
  });

  it("keep each part's last heartbeat", async () => {
    await store().alerts.noteHeartbeat("consumer", 1_000);
    await store().alerts.noteHeartbeat("consumer", 2_000);
    expect((await store().alerts.readings(0)).heartbeats.consumer).toBe(2_000);
  });
});

/** Each test's messages go to a channel of its own: a channel's messages go in order, so another test's claimed one would hold them. */
const opening = (key: string, turnBefore: string, turn: string, channel = `slack-${key}`): IncidentChanges => ({
  turnBefore,
  turn,
  state: JSON.stringify({ turn }),
  open: [{ key, rule: "backlog_age", source: null, subscriber: null, errorKey: null, summary: "old", count: 1, sinceMs: 0, messages: [{ kind: "opened", channel, body: "{}" }] }],
  keep: [],
  remind: [],
  resolve: [],
});

describe("the evaluation's turn and the outbox", () => {
  it("applies an evaluation only while its turn is the one it read", async () => {
    const { turn } = await store().alerts.readings(0);
    const now = Date.now();
    expect(await store().alerts.applyIncidents(opening("turn-a", turn, "t1"), now)).toBe(true);
    // A second evaluation that read the same turn finds it taken: nothing of it lands.
    expect(await store().alerts.applyIncidents(opening("turn-b", turn, "t2"), now)).toBe(false);
    const keys = (await store().alerts.openIncidents()).map((incident) => incident.key);
    expect(keys).toContain("turn-a");
    expect(keys).not.toContain("turn-b");
    expect((await store().alerts.readings(0)).state).toBe(JSON.stringify({ turn: "t1" }));
  });

  it("claims a due message once, retries a failed one later, and marks a sent one", async () => {
    const { turn } = await store().alerts.readings(0);
    const now = Date.now();
    expect(await store().alerts.applyIncidents(opening("outbox", turn, `o-${now}`), now)).toBe(true);
    const incident = (await store().alerts.openIncidents()).find((each) => each.key === "outbox")!;
    const claimed = (await store().alerts.claimDueMessages(now + 1, now + 120_000, 100)).filter((message) => message.incidentId === incident.id);
    expect(claimed).toHaveLength(1);
    expect(claimed[0]).toMatchObject({ kind: "opened", channel: "slack-outbox", status: "pending", attempts: 0 });
    expect((await store().alerts.claimDueMessages(now + 2, now + 120_000, 100)).filter((message) => message.incidentId === incident.id)).toEqual([]);
    await store().alerts.settleMessage(claimed[0]!.id, { sent: false, error: "the channel answered 500", nextAtMs: now + 15_000 }, now + 3);
    expect((await store().alerts.claimDueMessages(now + 14_000, now + 120_000, 100)).filter((message) => message.incidentId === incident.id)).toEqual([]);
    const again = (await store().alerts.claimDueMessages(now + 15_000, now + 120_000, 100)).filter((message) => message.incidentId === incident.id);
    expect(again).toMatchObject([{ attempts: 1, lastError: "the channel answered 500" }]);
    await store().alerts.settleMessage(claimed[0]!.id, { sent: true }, now + 15_001);
    const [message] = await store().alerts.messagesOf([incident.id]);
    expect(message).toMatchObject({ status: "sent", attempts: 2, lastError: null, sentAt: new Date(now + 15_001).toISOString() });
  });
});

describe("a channel's messages", () => {
  it("go in order: none is claimed behind an older one of its channel that waits for its retry", async () => {
    const { turn } = await store().alerts.readings(0);
    const now = Date.now() + 86_400_000; // past every message of the tests before
    const changes = opening("order", turn, `order-${now}`);
    const withThree = { ...changes, open: [{ ...changes.open[0]!, messages: [{ kind: "opened" as const, channel: "slack-order", body: "{}" }, { kind: "opened" as const, channel: "discord-order", body: "{}" }] }] };
    expect(await store().alerts.applyIncidents(withThree, now)).toBe(true);
    const incident = (await store().alerts.openIncidents()).find((each) => each.key === "order")!;
    const first = (await store().alerts.claimDueMessages(now, now + 120_000, 100)).filter((message) => message.incidentId === incident.id);
    const slack = first.find((message) => message.channel === "slack-order")!;
    await store().alerts.settleMessage(slack.id, { sent: false, error: "the channel answered 500", nextAtMs: now + 15_000 }, now);
    await store().alerts.settleMessage(first.find((message) => message.channel === "discord-order")!.id, { sent: true }, now);
    // The incident resolves: a slack and a discord message, both due.
    const { turn: next } = await store().alerts.readings(0);
    const resolving: IncidentChanges = { turnBefore: next, turn: `order-r-${now}`, state: "{}", open: [], keep: [], remind: [], resolve: [{ id: incident.id, messages: [{ kind: "resolved", channel: "slack-order", body: "{}" }, { kind: "resolved", channel: "discord-order", body: "{}" }] }] };
    expect(await store().alerts.applyIncidents(resolving, now + 1)).toBe(true);
    const mine = async (atMs: number) => (await store().alerts.claimDueMessages(atMs, atMs + 120_000, 100)).filter((message) => message.incidentId === incident.id).map((message) => [message.kind, message.channel]);
    expect(await mine(now + 2)).toEqual([["resolved", "discord-order"]]);
    // Once the failed one is due, the channel's messages are claimed together, in order.
    const due = await mine(now + 15_000);
    expect(due).toEqual([
      ["opened", "slack-order"],
      ["resolved", "slack-order"],
    ]);
    // It fails again: the one behind it is released, and waits behind it.
    const [, behind] = (await store().alerts.messagesOf([incident.id])).filter((message) => message.channel === "slack-order");
    await store().alerts.settleMessage(slack.id, { sent: false, error: "the channel answered 500", nextAtMs: now + 45_000 }, now + 15_000);
    await store().alerts.releaseMessages([behind!.id], now + 15_000);
    expect(await mine(now + 15_001)).toEqual([]);
    expect(await mine(now + 45_000)).toEqual(due);
  });
});

describe("an evaluation over the store", () => {
  const config = loadConfig({ ...env, ALERT_SLACK_WEBHOOK_URL: "https://hooks.slack.com/services/T0/B0/secret", ALERT_DISCORD_WEBHOOK_URL: "https://discord.com/api/webhooks/1/secret", PUBLIC_BASE_URL: "https://inbox.example.com" });

  it("opens one incident for a burst of one bug, one message per channel, and resolves it once when replayed", async () => {
    let t = Date.now() + 3_600_000;
    for (let index = 0; index < 30; index++) await failed("burst", `d${index}`, `handler threw on order ${index}`, t);
    expect(await evaluate(store(), config, (t += MIN))).toBe(true);
    const mine = async () => (await store().alerts.listIncidents(100)).filter((incident) => incident.source === "burst");
    const [incident] = await mine();
    expect(incident).toMatchObject({ rule: "delivery_failed", status: "open", count: 30, errorKey: "handler threw on order #" });
    expect((await store().alerts.messagesOf([incident!.id])).map((message) => [message.kind, message.channel])).toEqual([
      ["opened", "slack"],
      ["opened", "discord"],
    ]);
    const link = JSON.parse((await store().alerts.messagesOf([incident!.id]))[0]!.body).link;
    expect(link).toBe("https://inbox.example.com/ui/deliveries?status=failed&source=burst");

    // More failures of the same bug, another evaluation: the same incident, counted, no message.
    for (let index = 30; index < 40; index++) await failed("burst", `d${index}`, `handler threw on order ${index}`, t);
    expect(await evaluate(store(), config, (t += MIN))).toBe(true);
    expect(await mine()).toMatchObject([{ id: incident!.id, status: "open", count: 40 }]);
    expect(await store().alerts.messagesOf([incident!.id])).toHaveLength(2);

    // Within the interval nothing is evaluated.
    expect(await evaluate(store(), config, t + 1_000)).toBe(false);

    await store().resetFailedForReplay({ source: "burst" }, 100, t);
    expect(await evaluate(store(), config, (t += MIN))).toBe(true);
    expect(await mine()).toMatchObject([{ id: incident!.id, status: "resolved" }]);
    expect((await store().alerts.messagesOf([incident!.id])).map((message) => [message.kind, message.channel])).toEqual([
      ["opened", "slack"],
      ["opened", "discord"],
      ["resolved", "slack"],
      ["resolved", "discord"],
    ]);
    expect(await evaluate(store(), config, (t += MIN))).toBe(true);
    expect(await store().alerts.messagesOf([incident!.id])).toHaveLength(4);
  });
});
