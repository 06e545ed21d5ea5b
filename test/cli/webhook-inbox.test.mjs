// The CLI against a stub admin API (node:http): how each answer is shown, and the exit codes.
// The real runtime is exercised by test/e2e/cli.test.mjs.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createServer } from "node:http";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { main } from "../../src/cli/webhook-inbox.mjs";

const CLI = fileURLToPath(new URL("../../src/cli/webhook-inbox.mjs", import.meta.url));

/** @type {{ method: string, url: string, authorization: string | undefined, body: string }[]} */
const requests = [];
/** What the stub answers next: [status, body text]. */
let answer = [200, "{}"];
const server = createServer((request, response) => {
  let body = "";
  request.on("data", (chunk) => (body += chunk));
  request.on("end", () => {
    requests.push({ method: request.method ?? "", url: request.url ?? "", authorization: request.headers.authorization, body });
    const [status, text] = typeof answer === "function" ? answer(request) : answer;
    response.writeHead(status, { "content-type": "application/json" }).end(text);
  });
});
let url = "";
before(() => new Promise((resolve) => server.listen(0, "127.0.0.1", () => ((url = `http://127.0.0.1:${server.address().port}`), resolve()))));
after(() => new Promise((resolve) => server.close(resolve)));

/** A project root without .dev.vars: no token comes from a file unless a test writes one. */
const EMPTY_ROOT = mkdtempSync(join(tmpdir(), "webhook-inbox-cli-"));

/** Runs the CLI in-process against the stub. */
async function run(args, env = {}, root = EMPTY_ROOT) {
  const out = [];
  const err = [];
  const code = await main(args, { env: { INBOX_URL: url, INBOX_ADMIN_TOKEN: "stub-token", ...env }, out: (line) => out.push(line), err: (line) => err.push(line), root });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

const STATS = {
  counts: { received: 2, processing: 1, done: 40, failed: 3, filtered: 4 },
  unhandled: 5,
  oldestWaitingSeconds: 125,
  bySource: { stripe: { received: 2, processing: 1, done: 30, failed: 3, filtered: 4 }, github: { received: 0, processing: 0, done: 10, failed: 0, filtered: 0 } },
};

/** GET /admin/sources as the inbox answers it (the grades as the catalogue gives them). */
const SOURCES_ANSWER = {
  sources: [
    { source: "stripe", provider: "stripe", grade: { bodySigned: true, timestampSigned: true, deliveryIdSigned: true, secretInClear: false }, dedupKey: "body `id`", configured: true, messages: [], rotation: { inProgress: false, previousLastMatchedAt: null } },
    { source: "github", provider: "github", grade: { bodySigned: true, timestampSigned: false, deliveryIdSigned: false, secretInClear: false }, dedupKey: "X-GitHub-Delivery", configured: true, messages: [], rotation: { inProgress: false, previousLastMatchedAt: null } },
    { source: "gitlab", provider: "gitlab", grade: { bodySigned: false, timestampSigned: false, deliveryIdSigned: false, secretInClear: true }, dedupKey: "Idempotency-Key", configured: true, messages: [], rotation: { inProgress: false, previousLastMatchedAt: null } },
    { source: "adyen", provider: "adyen", grade: { bodySigned: "partly", timestampSigned: false, deliveryIdSigned: true, secretInClear: false }, dedupKey: "eventCode, pspReference", configured: true, messages: [], rotation: { inProgress: false, previousLastMatchedAt: null } },
    { source: "paypal", provider: "paypal", grade: { bodySigned: true, timestampSigned: true, deliveryIdSigned: true, secretInClear: false }, dedupKey: "body `id`", configured: false, messages: [], rotation: { inProgress: false, previousLastMatchedAt: null } },
  ],
};

describe("webhook-inbox (against a stub API)", () => {
  it("sends the token as a bearer to <url>/admin/stats and prints the counts as tables", async () => {
    answer = [200, JSON.stringify(STATS)];
    const result = await run(["status"]);
    assert.equal(result.code, 0);
    assert.equal(requests.at(-1)?.url, "/admin/stats");
    assert.equal(requests.at(-1)?.authorization, "Bearer stub-token");
    assert.match(result.stdout, /^done\s+40 \(5 unhandled\)$/m);
    assert.match(result.stdout, /^filtered\s+4$/m);
    assert.match(result.stdout, /^oldest waiting: 2 min 5 s$/m);
    assert.match(result.stdout, /^github\s+0\s+0\s+10\s+0\s+0\nstripe\s+2\s+1\s+30\s+3\s+4$/m);
  });

  it("prints the API's JSON unchanged with --json", async () => {
    answer = [200, JSON.stringify(STATS)];
    const result = await run(["status", "--json"]);
    assert.deepEqual(JSON.parse(result.stdout), STATS);
  });

  it("prefers --url and --token over the environment", async () => {
    answer = [200, JSON.stringify(STATS)];
    const result = await run(["status", "--url", `${url}/`, "--token", "flag-token"], { INBOX_URL: "http://127.0.0.1:9", INBOX_ADMIN_TOKEN: "env-token" });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(requests.at(-1)?.authorization, "Bearer flag-token");
  });

  it("passes list filters as query parameters and prints the next page's command", async () => {
    answer = [200, JSON.stringify({ deliveries: [{ source: "stripe", id: "evt_1", eventType: "x", status: "failed", attempts: 2, error: "boom\nline two", handled: null, receivedAt: "t", updatedAt: "t" }], nextCursor: "abc" })];
    const result = await run(["list", "--status", "failed", "--source", "stripe", "--limit", "1"]);
    assert.equal(requests.at(-1)?.url, "/admin/deliveries?status=failed&source=stripe&limit=1");
    assert.match(result.stdout, /evt_1\s+x\s+failed\s+2\s+boom line two$/m);
    assert.match(result.stdout, /more: webhook-inbox list --cursor abc --status failed --source stripe$/);
  });

  it("passes the event type and time filters to list and to replay --failed", async () => {
    answer = [200, JSON.stringify({ deliveries: [], nextCursor: null })];
    await run(["list", "--type", "invoice.paid", "--since", "2026-12-03T00:00:00Z", "--until", "2026-12-04T00:00:00Z", "--unhandled"]);
    assert.equal(requests.at(-1)?.url, "/admin/deliveries?eventType=invoice.paid&since=2026-12-03T00%3A00%3A00Z&until=2026-12-04T00%3A00%3A00Z&unhandled=true");
    answer = [200, JSON.stringify({ replayed: 1, remaining: 0 })];
    const result = await run(["replay", "--failed", "--source", "stripe", "--type", "invoice.paid"]);
    assert.deepEqual(JSON.parse(requests.at(-1)?.body ?? "{}"), { status: "failed", source: "stripe", eventType: "invoice.paid", limit: 100 });
    assert.equal(result.stdout, "replayed 1 failed delivery of stripe (eventType invoice.paid): back on the queue, results pending (webhook-inbox list --status failed shows any that fail again)");
  });

  it("shows a delivery's attempt history and request headers before its body", async () => {
    answer = [
      200,
      JSON.stringify({
        source: "stripe",
        id: "evt_1",
        eventType: "invoice.paid",
        status: "done",
        attempts: 2,
        error: null,
        handled: true,
        receivedAt: "2026-12-04T00:00:00.000Z",
        updatedAt: "2026-12-04T00:00:05.000Z",
        body: { bytes: 2, text: "{}", base64: "e30=" },
        headers: [["stripe-signature", "t=1,v1=ab"]],
        attemptLog: [
          { attempt: 1, at: "2026-12-04T00:00:00.100Z", ms: 31, outcome: "retry", error: "Error: upstream 503" },
          { attempt: null, at: "2026-12-04T00:00:02.000Z", ms: 5, outcome: "deferred", error: "the forward destination has 10 requests in flight already (not counted)", count: 12 },
          { attempt: 2, at: "2026-12-04T00:00:04.000Z", ms: 12, outcome: "done", error: null },
        ],
      }),
    ];
    const result = await run(["show", "stripe", "evt_1"]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^1\s+2026-12-04T00:00:00\.100Z\s+31 ms\s+retry\s+Error: upstream 503$/m);
    assert.match(result.stdout, /^-\s+2026-12-04T00:00:02\.000Z\s+5 ms\s+deferred ×12\s+the forward destination has 10 requests in flight already \(not counted\)$/m);
    assert.match(result.stdout, /^2\s+2026-12-04T00:00:04\.000Z\s+12 ms\s+done\s+-$/m);
    assert.match(result.stdout, /^stripe-signature: t=1,v1=ab$/m);
    assert.ok(result.stdout.indexOf("OUTCOME") < result.stdout.indexOf("stripe-signature:") && result.stdout.indexOf("stripe-signature:") < result.stdout.lastIndexOf("{}"));
  });

  it("shows duplicates, a failed delivery's handler as failed, and the runs after a replay by round", async () => {
    answer = [
      200,
      JSON.stringify({
        source: "stripe", id: "evt_2", eventType: "x", status: "failed", attempts: 1, error: "boom", handled: null,
        receivedAt: "t", updatedAt: "t", duplicates: 2, lastDuplicateAt: "2026-12-04T00:00:09.000Z", body: null, headers: null,
        attemptLog: [
          { attempt: 1, at: "a", ms: 1, outcome: "failed", error: "boom" },
          { attempt: null, at: "b", ms: null, outcome: "replayed", error: null },
          { attempt: 1, at: "c", ms: 1, outcome: "failed", error: "boom" },
        ],
      }),
    ];
    const result = await run(["show", "stripe", "evt_2"]);
    assert.match(result.stdout, /^handled\s+no \(its handler failed\)$/m);
    assert.match(result.stdout, /^duplicates\s+2 \(the last at 2026-12-04T00:00:09\.000Z\)$/m);
    assert.deepEqual([...result.stdout.matchAll(/^(1|replay 1|1 after replay 1)\s+[abc]\s/gm)].map((match) => match[1]), ["1", "replay 1", "1 after replay 1"]);
  });

  it("escapes source and id in the path of show and replay", async () => {
    answer = [202, JSON.stringify({ status: "replayed", source: "s", id: "a/b c" })];
    await run(["replay", "s", "a/b c", "--force"]);
    assert.equal(requests.at(-1)?.url, "/admin/deliveries/s/a%2Fb%20c/replay?force=true");
    assert.equal(requests.at(-1)?.method, "POST");
  });

  it("replays failed deliveries in calls of 100 until none remain", async () => {
    const remaining = [150, 50, 0];
    answer = () => [200, JSON.stringify({ replayed: 100 - (remaining.length === 1 ? 50 : 0), remaining: remaining.shift() })];
    const before = requests.length;
    const result = await run(["replay", "--failed", "--source", "stripe"]);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(requests.slice(before).map((request) => JSON.parse(request.body)), [
      { status: "failed", source: "stripe", limit: 100 },
      { status: "failed", source: "stripe", limit: 100 },
      { status: "failed", source: "stripe", limit: 50 },
    ]);
    assert.equal(result.stdout, "replayed 250 failed deliveries of stripe: back on the queue, results pending (webhook-inbox list --status failed shows any that fail again)");
  });

  it("replays no more than were failed at the start, even if some fail again meanwhile", async () => {
    answer = [200, JSON.stringify({ replayed: 2, remaining: 1 })];
    const before = requests.length;
    const result = await run(["replay", "--failed"]);
    // Budget 3: 2 in the first call, at most 1 in the second, then stop.
    assert.deepEqual(requests.slice(before).map((request) => JSON.parse(request.body).limit), [100, 1]);
    assert.equal(result.code, 0);
  });

  for (const [status, body, expected] of [
    [401, { error: "unauthorized", message: "x" }, /^webhook-inbox: the admin token was refused by .* \(401\): check INBOX_ADMIN_TOKEN or --token$/],
    [503, { error: "admin_disabled", message: "x" }, /^webhook-inbox: the admin API of .* is disabled \(503\): set the ADMIN_TOKEN secret on the worker$/],
    [404, { error: "not_found", message: "no delivery s/i" }, /^webhook-inbox: no delivery s\/i \(404 not_found\)$/],
    [400, { error: "bad_request", message: "limit: too big" }, /^webhook-inbox: limit: too big \(400 bad_request\)$/],
  ]) {
    it(`exits 1 with one line on stderr for a ${status} ${body.error}`, async () => {
      answer = [status, JSON.stringify(body)];
      const result = await run(["show", "s", "i"]);
      assert.equal(result.code, 1);
      assert.equal(result.stdout, "");
      assert.match(result.stderr, expected);
    });
  }

  it("exits 1 when the URL answers something that is not the inbox", async () => {
    answer = [200, "<html>hello</html>"];
    const result = await run(["status"]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^webhook-inbox: unexpected answer from .*: HTTP 200, not JSON/);
  });

  for (const [args, env, expected] of [
    [[], {}, /no command given/],
    [["frob"], {}, /unknown command "frob"/],
    [["status"], { INBOX_ADMIN_TOKEN: undefined }, /no admin token: set INBOX_ADMIN_TOKEN or pass --token/],
    [["show", "stripe"], {}, /expected: webhook-inbox show <source> <id>/],
    [["list", "--status", "lost"], {}, /--status must be one of received, processing, done, failed/],
    [["list", "--bogus"], {}, /Unknown option '--bogus'/],
    [["status", "--url", "localhost:8787"], {}, /not an http\(s\) URL: localhost:8787/],
  ]) {
    it(`exits 2 for bad usage: ${JSON.stringify(args)}`, async () => {
      const before = requests.length;
      const result = await run(args, env);
      assert.equal(result.code, 2);
      assert.match(result.stderr, expected);
      assert.equal(result.stderr.split("\n").length, 1);
      assert.equal(requests.length, before, "nothing was sent");
    });
  }

  it("on a local inbox with no INBOX_ADMIN_TOKEN, uses .dev.vars's ADMIN_TOKEN, as npm run dev runs it", async () => {
    const root = mkdtempSync(join(tmpdir(), "webhook-inbox-cli-"));
    writeFileSync(join(root, ".dev.vars"), "STRIPE_WEBHOOK_SECRET=x\nADMIN_TOKEN=token-from-dev-vars\n");
    answer = [200, JSON.stringify(STATS)];
    const result = await run(["status"], { INBOX_ADMIN_TOKEN: undefined }, root);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(requests.at(-1)?.authorization, "Bearer token-from-dev-vars");
  });

  it("never sends .dev.vars's token to a remote inbox", async () => {
    const root = mkdtempSync(join(tmpdir(), "webhook-inbox-cli-"));
    writeFileSync(join(root, ".dev.vars"), "ADMIN_TOKEN=token-from-dev-vars\n");
    const before = requests.length;
    const result = await run(["status"], { INBOX_ADMIN_TOKEN: undefined, INBOX_URL: "https://inbox.example.com" }, root);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /no admin token/);
    assert.equal(requests.length, before);
  });

  it("finds the port npm run dev announced, when INBOX_URL is not set", async () => {
    const root = mkdtempSync(join(tmpdir(), "webhook-inbox-cli-"));
    const { announceDevUrl } = await import("../../src/cli/lib/local-inbox.mjs");
    const remove = announceDevUrl(root, url);
    answer = [200, JSON.stringify(STATS)];
    const result = await run(["status"], { INBOX_URL: undefined }, root);
    remove();
    assert.equal(result.code, 0, result.stderr);
    assert.equal(requests.at(-1)?.url, "/admin/stats");
  });

  it("exits quietly when its reader stops early (show … | head), instead of crashing with EPIPE", async () => {
    const big = { source: "s", id: "i", eventType: null, status: "done", attempts: 1, error: null, handled: true, receivedAt: "t", updatedAt: "t", body: { bytes: 1, text: JSON.stringify({ lines: Array.from({ length: 20_000 }, (_, n) => `line ${n}`) }), base64: "" } };
    answer = [200, JSON.stringify(big)];
    const result = await new Promise((resolve) =>
      execFile("/bin/sh", ["-c", `"${process.execPath}" "${CLI}" show s i | head -n 2; echo "status=\${PIPESTATUS:-done}"`], { env: { ...process.env, INBOX_URL: url, INBOX_ADMIN_TOKEN: "t" } }, (error, stdout, stderr) => resolve({ error, stdout, stderr })),
    );
    assert.equal(result.error, null);
    assert.equal(result.stdout.split("\n")[0], "FIELD       VALUE");
    assert.doesNotMatch(result.stderr, /EPIPE|Error|throw/, result.stderr);
  });

  it("lists the sources with a secret set, each with its security grade, its gaps and what the grades mean", async () => {
    answer = [200, JSON.stringify(SOURCES_ANSWER)];
    const result = await run(["sources"]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(requests.at(-1)?.url, "/admin/sources");
    assert.match(result.stdout, /^SOURCE\s+PROVIDER\s+GRADE\s+GAPS\s+SECRET\s+DEDUP KEY$/m);
    assert.match(result.stdout, /^stripe\s+stripe\s+strong\s+-\s+set\s+body `id`$/m);
    assert.match(result.stdout, /^github\s+github\s+fair\s+no timestamp, id unsigned\s+set\s+X-GitHub-Delivery$/m);
    assert.match(result.stdout, /^gitlab\s+gitlab\s+weak\s+body unsigned, no timestamp, id unsigned, secret in clear\s+set\s+Idempotency-Key$/m);
    assert.match(result.stdout, /^adyen\s+adyen\s+fair\s+body partly signed, no timestamp\s+set/m);
    // Not configured here: left out, and counted.
    assert.doesNotMatch(result.stdout, /^paypal/m);
    assert.match(result.stdout, /^1 more in the catalogue without a secret set \(--all lists them\)$/m);
    // What the grades mean, and where it is explained at length.
    assert.match(result.stdout, /^  weak {4}the body is not signed or the secret travels with every request/m);
    assert.match(result.stdout, /docs\/providers\.md, "Security grade"/);
  });

  it("lists the whole catalogue with --all, the unconfigured ones marked", async () => {
    answer = [200, JSON.stringify(SOURCES_ANSWER)];
    const result = await run(["sources", "--all"]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^paypal\s+paypal\s+strong\s+-\s+not set\s+body `id`$/m);
    assert.doesNotMatch(result.stdout, /more in the catalogue/);
  });

  it("prints a source's name from the inbox with its control characters replaced, never a terminal escape", async () => {
    answer = [200, JSON.stringify({ sources: [{ ...SOURCES_ANSWER.sources[0], source: "evil\u001b]0;pwned\u0007\u001b[2J" }] })];
    const result = await run(["sources"]);
    assert.equal(result.code, 0, result.stderr);
    assert.doesNotMatch(result.stdout, /[\u0000-\u0009\u000b-\u001f\u007f]/);
    assert.match(result.stdout, /^evil\?\]0;pwned\?\?\[2J\s+stripe\s+strong/m);
  });

  it("prints the sources' JSON unchanged with --json, and points to them from status", async () => {
    answer = [200, JSON.stringify(SOURCES_ANSWER)];
    const json = await run(["sources", "--json"]);
    assert.deepEqual(JSON.parse(json.stdout), SOURCES_ANSWER);
    answer = [200, JSON.stringify(STATS)];
    const status = await run(["status"]);
    assert.match(status.stdout, /security grade .*: webhook-inbox sources$/m);
  });

  it("prints help and exits 0 for --help, with no token needed", async () => {
    const result = await run(["--help"], { INBOX_ADMIN_TOKEN: "" });
    assert.equal(result.code, 0);
    assert.match(result.stdout, /^Usage: webhook-inbox <command>/);
  });

  it("sets the process exit code when run as a program", async () => {
    answer = [401, JSON.stringify({ error: "unauthorized", message: "x" })];
    const code = await new Promise((resolve) =>
      execFile(process.execPath, [CLI, "status"], { env: { ...process.env, INBOX_URL: url, INBOX_ADMIN_TOKEN: "wrong" } }, (error) => resolve(error?.code ?? 0)),
    );
    assert.equal(code, 1);
  });
});
