// The private Postgres server of `npm run dev:postgres` and the Postgres tests
// (src/cli/lib/local-postgres.mjs), started for real: Debian's binaries, a temporary folder.
// Without Postgres on the machine these are skipped, except on CI (CI=true), where they fail.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import pg from "pg";
import { findPostgresBinaries, PostgresNotInstalledError, startLocalPostgres } from "../../src/cli/lib/local-postgres.mjs";
import { skipWithoutPostgres } from "../helpers/postgres-available.mjs";

const LIBRARY = new URL("../../src/cli/lib/local-postgres.mjs", import.meta.url).href;

const skip = skipWithoutPostgres;

const folders = [];
function temporaryDir() {
  const dir = mkdtempSync(join(tmpdir(), "webhook-inbox-local-pg-"));
  folders.push(dir);
  return dir;
}
after(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

/** @param {string} url @param {string} text */
async function query(url, text) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

/** @param {string} url */
async function refused(url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return false;
  } catch {
    return true;
  }
}

describe("findPostgresBinaries", () => {
  it("says to install the postgresql package when there is none", () => {
    assert.throws(() => findPostgresBinaries({ debianRoot: "/nonexistent", path: "" }), (error) => {
      assert.ok(error instanceof PostgresNotInstalledError);
      assert.match(error.message, /apt-get install postgresql/);
      return true;
    });
  });
});

describe("startLocalPostgres", { skip }, () => {
  it("serves the database it creates on 127.0.0.1, and nothing once stopped", async () => {
    const server = await startLocalPostgres({ dir: temporaryDir(), durable: false });
    try {
      const [row] = await query(server.url, "SELECT current_database() AS database, host(inet_server_addr()) AS address");
      assert.deepEqual(row, { database: "webhook_inbox", address: "127.0.0.1" });
      assert.match(server.url, /^postgres:\/\/postgres:[^@]+@127\.0\.0\.1:\d+\/webhook_inbox$/);
    } finally {
      await server.stop();
    }
    assert.ok(await refused(server.url), "the server is gone after stop()");
  });

  it("keeps its data in its folder across a restart, creating the folders above it", async () => {
    const base = temporaryDir();
    chmodSync(base, 0o755); // as a checkout's .wrangler is; mkdtemp makes it 0700
    const dir = join(base, "state", "postgres");
    const first = await startLocalPostgres({ dir, durable: false });
    await query(first.url, "CREATE TABLE kept (id int); INSERT INTO kept VALUES (7)");
    await first.stop();
    const second = await startLocalPostgres({ dir, durable: false });
    try {
      assert.deepEqual(await query(second.url, "SELECT id FROM kept"), [{ id: 7 }]);
    } finally {
      await second.stop();
    }
  });

  it("runs the server as an unprivileged user when started by root", { skip: process.getuid?.() !== 0 ? "not root" : false }, async () => {
    const dir = temporaryDir();
    const server = await startLocalPostgres({ dir, durable: false });
    await server.stop();
    assert.notEqual(statSync(join(dir, "data")).uid, 0);
  });

  it("goes down with the process that started it, even when that one is killed outright", { skip: process.platform !== "linux" ? "setpriv is Linux's" : false }, async () => {
    const dir = temporaryDir();
    const script = `const s = await (await import(${JSON.stringify(LIBRARY)})).startLocalPostgres({ dir: ${JSON.stringify(dir)}, durable: false }); console.log(s.url); setInterval(() => {}, 1000);`;
    const holder = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    const url = await new Promise((resolve, reject) => {
      holder.stdout.once("data", (chunk) => resolve(String(chunk).trim()));
      holder.once("exit", (code) => reject(new Error(`the holder exited (${code}) before starting the server`)));
    });
    assert.deepEqual(await query(url, "SELECT 1 AS one"), [{ one: 1 }]);
    holder.kill("SIGKILL");
    const deadline = Date.now() + 10_000;
    while (!(await refused(url))) {
      assert.ok(Date.now() < deadline, "the server still answers 10 s after its parent was killed");
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });
});
