// Alerting through the real local runtime (issue 27): a real HTTP server as each channel (Slack,
// Discord, Teams, a generic webhook verified with the `standardwebhooks` library), configured by
// vars alone, and email through a `send_email` binding (simulated by wrangler dev: logged).
//
// - A signature-failure spike on `stripe` opens one incident; Slack answers 500 for a while, and
//   gets that message late, once.
// - A burst of 200 failures of one handler (the `standard` forward destination refuses them with a
//   400 naming the delivery: one bug) opens one incident and sends one message per channel; fixing the
//   destination and replaying resolves it, with one more message.
// - A destination down (`svix` forwards to a port nobody listens on): the backlog ages past
//   ALERT_BACKLOG_AGE_SECONDS, an incident, and its breaker opens, another (naming the subscriber);
//   back up, the deliveries go through and both resolve.
//
// The rules' settings are lowered so the test takes minutes, not hours; no time is asserted beyond
// what a rule's window defines.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import AxeBuilder from "@axe-core/playwright";
import { chromium } from "playwright-core";
import { Webhook } from "standardwebhooks";
import { main as cli } from "../../src/cli/webhook-inbox.mjs";
import { freePort, LocalInbox, mapLimit, ROOT, waitFor } from "./harness.mjs";
import { standardDelivery, stripeDelivery, svixDelivery } from "./signers.mjs";

const ALERT_SECRET = "whsec_YWxlcnRzLWUyZS1zZWNyZXQtMzItYnl0ZXMhISE=";
const FORWARD_SECRET = "whsec_Zm9yd2FyZGluZy1lMmUtc2VjcmV0LTMyLWJ5dGVzISE=";
const BASE = "https://inbox.example.com";
const BURST = 200;
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/**
 * A channel: records every request, answers `failFirst` of them 500, then `okStatus`.
 * `title(json)` reads the message's title as the channel shows it.
 */
async function startChannel({ okStatus, okBody = "", failFirst = 0 }) {
  const state = { requests: [], failFirst };
  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const failing = state.failFirst > 0;
      if (failing) state.failFirst--;
      const status = failing ? 500 : okStatus;
      state.requests.push({ path: request.url, headers: request.headers, text, json: JSON.parse(text), status });
      response.writeHead(status, { "content-type": "text/plain" });
      response.end(failing ? "internal error" : okBody);
    });
  });
  const port = await freePort();
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { state, url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** A forward destination: refuses (400, naming the delivery) until fixed, then takes everything. */
async function startDestination(port) {
  const state = { fixed: false, taken: new Set(), refused: 0 };
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      const id = request.headers["webhook-inbox-delivery-id"];
      if (!state.fixed) {
        state.refused++;
        response.writeHead(400, { "content-type": "text/plain" }).end(`unknown invoice in delivery ${id}`);
        return;
      }
      state.taken.add(id);
      response.writeHead(200).end("ok");
    });
  });
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { state, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** This project's wrangler.toml with a `send_email` binding named ALERT_EMAIL, in a directory of its own. */
function configWithEmail() {
  const dir = mkdtempSync(join(tmpdir(), "webhook-inbox-alerts-"));
  const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8")
    .replace(/^main = .*$/m, `main = ${JSON.stringify(join(ROOT, "src", "index.ts"))}`)
    .replace(/^migrations_dir = .*$/m, `migrations_dir = ${JSON.stringify(join(ROOT, "migrations"))}`);
  // Top-level keys must come before the first table: the binding goes in as the first table.
  const firstTable = toml.search(/^\[/m);
  const config = `${toml.slice(0, firstTable)}[[send_email]]\nname = "ALERT_EMAIL"\n\n${toml.slice(firstTable)}`;
  writeFileSync(join(dir, "wrangler.toml"), config);
  return { path: join(dir, "wrangler.toml"), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

const titles = {
  slack: (json) => json.blocks[0].text.text,
  discord: (json) => json.embeds[0].title,
  teams: (json) => json.attachments[0].content.body[0].text,
};
const TITLE_OF_RULE = { delivery_failed: "Deliveries failed", signature_failures: "Signature failures", backlog_age: "Backlog is ageing", breaker_open: "Forward destination down" };

const channels = {};
let destination;
let svixPort;
let svixDestination;
let inbox;
let config;
const verifier = new Webhook(ALERT_SECRET);

before(async () => {
  channels.slack = await startChannel({ okStatus: 200, okBody: "ok", failFirst: 2 });
  channels.discord = await startChannel({ okStatus: 204 });
  channels.teams = await startChannel({ okStatus: 202 });
  channels.webhook = await startChannel({ okStatus: 200 });
  const destinationPort = await freePort();
  destination = await startDestination(destinationPort);
  svixPort = await freePort(); // nobody listens yet: the destination is down
  config = configWithEmail();
  inbox = new LocalInbox({
    config: config.path,
    migrate: true,
    vars: {
      PUBLIC_BASE_URL: BASE,
      SWEEP_INTERVAL_SECONDS: "2",
      ALERT_INTERVAL_SECONDS: "1",
      ALERT_BACKLOG_AGE_SECONDS: "8",
      ALERT_SIGNATURE_WINDOW_MINUTES: "1",
      ALERT_SLACK_WEBHOOK_URL: `${channels.slack.url}/services/T000/B000/slack-secret-path`,
      ALERT_DISCORD_WEBHOOK_URL: `${channels.discord.url}/api/webhooks/1/discord-secret-path`,
      ALERT_TEAMS_WEBHOOK_URL: `${channels.teams.url}/workflows/teams`,
      ALERT_WEBHOOK_URL: `${channels.webhook.url}/alerts`,
      ALERT_WEBHOOK_SECRET: ALERT_SECRET,
      ALERT_EMAIL_FROM: "alerts@inbox.example.com",
      ALERT_EMAIL_TO: "oncall@example.com",
      STANDARD_FORWARD_URL: `http://127.0.0.1:${destinationPort}/hooks`,
      STANDARD_FORWARD_SECRET: FORWARD_SECRET,
      SVIX_FORWARD_URL: `http://127.0.0.1:${svixPort}/hooks`,
      SVIX_FORWARD_SECRET: FORWARD_SECRET,
      SVIX_FORWARD_TIMEOUT_SECONDS: "5",
      SVIX_FORWARD_BREAKER_FAILURES: "2",
      SVIX_FORWARD_BREAKER_OPEN_SECONDS: "2",
      MAX_ATTEMPTS: "12",
      RETRY_BASE_SECONDS: "1",
    },
  });
  await inbox.start();
});

after(async () => {
  await inbox?.stop();
  config?.remove();
  await Promise.all([...Object.values(channels).map((channel) => channel.close()), destination?.close(), svixDestination?.close()]);
});

/** The incidents of `rule` (and `source`) as the admin API shows them. */
async function incidentsOf(rule, source) {
  const { status, json } = await inbox.admin("/admin/incidents?limit=200");
  assert.equal(status, 200);
  return json.incidents.filter((incident) => incident.rule === rule && (source === undefined || incident.source === source));
}

/** What each channel took (answered 2xx) about `rule`/`source`/`subscriber`, by kind: `{ opened: n, resolved: n }`. */
function taken(channel, rule, source, subscriber = null) {
  const kinds = { opened: 0, reminder: 0, resolved: 0 };
  for (const request of channels[channel].state.requests) {
    if (request.status >= 300) continue;
    if (channel === "webhook") {
      const payload = verifier.verify(request.text, request.headers);
      if (payload.data.rule === rule && payload.data.source === (source ?? null) && payload.data.subscriber === subscriber) kinds[payload.data.kind]++;
      continue;
    }
    const title = titles[channel](request.json);
    const about = [source, subscriber].filter(Boolean).join(" / ");
    const want = `${TITLE_OF_RULE[rule]}${about ? ` (${about})` : ""}`;
    if (title.endsWith(want)) kinds[title.startsWith("Resolved") ? "resolved" : title.startsWith("Opened") ? "opened" : "reminder"]++;
  }
  return kinds;
}

const delivered = (incident, kind) => incident.messages.filter((message) => message.kind === kind && message.status === "sent").map((message) => message.channel).sort();
const EVERY_CHANNEL = ["discord", "email", "slack", "teams", "webhook"];

describe("alerts", { concurrency: false }, () => {
  it("a signature-failure spike opens one incident; Slack, down for a while, gets its message late, once", async () => {
    for (let index = 0; index < 40; index++) {
      const { body, headers } = stripeDelivery({ id: `evt_bad_${index}`, type: "payment_intent.succeeded" }, "whsec_not_the_secret");
      assert.equal((await inbox.post("/webhooks/stripe", body, headers)).status, 401);
      // Spread over a few seconds: the receiver writes its count at most once a second per source.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const [incident] = await waitFor(async () => {
      const found = await incidentsOf("signature_failures", "stripe");
      return found.length > 0 && found[0].messages.filter((message) => message.status === "sent").length === EVERY_CHANNEL.length ? found : null;
    });
    assert.ok(incident, `no delivered signature incident: ${JSON.stringify(await incidentsOf("signature_failures"))}\n${inbox.output}`);
    assert.equal((await incidentsOf("signature_failures", "stripe")).length, 1);
    assert.ok(incident.count >= 20, `counted ${incident.count}`);
    assert.deepEqual(delivered(incident, "opened"), EVERY_CHANNEL);
    // Slack answered 500 twice: its message went on a later try, and once only.
    const slack = incident.messages.find((message) => message.channel === "slack");
    assert.ok(slack.attempts >= 3, `slack attempts ${slack.attempts}`);
    assert.equal(channels.slack.state.requests.filter((request) => request.status === 500).length, 2);
    assert.deepEqual(taken("slack", "signature_failures", "stripe"), { opened: 1, reminder: 0, resolved: 0 });
    for (const channel of ["discord", "teams", "webhook"]) assert.deepEqual(taken(channel, "signature_failures", "stripe"), { opened: 1, reminder: 0, resolved: 0 });
    // Email went through the send_email binding (simulated by wrangler dev: its send() resolved; the
    // simulation logs the mail below the harness's log level, so its text is not checked here).
    assert.equal(incident.messages.find((message) => message.channel === "email").status, "sent");
  });

  it("a burst of 200 failures of one handler is one incident and one message per channel", async () => {
    const ids = Array.from({ length: BURST }, (_, index) => `msg_alert_burst_${index}`);
    await mapLimit(ids, 8, async (id) => {
      const { body, headers } = standardDelivery(id, { type: "invoice.paid" });
      assert.equal((await inbox.post("/webhooks/standard", body, headers)).status, 200);
    });
    const failedAll = await waitFor(async () => {
      const [incident] = await incidentsOf("delivery_failed", "standard");
      return incident && incident.count === BURST && delivered(incident, "opened").length === EVERY_CHANNEL.length ? incident : null;
    }, { timeoutMs: 240_000 });
    assert.ok(failedAll, `the burst's incident did not reach ${BURST}:\n${inbox.output}`);
    const incidents = await incidentsOf("delivery_failed", "standard");
    assert.equal(incidents.length, 1, "one bug, one incident");
    assert.equal(failedAll.errorKey, "PermanentError: the forward destination answered # Bad Request: unknown invoice in delivery msg_alert_burst_#");
    assert.deepEqual(delivered(failedAll, "opened"), EVERY_CHANNEL);
    for (const channel of ["slack", "discord", "teams", "webhook"]) assert.deepEqual(taken(channel, "delivery_failed", "standard", "forward"), { opened: 1, reminder: 0, resolved: 0 }, channel);

    // The messages' shapes, as each service documents them.
    const slack = channels.slack.state.requests.find((request) => request.status === 200 && titles.slack(request.json) === "Opened: Deliveries failed (standard / forward)").json;
    assert.equal(typeof slack.text, "string");
    assert.deepEqual(slack.blocks.map((block) => block.type), ["header", "section", "section", "context"]);
    assert.equal(slack.blocks[0].text.type, "plain_text");
    assert.match(slack.blocks[3].elements[0].text, new RegExp(`<${BASE}/ui/deliveries\\?status=failed&source=standard&subscriber=forward\\|`));
    const discord = channels.discord.state.requests.find((request) => request.status === 204 && titles.discord(request.json) === "Opened: Deliveries failed (standard / forward)").json;
    assert.deepEqual(discord.allowed_mentions, { parse: [] });
    assert.equal(discord.embeds.length, 1);
    assert.equal(discord.embeds[0].url, `${BASE}/ui/deliveries?status=failed&source=standard&subscriber=forward`);
    assert.deepEqual(discord.embeds[0].fields.slice(0, 2).map((field) => field.name), ["Since", "How many"]);
    const teams = channels.teams.state.requests.find((request) => titles.teams(request.json) === "Opened: Deliveries failed (standard / forward)").json;
    assert.equal(teams.type, "message");
    assert.equal(teams.attachments[0].contentType, "application/vnd.microsoft.card.adaptive");
    assert.equal(teams.attachments[0].content.type, "AdaptiveCard");
    assert.deepEqual(teams.attachments[0].content.body.map((element) => element.type), ["TextBlock", "TextBlock", "FactSet"]);
    const generic = channels.webhook.state.requests.map((request) => verifier.verify(request.text, request.headers)).find((payload) => payload.data.rule === "delivery_failed" && payload.data.source === "standard");
    assert.equal(generic.type, "incident.opened");
    assert.equal(generic.data.incidentLink, `${BASE}/ui/incidents/${failedAll.id}`);
    // The webhook URLs' secret paths appear nowhere the inbox shows or logs.
    const { json } = await inbox.admin("/admin/incidents");
    assert.ok(json.channels.includes(`slack (${channels.slack.url}/…)`), JSON.stringify(json.channels));
    for (const secret of ["slack-secret-path", "discord-secret-path"]) {
      assert.ok(!JSON.stringify(json).includes(secret), "admin API");
      assert.ok(!inbox.output.includes(secret), "logs");
    }

    // The CLI lists it.
    const lines = [];
    assert.equal(await cli(["incidents", "--status", "open", "--url", inbox.url, "--token", inbox.vars.ADMIN_TOKEN], { out: (line) => lines.push(line), err: (line) => lines.push(line) }), 0);
    assert.match(lines.join("\n"), new RegExp(`${failedAll.id}\\s+open\\s+delivery_failed\\s+standard/forward\\s+${BURST}`));

  });

  it("shows the incidents on the dashboard, in Chromium, with their timelines", async () => {
    // Fail, not skip: a machine without Chromium must not pass this by running none of it.
    assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (.ci/run does), or set CHROMIUM_PATH`);
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
    try {
      const page = await (await browser.newContext({ baseURL: inbox.url, viewport: { width: 1280, height: 900 } })).newPage();
      const errors = [];
      page.on("console", (message) => message.type() === "error" && errors.push(message.text()));
      await page.goto("/ui/incidents");
      await page.getByLabel("Admin token").fill(inbox.vars.ADMIN_TOKEN);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL(/\/ui\/incidents$/);
      assert.equal(await page.getByRole("heading", { level: 1 }).textContent(), "Incidents");
      const [burst] = await incidentsOf("delivery_failed", "standard");
      const section = page.locator(`section[aria-labelledby="incident-${burst.id}"]`);
      assert.match(await section.textContent(), /Deliveries failed: standard/);
      assert.match(await section.textContent(), /opened message to slack/);
      const { violations } = await new AxeBuilder({ page }).analyze();
      assert.deepEqual(violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical").map((violation) => violation.id), []);
      assert.deepEqual(errors, []);
      const screenshots = process.env.E2E_SCREENSHOT_DIR ?? join(inbox.stateDir, "screenshots");
      mkdirSync(screenshots, { recursive: true });
      await page.screenshot({ path: join(screenshots, "incidents.png"), fullPage: true });
    } finally {
      await browser.close();
    }
  });

  it("resolves the burst's incident once the handler is fixed and the deliveries replayed: one more message", async () => {
    const BURST_IDS = Array.from({ length: BURST }, (_, index) => `msg_alert_burst_${index}`);
    // Fixed, and replayed: the incident resolves, with one message more per channel.
    destination.state.fixed = true;
    let remaining = BURST;
    while (remaining > 0) {
      const replay = await inbox.admin("/admin/replay", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ status: "failed", source: "standard", limit: 100 }) });
      assert.equal(replay.status, 200);
      remaining = replay.json.remaining;
    }
    const resolved = await waitFor(async () => {
      const [incident] = await incidentsOf("delivery_failed", "standard");
      return incident.status === "resolved" && delivered(incident, "resolved").length === EVERY_CHANNEL.length ? incident : null;
    }, { timeoutMs: 240_000 });
    assert.ok(resolved, `not resolved:\n${inbox.output}`);
    // The replayed deliveries go through (the incident resolved as they left `failed`), and none fails again.
    assert.ok(await waitFor(() => destination.state.taken.size === BURST, { timeoutMs: 120_000, intervalMs: 500 }), `taken ${destination.state.taken.size}`);
    assert.deepEqual([...destination.state.taken].sort(), [...BURST_IDS].sort());
    assert.equal((await incidentsOf("delivery_failed", "standard")).length, 1);
    for (const channel of ["slack", "discord", "teams", "webhook"]) assert.deepEqual(taken(channel, "delivery_failed", "standard", "forward"), { opened: 1, reminder: 0, resolved: 1 }, channel);
  });

  it("a destination down ages the backlog past its limit: one incident, resolved once the destination is back", async () => {
    const startedAt = new Date().toISOString();
    const ids = Array.from({ length: 5 }, (_, index) => `msg_alert_down_${index}`);
    for (const id of ids) {
      const { body, headers } = svixDelivery(id);
      assert.equal((await inbox.post("/webhooks/svix", body, headers)).status, 200);
    }
    const opened = await waitFor(async () => (await incidentsOf("backlog_age")).find((incident) => incident.openedAt >= startedAt && delivered(incident, "opened").length === EVERY_CHANNEL.length), { timeoutMs: 180_000 });
    assert.ok(opened, `no backlog incident:\n${inbox.output}`);
    assert.ok(opened.count >= 8);
    // Its breaker opened after two failures in a row: an incident of its own, naming the subscriber.
    const breaker = await waitFor(async () => (await incidentsOf("breaker_open", "svix")).find((incident) => delivered(incident, "opened").length === EVERY_CHANNEL.length), { timeoutMs: 60_000 });
    assert.ok(breaker, `no breaker incident:\n${inbox.output}`);
    assert.equal(breaker.subscriber, "forward");
    assert.equal(breaker.status, "open");
    svixDestination = await startDestination(svixPort);
    svixDestination.state.fixed = true;
    const resolved = await waitFor(async () => {
      const incident = (await incidentsOf("backlog_age")).find((each) => each.id === opened.id);
      return incident.status === "resolved" && delivered(incident, "resolved").length === EVERY_CHANNEL.length ? incident : null;
    }, { timeoutMs: 240_000 });
    assert.ok(resolved, `the backlog incident did not resolve:\n${inbox.output}`);
    assert.deepEqual([...svixDestination.state.taken].sort(), [...ids].sort());
    const breakerResolved = await waitFor(async () => {
      const incident = (await incidentsOf("breaker_open", "svix")).find((each) => each.id === breaker.id);
      return incident.status === "resolved" && delivered(incident, "resolved").length === EVERY_CHANNEL.length ? incident : null;
    }, { timeoutMs: 120_000 });
    assert.ok(breakerResolved, `the breaker incident did not resolve:\n${inbox.output}`);
    assert.equal((await incidentsOf("breaker_open", "svix")).length, 1, "one outage, one incident");
    for (const channel of ["slack", "discord", "teams", "webhook"]) assert.deepEqual(taken(channel, "breaker_open", "svix", "forward"), { opened: 1, reminder: 0, resolved: 1 }, channel);
    for (const channel of ["slack", "discord", "teams", "webhook"]) {
      const kinds = taken(channel, "backlog_age", undefined);
      assert.ok(kinds.opened >= 1 && kinds.resolved >= 1, `${channel}: ${JSON.stringify(kinds)}`);
    }
  });

  it("the signature spike's incident resolves once its window has passed", async () => {
    const resolved = await waitFor(async () => {
      const [incident] = await incidentsOf("signature_failures", "stripe");
      return incident.status === "resolved" && delivered(incident, "resolved").length === EVERY_CHANNEL.length ? incident : null;
    }, { timeoutMs: 180_000 });
    assert.ok(resolved, `not resolved:\n${inbox.output}`);
    for (const channel of ["slack", "discord", "teams", "webhook"]) assert.deepEqual(taken(channel, "signature_failures", "stripe"), { opened: 1, reminder: 0, resolved: 1 }, channel);
  });
});
