// `npm run dev` (src/cli/dev.mjs): preparing .dev.vars, and the real thing started from a copy of
// the checkout, once without a .dev.vars and once with an old one, until /health answers.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { parseDotenv, prepareDevVars, secretsThatLookLikeLists } from "../../src/cli/lib/dev-vars.mjs";
import { freePort } from "../e2e/harness.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const EXAMPLE = readFileSync(join(ROOT, ".dev.vars.example"), "utf8");
/** How long one `npm run dev` may take to answer /health (migrations, bundling, workerd start). */
const START_TIMEOUT_MS = 120_000;

/** An old .dev.vars: the user's own values, some sources missing, a secret in the old list form. */
const OLD_DEV_VARS = [
  "# mine",
  "STRIPE_WEBHOOK_SECRET=whsec_my_own_stripe_secret",
  'GITHUB_WEBHOOK_SECRET="new-gh-secret old-gh-secret"',
  "ADMIN_TOKEN=my-own-admin-token",
].join("\n");

const temporaryDirs = [];
function temporaryDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temporaryDirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of temporaryDirs) rmSync(dir, { recursive: true, force: true });
});

/** A directory with just the example, as a fresh checkout has it. */
function checkoutWithExample() {
  const dir = temporaryDir("webhook-inbox-devvars-");
  writeFileSync(join(dir, ".dev.vars.example"), EXAMPLE);
  return dir;
}

function captured() {
  const lines = { out: [], err: [] };
  return { lines, log: { out: (line) => lines.out.push(line), err: (line) => lines.err.push(line) } };
}

describe("prepareDevVars", () => {
  it("creates .dev.vars as a copy of .dev.vars.example when there is none", () => {
    const dir = checkoutWithExample();
    const { lines, log } = captured();
    assert.deepEqual(prepareDevVars(dir, log), { created: true, added: [], warned: [] });
    assert.equal(readFileSync(join(dir, ".dev.vars"), "utf8"), EXAMPLE);
    assert.match(lines.out.join("\n"), /created \.dev\.vars/);
  });

  it("adds the vars an old .dev.vars lacks and keeps every value the user set", () => {
    const dir = checkoutWithExample();
    writeFileSync(join(dir, ".dev.vars"), OLD_DEV_VARS);
    const result = prepareDevVars(dir, captured().log);
    const merged = parseDotenv(readFileSync(join(dir, ".dev.vars"), "utf8"));
    const example = parseDotenv(EXAMPLE);
    assert.deepEqual(Object.keys(merged).sort(), Object.keys(example).sort());
    assert.equal(merged.STRIPE_WEBHOOK_SECRET, "whsec_my_own_stripe_secret");
    assert.equal(merged.GITHUB_WEBHOOK_SECRET, "new-gh-secret old-gh-secret");
    assert.equal(merged.ADMIN_TOKEN, "my-own-admin-token");
    assert.equal(merged.SHOPIFY_WEBHOOK_SECRET, example.SHOPIFY_WEBHOOK_SECRET);
    assert.ok(result.added.includes("SHOPIFY_WEBHOOK_SECRET") && !result.added.includes("STRIPE_WEBHOOK_SECRET"));
    assert.ok(readFileSync(join(dir, ".dev.vars"), "utf8").startsWith(`${OLD_DEV_VARS}\n`), "the user's lines stay as they were");
  });

  it("adds nothing, a second time", () => {
    const dir = checkoutWithExample();
    writeFileSync(join(dir, ".dev.vars"), OLD_DEV_VARS);
    prepareDevVars(dir, captured().log);
    const once = readFileSync(join(dir, ".dev.vars"), "utf8");
    assert.deepEqual(prepareDevVars(dir, captured().log).added, []);
    assert.equal(readFileSync(join(dir, ".dev.vars"), "utf8"), once);
  });

  it("warns about a webhook secret with a space or comma, naming the var and _PREVIOUS but never the value", () => {
    const dir = checkoutWithExample();
    writeFileSync(join(dir, ".dev.vars"), OLD_DEV_VARS);
    const { lines, log } = captured();
    assert.deepEqual(prepareDevVars(dir, log).warned, ["GITHUB_WEBHOOK_SECRET"]);
    const warning = lines.err.join("\n");
    assert.match(warning, /WARNING: GITHUB_WEBHOOK_SECRET/);
    assert.match(warning, /GITHUB_WEBHOOK_SECRET_PREVIOUS/);
    assert.doesNotMatch(warning + lines.out.join("\n"), /gh-secret/);
  });

  it("flags only <SOURCE>_WEBHOOK_SECRET values holding a space or comma, as wrangler reads them", () => {
    const text = [
      "A_WEBHOOK_SECRET=one,two",
      "B_WEBHOOK_SECRET='one two'",
      "C_WEBHOOK_SECRET=plain # an inline comment is not part of the value",
      "D_WEBHOOK_SECRET_PREVIOUS=one two",
      "ADMIN_TOKEN=one two",
      "# E_WEBHOOK_SECRET=one two",
    ].join("\n");
    assert.deepEqual(secretsThatLookLikeLists(text), ["A_WEBHOOK_SECRET", "B_WEBHOOK_SECRET"]);
  });
});


const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

describe("npm run dev, for real", { timeout: 6 * START_TIMEOUT_MS }, () => {
  /** A checkout-like copy: the committed files wrangler needs, node_modules linked, no .dev.vars. */
  let checkout = "";
  before(() => {
    checkout = temporaryDir("webhook-inbox-dev-");
    for (const entry of ["src", "migrations", "wrangler.toml", "package.json", "tsconfig.json", ".dev.vars.example"]) {
      if (existsSync(join(ROOT, entry))) cpSync(join(ROOT, entry), join(checkout, entry), { recursive: true });
    }
    symlinkSync(join(ROOT, "node_modules"), join(checkout, "node_modules"), "dir");
  });

  /**
   * Runs the copy's `src/cli/dev.mjs` on a free port in a process group of its own, with its own
   * state, dev registry and temp files; waits for /health, hands `use` the base URL, and always
   * SIGKILLs the whole group (dev.mjs, wrangler, workerd) at the end.
   */
  async function withDev(use) {
    const state = temporaryDir("webhook-inbox-dev-state-");
    mkdirSync(join(state, "tmp"));
    const [port, inspectorPort] = [await freePort(), await freePort()];
    const args = ["--port", String(port), "--ip", "127.0.0.1", "--inspector-port", String(inspectorPort)];
    args.push("--persist-to", join(state, "d1"), "--show-interactive-dev-session=false", "--log-level", "warn");
    const env = { ...process.env, CI: "true", WRANGLER_REGISTRY_PATH: join(state, "registry"), TMPDIR: join(state, "tmp"), WRANGLER_SEND_METRICS: "false" };
    const child = spawn(process.execPath, [join(checkout, "src", "cli", "dev.mjs"), ...args], { cwd: checkout, detached: true, stdio: ["ignore", "pipe", "pipe"], env });
    const output = { out: "", err: "" };
    child.stdout.on("data", (chunk) => (output.out += chunk));
    child.stderr.on("data", (chunk) => (output.err += chunk));
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const url = `http://127.0.0.1:${port}`;
    try {
      const deadline = Date.now() + START_TIMEOUT_MS;
      for (;;) {
        assert.equal(child.exitCode, null, `npm run dev exited early:\n${output.out}\n${output.err}`);
        const ok = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) }).then((response) => response.status === 200, () => false);
        if (ok) break;
        assert.ok(Date.now() < deadline, `no 200 from /health within ${START_TIMEOUT_MS} ms:\n${output.out}\n${output.err}`);
        await sleep(250);
      }
      await use(url, output);
    } finally {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
      await exited;
    }
  }

  /** The admin API's answer to `token`: 200 only if it is the ADMIN_TOKEN the runtime loaded. */
  const statsStatus = (url, token) => fetch(`${url}/admin/stats`, { headers: { authorization: `Bearer ${token}` } }).then((response) => response.status);

  /** Polls `check` every 250 ms until it is truthy or `timeoutMs` passes. */
  async function eventually(check, timeoutMs, what) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await check();
      if (value) return value;
      assert.ok(Date.now() < deadline, `${what} within ${timeoutMs} ms`);
      await sleep(250);
    }
  }

  /** Runs the checkout's CLI with no INBOX_* in its environment, as a first user would. */
  function cliInCheckout(args) {
    const env = { ...process.env };
    delete env.INBOX_URL;
    delete env.INBOX_ADMIN_TOKEN;
    return new Promise((resolve) =>
      execFile(process.execPath, [join(checkout, "src", "cli", "webhook-inbox.mjs"), ...args], { cwd: checkout, env, timeout: 30_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? error.code : 0, stdout, stderr }),
      ),
    );
  }

  it("in a fresh checkout: creates .dev.vars from the example, and the inbox runs with its values", async () => {
    assert.equal(existsSync(join(checkout, ".dev.vars")), false);
    await withDev(async (url, output) => {
      assert.equal(readFileSync(join(checkout, ".dev.vars"), "utf8"), EXAMPLE);
      assert.match(output.out, /created \.dev\.vars/);
      assert.equal(await statsStatus(url, parseDotenv(EXAMPLE).ADMIN_TOKEN), 200);
    });
  });

  it("prints the migrations as one line, then one short banner: the URL, the dashboard, the demo, the CLI", async () => {
    await withDev(async (url, output) => {
      await eventually(() => output.out.includes("webhook-inbox is running at"), 30_000, "the banner");
      const beforeBanner = output.out.slice(0, output.out.indexOf("webhook-inbox is running at"));
      // wrangler's migrations table (drawn once per migration applied) is not shown.
      assert.doesNotMatch(output.out, /[┌│└]/);
      assert.match(beforeBanner, /^D1 \(local\): (applied \d+ migrations|migrations up to date)$/m);
      assert.ok(beforeBanner.split("\n").length < 40, `${beforeBanner.split("\n").length} lines before the banner:\n${beforeBanner}`);
      const banner = output.out.slice(output.out.indexOf("webhook-inbox is running at"));
      assert.match(banner, new RegExp(`running at ${url.replace(/[.]/g, "\\.")}`));
      assert.match(banner, new RegExp(`${url.replace(/[.]/g, "\\.")}/ui`));
      assert.match(banner, /npx webhook-inbox send stripe/);
      assert.match(banner, /npm run demo/);
      assert.match(banner, /--port 8788/);
    });
  });

  it("the CLI reaches it with no exports: the URL it announced and ADMIN_TOKEN from .dev.vars (the demo's closing hint works as printed)", async () => {
    await withDev(async (_url, output) => {
      await eventually(() => output.out.includes("webhook-inbox is running at"), 30_000, "the banner");
      const result = await cliInCheckout(["list", "--status", "failed"]);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, "no deliveries\n");
    });
  });

  it("restarts wrangler dev when .dev.vars changes, saying so, and the inbox then uses the new values", async () => {
    await withDev(async (url, output) => {
      await eventually(() => output.out.includes("webhook-inbox is running at"), 30_000, "the banner");
      const path = join(checkout, ".dev.vars");
      writeFileSync(path, readFileSync(path, "utf8").replace(/^ADMIN_TOKEN=.*$/m, "ADMIN_TOKEN=changed-while-running"));
      await eventually(() => /\.dev\.vars changed: restarting wrangler dev/.test(output.err), 10_000, "the warning");
      await eventually(() => statsStatus(url, "changed-while-running").then((status) => status === 200, () => false), START_TIMEOUT_MS, "the new token accepted");
      assert.equal(await statsStatus(url, parseDotenv(EXAMPLE).ADMIN_TOKEN), 401);
      await eventually(() => output.out.includes("restarted with the new .dev.vars"), 30_000, "the restart line");
    });
  });

  it("with an old .dev.vars: adds what it lacks, keeps the user's values, warns about the list-like secret", async () => {
    writeFileSync(join(checkout, ".dev.vars"), OLD_DEV_VARS);
    await withDev(async (url, output) => {
      const merged = parseDotenv(readFileSync(join(checkout, ".dev.vars"), "utf8"));
      assert.equal(merged.ADMIN_TOKEN, "my-own-admin-token");
      assert.equal(merged.SHOPIFY_WEBHOOK_SECRET, parseDotenv(EXAMPLE).SHOPIFY_WEBHOOK_SECRET);
      assert.match(output.out, /added to \.dev\.vars: .*SHOPIFY_WEBHOOK_SECRET/);
      assert.match(output.err, /WARNING: GITHUB_WEBHOOK_SECRET .*space or a comma/);
      assert.doesNotMatch(output.out + output.err, /gh-secret/);
      // The runtime reads the user's token, not the example's.
      assert.equal(await statsStatus(url, "my-own-admin-token"), 200);
      assert.equal(await statsStatus(url, parseDotenv(EXAMPLE).ADMIN_TOKEN), 401);
    });
  });
});
