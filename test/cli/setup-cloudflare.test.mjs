// `npm run setup:cloudflare`: the dry run, the real flow against a stand-in wrangler, and its parsers.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, it } from "node:test";
import { findDatabaseId, parseDatabaseId, resourcesOf, secretNames, setDatabaseId } from "../../src/cli/lib/cloudflare-setup.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SCRIPT = join(ROOT, "src", "cli", "setup-cloudflare.mjs");
const DATABASE_ID = "3f2b9c1e-7a4d-4e8f-9b21-0c5d6e7f8a90";
const work = mkdtempSync(join(tmpdir(), "setup-cloudflare-test-"));
after(() => rmSync(work, { recursive: true, force: true }));

/**
 * A stand-in for wrangler: records each call's arguments, answers as `answers` says
 * (keyed by the first two arguments), else succeeds silently.
 */
function fakeWrangler(name, answers) {
  const path = join(work, `${name}.mjs`);
  const log = join(work, `${name}.log`);
  writeFileSync(
    path,
    `import { appendFileSync } from "node:fs";
const args = process.argv.slice(2);
appendFileSync(${JSON.stringify(log)}, JSON.stringify(args) + "\\n");
const answers = ${JSON.stringify(answers)};
const answer = answers[args.slice(0, 2).join(" ")] ?? answers[args[0]] ?? { code: 0, out: "" };
process.stdout.write(answer.out);
process.exitCode = answer.code;
`,
  );
  return { path, calls: () => readFileSync(log, "utf8").trim().split("\n").filter(Boolean).map((line) => JSON.parse(line)) };
}

function setup(args, wrangler) {
  return new Promise((resolve) => {
    execFile(process.execPath, [SCRIPT, ...args], { cwd: ROOT, env: { ...process.env, WEBHOOK_INBOX_WRANGLER: wrangler } }, (error, stdout, stderr) =>
      resolve({ code: error ? error.code : 0, stdout, stderr }),
    );
  });
}

function configCopy(name) {
  const path = join(work, `${name}.toml`);
  copyFileSync(join(ROOT, "wrangler.toml"), path);
  return path;
}

const CREATED = `✅ Successfully created DB 'webhook-inbox' in region WEUR\nCreated your new D1 database.\n\n[[d1_databases]]\nbinding = "webhook_inbox"\ndatabase_name = "webhook-inbox"\ndatabase_id = "${DATABASE_ID}"\n`;

describe("setup:cloudflare --dry-run", () => {
  it("prints the wrangler commands in order, runs none and changes no file", async () => {
    const wrangler = fakeWrangler("dry", {});
    writeFileSync(join(work, "dry.log"), "");
    const before = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
    const result = await setup(["--dry-run"], wrangler.path);
    assert.equal(result.code, 0, result.stderr);
    const commands = result.stdout.split("\n").filter((line) => line.startsWith("$ npx wrangler")).map((line) => line.slice(2));
    assert.deepEqual(commands.slice(0, 6), [
      "npx wrangler whoami",
      "npx wrangler d1 create webhook-inbox",
      "npx wrangler queues create webhook-deliveries",
      "npx wrangler queues create webhook-deliveries-dlq",
      "npx wrangler d1 migrations apply webhook-inbox --remote",
      "npx wrangler secret put STRIPE_WEBHOOK_SECRET",
    ]);
    assert.ok(commands.includes("npx wrangler secret put ADMIN_TOKEN"));
    assert.equal(commands.at(-1), "npx wrangler deploy");
    assert.match(result.stdout, /database_id in wrangler\.toml set to the id it prints/);
    assert.deepEqual(wrangler.calls(), []);
    assert.equal(readFileSync(join(ROOT, "wrangler.toml"), "utf8"), before);
  });
});

describe("setup:cloudflare against a stand-in wrangler", () => {
  it("creates the database and queues, writes the id into the config and applies the migrations", async () => {
    const config = configCopy("fresh");
    const wrangler = fakeWrangler("fresh", { "d1 create": { code: 0, out: CREATED } });
    const result = await setup(["--config", config, "--location", "weur"], wrangler.path);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(wrangler.calls(), [
      ["whoami"],
      ["d1", "create", "webhook-inbox", "--location", "weur", "--config", config],
      ["queues", "create", "webhook-deliveries", "--config", config],
      ["queues", "create", "webhook-deliveries-dlq", "--config", config],
      ["d1", "migrations", "apply", "webhook-inbox", "--remote", "--config", config],
    ]);
    assert.match(readFileSync(config, "utf8"), new RegExp(`^database_id = "${DATABASE_ID}"$`, "m"));
    assert.match(result.stdout, /database_id placeholder → 3f2b9c1e/);
  });

  it("keeps a database and a queue that already exist, reading the id from d1 list", async () => {
    const config = configCopy("existing");
    const wrangler = fakeWrangler("existing", {
      "d1 create": { code: 1, out: "✘ [ERROR] A database with that name already exists\n" },
      "d1 list": { code: 0, out: JSON.stringify([{ uuid: "00000000-aaaa-bbbb-cccc-000000000001", name: "other" }, { uuid: DATABASE_ID, name: "webhook-inbox" }]) },
      "queues create": { code: 1, out: "✘ [ERROR] A queue with this name already exists [code: 11009]\n" },
    });
    const result = await setup(["--config", config], wrangler.path);
    assert.equal(result.code, 0, result.stderr);
    assert.match(readFileSync(config, "utf8"), new RegExp(`database_id = "${DATABASE_ID}"`));
    assert.match(result.stdout, /D1 database webhook-inbox: already existed, kept/);
    assert.match(result.stdout, /queue webhook-deliveries-dlq: already existed, kept/);
    assert.equal(wrangler.calls().at(-1)?.[0], "d1");
  });

  it("stops with exit code 1 and one line when a step fails", async () => {
    const config = configCopy("failing");
    const wrangler = fakeWrangler("failing", { "d1 create": { code: 0, out: CREATED }, "d1 migrations": { code: 1, out: "boom\n" } });
    const result = await setup(["--config", config], wrangler.path);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^setup:cloudflare: applying the migrations failed \(wrangler exited 1\)/m);
    assert.doesNotMatch(result.stdout, /next, by hand/);
  });

  it("stops before creating anything when wrangler is not logged in", async () => {
    const wrangler = fakeWrangler("logged-out", { whoami: { code: 1, out: "You are not authenticated.\n" } });
    const result = await setup(["--config", configCopy("logged-out")], wrangler.path);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /npx wrangler login/);
    assert.deepEqual(wrangler.calls(), [["whoami"]]);
  });
});

describe("setup:cloudflare's parsers", () => {
  it("reads the worker, database and every queue from the project's wrangler.toml", () => {
    const resources = resourcesOf(readFileSync(join(ROOT, "wrangler.toml"), "utf8"));
    assert.equal(resources.worker, "webhook-inbox");
    assert.equal(resources.database, "webhook-inbox");
    assert.deepEqual(resources.queues, ["webhook-deliveries", "webhook-deliveries-dlq"]);
  });

  it("names one secret per configured source plus ADMIN_TOKEN, skipping commented-out sources", () => {
    const names = secretNames("export const SOURCES = {\n  stripe: stripe(),\n  \"my-shop\": shopify(),\n  // acme: hmac({\n  //   header: \"X\",\n  // }),\n};\n");
    assert.deepEqual(names, ["STRIPE_WEBHOOK_SECRET", "MY_SHOP_WEBHOOK_SECRET", "ADMIN_TOKEN"]);
    assert.ok(secretNames(readFileSync(join(ROOT, "src", "sources.ts"), "utf8")).includes("STRIPE_WEBHOOK_SECRET"));
  });

  it("finds the database id in TOML and JSON snippets, and in d1 list output", () => {
    assert.equal(parseDatabaseId(CREATED), DATABASE_ID);
    assert.equal(parseDatabaseId(`{ "d1_databases": [{ "database_id": "${DATABASE_ID}" }] }`), DATABASE_ID);
    assert.equal(parseDatabaseId("no id here"), null);
    assert.equal(findDatabaseId(JSON.stringify([{ uuid: DATABASE_ID, name: "webhook-inbox" }]), "webhook-inbox"), DATABASE_ID);
    assert.equal(findDatabaseId("not json", "webhook-inbox"), null);
  });

  it("changes only the database_id line of the config", () => {
    const toml = 'name = "x"\n[[d1_databases]]\ndatabase_name = "x"\ndatabase_id = "00000000-0000-0000-0000-000000000000"\n';
    assert.equal(setDatabaseId(toml, DATABASE_ID), toml.replace("00000000-0000-0000-0000-000000000000", DATABASE_ID));
  });
});
