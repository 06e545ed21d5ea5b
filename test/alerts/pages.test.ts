/**
 * Where incidents are shown, on either store: `GET /admin/incidents` (and one by id), the
 * dashboard's incidents page, and `/admin/metrics`' counts. A handler's error text in a summary is
 * escaped; a webhook URL's path (a credential) is never shown.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openStore, type IncidentChanges } from "../../src/store";
import { admin } from "../http/admin/client";
import { ui } from "../http/ui/client";
import { BASE_URL } from "../helpers/signers";

const store = () => openStore(env);

async function openIncident(key: string, summary: string): Promise<number> {
  const { turn } = await store().alerts.readings(0);
  const changes: IncidentChanges = {
    turnBefore: turn,
    turn: `${key}-turn`,
    state: "{}",
    open: [
      {
        key,
        rule: "delivery_failed",
        source: "pages",
        subscriber: null,
        errorKey: summary,
        summary,
        count: 3,
        sinceMs: Date.parse("2026-12-06T10:00:00.000Z"),
        messages: [{ kind: "opened", channel: "slack", body: "{}" }],
      },
    ],
    keep: [],
    remind: [],
    resolve: [],
  };
  expect(await store().alerts.applyIncidents(changes, Date.now())).toBe(true);
  return (await store().alerts.openIncidents()).find((incident) => incident.key === key)!.id;
}

describe("incidents in the admin API", () => {
  it("lists the incidents with their messages, and finds one by id", async () => {
    const id = await openIncident("pages-api", "handler threw");
    const [message] = await store().alerts.messagesOf([id]);
    await store().alerts.settleMessage(message!.id, { sent: false, error: "the channel answered 500", nextAtMs: Date.now() + 15_000 }, Date.now());
    const { status, json } = await admin("/incidents");
    expect(status).toBe(200);
    const listed = json.incidents.find((incident: { id: number }) => incident.id === id);
    expect(listed).toMatchObject({ rule: "delivery_failed", source: "pages", status: "open", count: 3, summary: "handler threw" });
    expect(listed.messages).toMatchObject([{ kind: "opened", channel: "slack", status: "pending", attempts: 1, lastError: "the channel answered 500" }]);
    expect(listed.key).toBeUndefined();
    expect((await admin(`/incidents/${id}`)).json).toMatchObject({ id, status: "open" });
    expect((await admin("/incidents/999999")).status).toBe(404);
    expect((await admin("/incidents", { token: null })).status).toBe(401);
  });

  it("counts open incidents by rule and messages by channel and status in /admin/metrics", async () => {
    const metrics = async () => (await exports.default.fetch(new Request(`${BASE_URL}/admin/metrics`, { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } }))).text();
    const open = (text: string) => Number(/^webhook_inbox_incidents_open\{rule="delivery_failed"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    const pending = (text: string) => Number(/^webhook_inbox_alert_messages\{channel="slack",status="pending"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    const before = await metrics();
    await openIncident("pages-metrics", "boom");
    const after = await metrics();
    expect([open(after) - open(before), pending(after) - pending(before)]).toEqual([1, 1]);
    expect(after).toContain("# TYPE webhook_inbox_incidents_open gauge");
  });
});

describe("the dashboard's incidents page", () => {
  it("shows open incidents with their timeline, the summary escaped", async () => {
    const id = await openIncident("pages-ui", "<script>alert(1)</script> failed");
    const page = await ui("/ui/incidents");
    expect(page.status).toBe(200);
    expect(page.text).toContain(`href="/ui/incidents/${id}"`);
    expect(page.text).toContain("&lt;script&gt;alert(1)&lt;/script&gt; failed");
    expect(page.text).not.toContain("<script>alert(1)</script>");
    expect(page.text).toContain("opened message to slack");
    expect(page.text).toContain("not delivered yet");
    const one = await ui(`/ui/incidents/${id}`);
    expect(one.status).toBe(200);
    expect((await ui("/ui/incidents/999999")).status).toBe(404);
  });
});
