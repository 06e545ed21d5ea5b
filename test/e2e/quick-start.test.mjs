// The README's five-minute tour, driven as written: its fenced `sh` commands and its `diff`, in order,
// in a fresh copy of the repository (the committed files, node_modules linked), with a .dev.vars of
// its own, against the `npm run dev` the tour starts. Only what a test machine must change is
// changed: `npm ci` is not run (node_modules is linked), and `npm run dev` gets a free port, its own
// state and no inspector port clash; every other command runs verbatim in a shell, finding the
// inbox as a user's would (the URL `npm run dev` announced, ADMIN_TOKEN from .dev.vars). Between
// the steps it waits for what the tour says happens "a moment later", and checks each step's
// outcome: the sends answered, the dashboard's counts equal to the list's, the replay ending done,
// the duplicate recognised.
import assert from "node:assert/strict";
import { execFile, execFileSync, spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { freePort, ROOT, waitFor } from "./harness.mjs";

/** The tour: the README between its heading and the next section. */
const README = readFileSync(join(ROOT, "README.md"), "utf8");
const TOUR = README.slice(README.indexOf("## A five-minute tour"), README.indexOf("\n## ", README.indexOf("## A five-minute tour") + 1));
/** Its fenced blocks in order: `sh` (commands), `diff` (an edit), and unlabelled ones (what is printed). */
const BLOCKS = [...TOUR.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((match) => ({ lang: match[1], text: match[2] }));
const COMMANDS = BLOCKS.filter((block) => block.lang === "sh").map((block) => block.text.trim().split("\n"));
const DIFFS = BLOCKS.filter((block) => block.lang === "diff").map((block) => block.text);

/** This test's own secrets: `send` must sign with them, from .dev.vars, not with the example's. */
const DEV_VARS = {
  ...Object.fromEntries(
    readFileSync(join(ROOT, ".dev.vars.example"), "utf8")
      .split("\n")
      .filter((line) => /^[A-Z_]+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
  ),
  STRIPE_WEBHOOK_SECRET: "whsec_quick_start_own_secret",
  ADMIN_TOKEN: "quick-start-own-admin-token",
};

const dirs = [];
let clone = "";
let state = "";
let dev = null;
let devOutput = "";
let url = "";

before(async () => {
  clone = mkdtempSync(join(tmpdir(), "webhook-inbox-quick-start-"));
  state = mkdtempSync(join(tmpdir(), "webhook-inbox-quick-start-state-"));
  dirs.push(clone, state);
  // A fresh clone: the files git tracks, as they are in this checkout.
  for (const file of execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" }).split("\0").filter(Boolean)) {
    mkdirSync(dirname(join(clone, file)), { recursive: true });
    cpSync(join(ROOT, file), join(clone, file));
  }
  symlinkSync(join(ROOT, "node_modules"), join(clone, "node_modules"), "dir");
  writeFileSync(join(clone, ".dev.vars"), Object.entries(DEV_VARS).map(([name, value]) => `${name}=${value}`).join("\n"));
  mkdirSync(join(state, "tmp"));
});

after(async () => {
  if (dev) {
    try {
      process.kill(-dev.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The environment of the user's second terminal: Node 22 and the project's binaries first, no INBOX_* exports. */
function userEnv() {
  const env = { ...process.env, PATH: `${join(clone, "node_modules", ".bin")}:${dirname(process.execPath)}:${process.env.PATH}`, WRANGLER_SEND_METRICS: "false" };
  delete env.INBOX_URL;
  delete env.INBOX_ADMIN_TOKEN;
  return env;
}

/** Runs one line of the tour in a shell in the clone; resolves with its output, whatever the exit code. */
function shell(line) {
  return new Promise((resolve) => {
    execFile("/bin/sh", ["-c", line], { cwd: clone, env: userEnv(), timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ line, code: error ? (typeof error.code === "number" ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

/** Runs the lines of a `sh` block in order, each expected to succeed. */
async function runBlock(lines) {
  const results = [];
  for (const line of lines) {
    if (line.startsWith("#") || line.trim() === "") continue;
    const result = await shell(line);
    assert.equal(result.code, 0, `\`${line}\` exited ${result.code}:\n${result.stdout}\n${result.stderr}\n--- npm run dev:\n${devOutput.slice(-3000)}`);
    results.push(result);
  }
  return results;
}

/** A delivery through the admin API, with the tour's own token. */
async function delivery(id) {
  const response = await fetch(`${url}/admin/deliveries/stripe/${id}`, { headers: { authorization: `Bearer ${DEV_VARS.ADMIN_TOKEN}` } });
  return response.status === 200 ? response.json() : null;
}

/** A dashboard page's HTML, signed in with the tour's token. */
async function dashboard(path) {
  const login = await fetch(`${url}/ui/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: url },
    body: new URLSearchParams({ token: DEV_VARS.ADMIN_TOKEN }),
  });
  assert.equal(login.status, 303, "signed in");
  const cookie = login.headers.get("set-cookie").split(";")[0];
  return (await fetch(`${url}${path}`, { headers: { cookie } })).text();
}

/** The number a dashboard link labelled `label` shows. */
function countOf(html, label) {
  const match = new RegExp(`aria-label="${label.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}">(\\d+)<`).exec(html);
  return match ? Number(match[1]) : undefined;
}

describe("the README's five-minute tour, as written", { timeout: 600_000 }, () => {
  it("has the steps this test drives: run, send, fail, fix and replay, duplicate", () => {
    assert.equal(COMMANDS.length, 5, JSON.stringify(COMMANDS));
    assert.equal(DIFFS.length, 1);
  });

  it("1. npm ci && npm run dev: the inbox runs, with the clone's own .dev.vars", async () => {
    assert.deepEqual(COMMANDS[0], ["npm ci && npm run dev"]);
    // npm ci is not run (node_modules is linked); npm run dev is, with what a test machine needs.
    const port = await freePort();
    const args = ["--port", String(port), "--ip", "127.0.0.1", "--inspector-port", String(await freePort())];
    args.push("--persist-to", join(state, "d1"), "--show-interactive-dev-session=false");
    const env = { ...userEnv(), CI: "true", WRANGLER_REGISTRY_PATH: join(state, "registry"), TMPDIR: join(state, "tmp") };
    dev = spawn("npm", ["run", "dev", "--", ...args], { cwd: clone, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    dev.stdout.on("data", (chunk) => (devOutput = (devOutput + chunk).slice(-50_000)));
    dev.stderr.on("data", (chunk) => (devOutput = (devOutput + chunk).slice(-50_000)));
    url = `http://127.0.0.1:${port}`;
    const banner = await waitFor(() => devOutput.includes("webhook-inbox is running at") || dev.exitCode !== null, { timeoutMs: 180_000, intervalMs: 250 });
    assert.ok(banner && dev.exitCode === null, `npm run dev did not come up:\n${devOutput}`);
  });

  it("2. send stripe: stored, signed with the secret of .dev.vars, and done a moment later", async () => {
    const [send] = await runBlock(COMMANDS[1]);
    assert.match(send.stdout, /^stripe\/evt_tour_1 \(payment_intent\.succeeded\): stored$/m);
    const done = await waitFor(async () => (await delivery("evt_tour_1"))?.status === "done", { timeoutMs: 60_000, intervalMs: 500 });
    assert.ok(done, "evt_tour_1 is done");
  });

  it("3. a payment without an amount fails; the dashboard's counts are the list's", async () => {
    const [send] = await runBlock(COMMANDS[2].slice(0, 1));
    assert.match(send.stdout, /^stripe\/evt_tour_2 \(payment_intent\.succeeded\): stored$/m);
    assert.ok(await waitFor(async () => (await delivery("evt_tour_2"))?.status === "failed", { timeoutMs: 60_000, intervalMs: 500 }), "evt_tour_2 failed");
    const [list] = await runBlock(COMMANDS[2].slice(1));
    assert.match(list.stdout, /^\S+\s+stripe\s+evt_tour_2\s+payment_intent\.succeeded\s+failed\s+1\s+PermanentError: payment_intent\.succeeded has no integer/m);
    // The overview right after: one done, one failed, as the list pages say.
    const overview = await dashboard("/ui");
    assert.equal(countOf(overview, "1 done deliveries of stripe"), 1, "done 1 on the overview");
    assert.equal(countOf(overview, "1 failed deliveries of stripe"), 1, "failed 1 on the overview");
    const failedList = await dashboard("/ui/deliveries?status=failed&source=stripe");
    const doneList = await dashboard("/ui/deliveries?status=done&source=stripe");
    assert.equal([...failedList.matchAll(/href="\/ui\/deliveries\/stripe\/[^"]+"/g)].length, 1);
    assert.equal([...doneList.matchAll(/href="\/ui\/deliveries\/stripe\/[^"]+"/g)].length, 1);
  });

  it("4. the handler fixed as the diff says, the replay ends done", async () => {
    const diff = DIFFS[0].split("\n");
    const file = /^\+\+\+ b\/(.+)$/m.exec(DIFFS[0])?.[1];
    assert.ok(file, "the diff names its file");
    const removed = diff.filter((line) => line.startsWith("-") && !line.startsWith("---")).map((line) => line.slice(1));
    const added = diff.filter((line) => line.startsWith("+") && !line.startsWith("+++")).map((line) => line.slice(1));
    const path = join(clone, file);
    const source = readFileSync(path, "utf8");
    assert.ok(source.includes(`${removed.join("\n")}\n`), `${file} has the lines the diff removes`);
    const before = devOutput.length;
    writeFileSync(path, source.replace(`${removed.join("\n")}\n`, `${added.join("\n")}\n`));
    // wrangler dev rebuilds on save; the replay must meet the new handler.
    assert.ok(await waitFor(() => /Reloading local server|Local server updated|reload/i.test(devOutput.slice(before)), { timeoutMs: 60_000, intervalMs: 250 }), `no reload:\n${devOutput.slice(before)}`);
    assert.ok(await waitFor(() => fetch(`${url}/health`).then((response) => response.ok, () => false), { timeoutMs: 60_000, intervalMs: 250 }));
    const [replay] = await runBlock(COMMANDS[3].slice(0, 1));
    assert.match(replay.stdout, /^replayed stripe\/evt_tour_2/m);
    assert.ok(await waitFor(async () => (await delivery("evt_tour_2"))?.status === "done", { timeoutMs: 60_000, intervalMs: 500 }), "evt_tour_2 done after the replay");
    const [show] = await runBlock(COMMANDS[3].slice(1));
    assert.match(show.stdout, /^status\s+done$/m);
    assert.match(show.stdout, /^1\s+\S+\s+\d+ ms\s+failed\s+PermanentError/m);
    assert.match(show.stdout, /^replay 1\s+\S+\s+-\s+replayed/m);
    assert.match(show.stdout, /^1 after replay 1\s+\S+\s+\d+ ms\s+done/m);
  });

  it("5. the first payment sent again is a duplicate, counted, and nothing runs twice", async () => {
    const [send, show] = await runBlock(COMMANDS[4]);
    assert.match(send.stdout, /^stripe\/evt_tour_1 \(payment_intent\.succeeded\): duplicate$/m);
    assert.match(show.stdout, /^status\s+done$/m);
    assert.match(show.stdout, /^duplicates\s+1 \(the last at \S+\)$/m);
    const detail = await delivery("evt_tour_1");
    assert.equal(detail.attemptLog.length, 1, "the handler ran once");
  });
});
