// The dashboard in a real browser: Debian's Chromium, driven by playwright-core (launched from
// /usr/bin/chromium, headless; no browser is ever downloaded), against wrangler dev. An engineer
// paged at night signs in, sees the counts, filters to failed, opens the failed payment, reads its
// error and body, replays it and watches its attempt history grow. Along the way: a cross-site
// POST is refused, a body of <script> is shown as text and runs nothing, no page logs a console
// error or a CSP violation, and axe finds no serious or critical accessibility violation.
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import AxeBuilder from "@axe-core/playwright";
import { chromium } from "playwright-core";
import { freePort, LocalInbox, waitFor } from "./harness.mjs";
import { paymentEvent, standardDelivery, stripeDelivery } from "./signers.mjs";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const HOSTILE = `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">`;
const BROKEN = "evt_ui_broken";
const HOSTILE_ID = "evt_ui_hostile";

const inbox = new LocalInbox();
/** Screenshots of every page: kept in E2E_SCREENSHOT_DIR when set, else in the state directory (removed afterwards). */
let screenshots;
let browser;
let context;
let page;
/** Console errors and CSP violations of the dashboard's own pages, by page. */
const problems = [];

/** What was sent: four Stripe deliveries (one twice), one of them broken, and one Standard Webhooks delivery no handler takes. */
const SENDS = [
  stripeDelivery(paymentEvent("evt_ui_pay1", 1_000)),
  stripeDelivery(paymentEvent("evt_ui_pay1", 1_000)),
  stripeDelivery(paymentEvent("evt_ui_pay2", 2_500)),
  stripeDelivery(paymentEvent(BROKEN, undefined)),
  stripeDelivery(paymentEvent(HOSTILE_ID, 700, HOSTILE)),
  standardDelivery("msg_ui_unhandled"),
];
const EXPECTED = { received: 0, processing: 0, done: 4, failed: 1, filtered: 0 };

before(async () => {
  // Fail, not skip: a machine without Chromium must not pass this suite by running none of it.
  assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (.ci/run does), or set CHROMIUM_PATH`);
  await inbox.start();
  screenshots = process.env.E2E_SCREENSHOT_DIR ?? join(inbox.stateDir, "screenshots");
  mkdirSync(screenshots, { recursive: true });
  const replies = [];
  for (const send of SENDS) replies.push((await inbox.post(send.path, send.body, send.headers)).json?.status);
  assert.deepEqual(replies, ["stored", "duplicate", "stored", "stored", "stored", "stored"]);
  const settled = await waitFor(async () => {
    const stats = (await inbox.admin("/admin/stats")).json;
    return stats?.counts.done === EXPECTED.done && stats.counts.failed === EXPECTED.failed ? stats : null;
  }, { timeoutMs: 60_000, intervalMs: 500 });
  assert.ok(settled, "the deliveries settle");
  // The broken payment's dead letter lands a few seconds after it failed; let it, before the replay.
  assert.ok(await waitFor(() => inbox.output.includes(`dead letter: stripe/${BROKEN}`), { timeoutMs: 30_000, intervalMs: 250 }));

  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
  context = await browser.newContext({ baseURL: inbox.url, viewport: { width: 1280, height: 900 } });
  page = await watched(context);
});

after(async () => {
  await browser?.close();
  await inbox.stop();
});

/** A page whose console errors, uncaught errors and CSP violations are recorded. */
async function watched(browserContext) {
  const watchedPage = await browserContext.newPage();
  await watchedPage.addInitScript(() => {
    window.__csp = [];
    document.addEventListener("securitypolicyviolation", (event) => window.__csp.push(`${event.violatedDirective} ${event.blockedURI}`));
  });
  watchedPage.on("console", (message) => {
    if (message.type() === "error") problems.push(`${watchedPage.url()}: console: ${message.text()}`);
  });
  watchedPage.on("pageerror", (error) => problems.push(`${watchedPage.url()}: uncaught: ${error.message}`));
  return watchedPage;
}

/** Checks the page as it stands: no console error or CSP violation so far, no serious or critical axe violation; saves a screenshot. */
async function inspect(name) {
  await page.waitForLoadState("load");
  const csp = await page.evaluate(() => window.__csp);
  assert.deepEqual(csp, [], `CSP violations on ${name}`);
  assert.deepEqual(problems, [], `console errors on ${name}`);
  for (const colorScheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme });
    const { violations } = await new AxeBuilder({ page }).analyze();
    const serious = violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
    assert.deepEqual(
      serious.map((violation) => `${violation.id} (${violation.impact}): ${violation.nodes.map((node) => node.target.join(" ")).join(", ")}`),
      [],
      `accessibility of ${name} (${colorScheme})`,
    );
    await page.screenshot({ path: join(screenshots, `${name}-${colorScheme}.png`), fullPage: true });
  }
  await page.emulateMedia({ colorScheme: "light" });
}

/** The count on the overview's card of `status` (its link to the list of that status). */
async function cardCount(status) {
  return Number(await page.locator(`.cards a[href="/ui/deliveries?status=${status}"]`).textContent());
}

/** The attempt history's rows: [attempt, outcome]. */
async function attemptRows() {
  const table = page.locator("h2#attempts + table tbody tr");
  return table.evaluateAll((rows) => rows.map((row) => [row.cells[0].textContent.trim(), row.cells[3].textContent.trim()]));
}

describe("the dashboard in Chromium", { timeout: 300_000 }, () => {
  it("sends a signed-out browser to sign in, and signs in with the admin token", async () => {
    await page.goto("/ui");
    assert.match(page.url(), /\/ui\/login\?next=%2Fui$/);
    await inspect("sign-in");
    await page.getByLabel("Admin token").fill(inbox.vars.ADMIN_TOKEN);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(/\/ui$/);
    assert.equal(await page.getByRole("heading", { level: 1 }).textContent(), "Overview");
  });

  it("shows the overview's counts as sent (the snapshot may lag a minute: reloads until it matches)", async () => {
    const counts = await waitFor(async () => {
      await page.reload();
      const shown = {};
      for (const status of Object.keys(EXPECTED)) shown[status] = await cardCount(status);
      return JSON.stringify(shown) === JSON.stringify(EXPECTED) ? shown : null;
    }, { timeoutMs: 120_000, intervalMs: 5_000 });
    assert.deepEqual(counts, EXPECTED);
    const stripe = page.locator("tbody tr", { has: page.locator('th[scope="row"]', { hasText: /^stripe$/ }) });
    // received, processing, done, failed, filtered, total, the duplicates recognised (one retry was sent twice), the grade
    assert.deepEqual(await stripe.locator("td").allTextContents(), ["0", "0", "3", "1", "0", "4", "1", "strong"]);
    assert.equal(await page.locator('.card:has-text("Unhandled") .value').textContent(), "1");
    assert.equal(await page.locator('svg.chart[role="img"]').count(), 1);
    await inspect("overview");
  });

  it("leads from a source's grade on the overview to its row on the Sources page, which explains it", async () => {
    await page.getByRole("link", { name: "security grade of stripe" }).click();
    await page.waitForURL(/\/ui\/sources#source-stripe$/);
    assert.equal(await page.getByRole("heading", { level: 1 }).textContent(), "Sources");
    const stripe = page.locator("tr#source-stripe");
    // provider, grade, body / timestamp / id signed, secret in clear, what it means, dedup key
    const cells = await stripe.locator("td").allTextContents();
    assert.deepEqual(cells.slice(0, 6), ["stripe", "strong", "yes", "yes", "yes", "no"]);
    assert.match(await page.locator("main > p").first().textContent(), /docs\/providers\.md/);
    await inspect("sources");
  });

  it("filters the list to failed deliveries with the form, as a deep link", async () => {
    await page.getByRole("link", { name: "Deliveries", exact: true }).click();
    await page.waitForURL(/\/ui\/deliveries$/);
    assert.equal(await page.locator("main tbody tr").count(), 5);
    await inspect("deliveries");
    await page.getByLabel("Status").selectOption("failed");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/\/ui\/deliveries\?status=failed/);
    const rows = page.locator("main tbody tr");
    assert.equal(await rows.count(), 1);
    assert.match(await rows.first().textContent(), /failed\s*stripe\s*evt_ui_broken\s*payment_intent\.succeeded\s*1\s*PermanentError/);
    await inspect("deliveries-failed");
  });

  it("opens the failed delivery and shows its error, its body and its attempt history", async () => {
    await page.getByRole("link", { name: BROKEN }).click();
    await page.waitForURL(new RegExp(`/ui/deliveries/stripe/${BROKEN}$`));
    assert.match(await page.locator("dl.fields").textContent(), /PermanentError: payment_intent\.succeeded has no integer data\.object\.amount/);
    const body = await page.locator("h2#body ~ pre code").textContent();
    assert.equal(JSON.parse(body).id, BROKEN);
    assert.match(body, /\n {2}"id": "evt_ui_broken",\n/, "pretty-printed");
    assert.deepEqual(await attemptRows(), [["1", "failed"]]);
    assert.match(await page.locator("h2#headers + table").textContent(), /stripe-signature/);
    await inspect("delivery-failed");
  });

  it("replays it, and its attempt history grows: the replay, then the new run", async () => {
    await page.getByRole("button", { name: "Replay", exact: true }).click();
    await page.waitForURL(/\?notice=replayed$/);
    assert.match(await page.locator('[role="status"]').textContent(), /Replayed/);
    await inspect("delivery-replayed");
    // The payload is still broken: it fails again, and the history says so.
    const rows = await waitFor(async () => {
      await page.reload();
      const current = await attemptRows();
      return current.length >= 3 ? current : null;
    }, { timeoutMs: 60_000, intervalMs: 1_000 });
    assert.deepEqual(rows, [
      ["1", "failed"],
      ["replay 1", "replayed"],
      ["1 after replay 1", "failed"],
    ]);
    assert.equal(await page.locator("h1 .badge").textContent(), "failed");
  });

  it("shows a body of <script> as text, and runs nothing", async () => {
    await page.goto(`/ui/deliveries/stripe/${HOSTILE_ID}`);
    const body = await page.locator("h2#body ~ pre code").textContent();
    assert.ok(body.includes(`"customer": ${JSON.stringify(HOSTILE)}`), body);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.equal(await page.locator("main script, main img").count(), 0);
    await inspect("delivery-hostile");
  });

  it("asks before a forced replay of a done delivery", async () => {
    await page.goto("/ui/deliveries/stripe/evt_ui_pay2");
    await page.getByRole("link", { name: "Force replay…" }).click();
    await page.waitForURL(/\/ui\/deliveries\/stripe\/evt_ui_pay2\/replay$/);
    await inspect("force-replay-confirm");
    await page.getByRole("link", { name: "Cancel" }).click();
    await page.waitForURL(/\/ui\/deliveries\/stripe\/evt_ui_pay2$/);
    assert.equal(await page.locator("h1 .badge").textContent(), "done");
  });

  it("shows the bulk replay's confirmation with the count first", async () => {
    await page.goto("/ui/deliveries?status=failed&source=stripe");
    await page.getByRole("link", { name: /Replay the failed deliveries these filters match/ }).click();
    await page.waitForURL(/\/ui\/replay\?source=stripe$/);
    assert.match(await page.locator("main").textContent(), /1 failed delivery of the source stripe can be replayed now/);
    await inspect("bulk-replay-confirm");
  });

  it("refuses a POST from another site, even from a signed-in browser", async () => {
    const before = await inbox.sql(`SELECT attempt_log FROM deliveries WHERE source = 'stripe' AND id = '${BROKEN}'`);
    // Another site (localhost is not the same site as 127.0.0.1) whose page posts a form to the inbox.
    const evilPort = await freePort();
    const target = `${inbox.url}/ui/deliveries/stripe/${BROKEN}/replay`;
    const evil = createServer((_request, response) => {
      response.setHeader("content-type", "text/html");
      response.end(`<!DOCTYPE html><form method="post" action="${target}"><input name="force" value="true"></form><script>document.forms[0].submit()</script>`);
    });
    await new Promise((resolve) => evil.listen(evilPort, "localhost", resolve));
    const attacker = await context.newPage();
    try {
      const refused = attacker.waitForResponse((response) => response.url() === target);
      await attacker.goto(`http://localhost:${evilPort}/`);
      assert.equal((await refused).status(), 403);
      await attacker.waitForLoadState("load");
      assert.match(await attacker.locator("h1").textContent(), /Refused: not sent from this dashboard/);
    } finally {
      await attacker.close();
      await new Promise((resolve) => evil.close(resolve));
    }
    assert.deepEqual(await inbox.sql(`SELECT attempt_log FROM deliveries WHERE source = 'stripe' AND id = '${BROKEN}'`), before);
  });

  it("signs out, and the dashboard asks to sign in again", async () => {
    await page.goto("/ui");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/ui\/login$/);
    await page.goto("/ui/deliveries");
    assert.match(page.url(), /\/ui\/login\?next=%2Fui%2Fdeliveries$/);
    assert.deepEqual(problems, []);
  });
});
