/**
 * The soak's private Postgres server: started as the e2e suite starts its own (durable, on
 * 127.0.0.1, src/cli/lib/local-postgres.mjs), migrated, and crashable: `crash()` is
 * `pg_ctl stop -m immediate` on its data directory (no checkpoint, no clean shutdown: the next
 * start replays the WAL), `restart()` is `pg_ctl start` with the very options it ran with (its
 * `postmaster.opts`, so the same port and the inbox's connection string stays valid).
 *
 * A server started by `pg_ctl start` is no child of this process: `stop()` (and `stopNow()`, for
 * an exit handler) stop it with `pg_ctl stop` whenever its data directory holds a postmaster.pid.
 */
import { execFile, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { findPostgresBinaries, startLocalPostgres } from "../../src/cli/lib/local-postgres.mjs";
import { applyPostgresMigrations, POSTGRES_MIGRATIONS_DIR } from "../../src/cli/lib/postgres-migrations.mjs";
import { ROOT } from "../e2e/harness.mjs";

const execFileAsync = promisify(execFile);

/** Starts a private durable server with a migrated database `soak`. */
export async function startSoakPostgres() {
  const dir = mkdtempSync(join(tmpdir(), "webhook-inbox-soak-postgres-"));
  // Durable (fsync on): the soak crashes the server, and a committed row must survive that.
  const server = await startLocalPostgres({ dir, database: "soak", durable: true });
  await applyPostgresMigrations({ databaseUrl: server.url, dir: join(ROOT, POSTGRES_MIGRATIONS_DIR) });
  return new SoakPostgres(server);
}

class SoakPostgres {
  /** @param {{ url: string, dir: string, stop: () => Promise<void> }} server */
  constructor(server) {
    this.server = server;
    this.url = server.url;
    this.dir = server.dir;
    this.dataDir = join(server.dir, "data");
    this.pgCtl = join(findPostgresBinaries().binDir, "pg_ctl");
    // pg_ctl refuses root, as the server does: run it as the data directory's owner.
    const { uid, gid } = statSync(this.dataDir);
    this.asOwner = process.getuid?.() === 0 ? { uid, gid } : {};
  }

  /** `pg_ctl stop -m immediate`: every server process quits at once, as in a crash. */
  async crash() {
    // Read now: the options the running server was started with.
    this.options = readFileSync(join(this.dataDir, "postmaster.opts"), "utf8");
    await this.#pgCtl(["stop", "-D", this.dataDir, "-m", "immediate", "-w", "-t", "30"]);
  }

  /** `pg_ctl start` with the options of the crashed server; resolves once it accepts connections. */
  async restart() {
    if (!this.options) throw new Error("restart() without a crash() before it");
    // postmaster.opts: the binary, then each argument in double quotes; pg_ctl gives -D itself.
    const args = [...this.options.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((match) => match[1] ?? "");
    const dataFlag = args.indexOf("-D");
    if (dataFlag >= 0) args.splice(dataFlag, 2);
    // pg_ctl runs the server through /bin/sh: quote each argument for it.
    const options = args.map((arg) => `'${arg.replaceAll("'", `'\\''`)}'`).join(" ");
    // A log of its own: postgres.log was opened by this process (root on CI), not by the server's user.
    await this.#pgCtl(["start", "-D", this.dataDir, "-l", join(this.dir, "postgres-restarted.log"), "-w", "-t", "60", "-o", options]);
  }

  /** Stops the server, whoever started it (fast shutdown), and removes its folder unless `keep`. */
  async stop({ keep = false } = {}) {
    if (this.#running()) await this.#pgCtl(["stop", "-D", this.dataDir, "-m", "fast", "-w", "-t", "30"]).catch(() => this.stopNow());
    await this.server.stop();
    if (!keep) rmSync(this.dir, { recursive: true, force: true });
  }

  /** Synchronous, for an exit handler: an immediate stop of whatever server runs on the folder. */
  stopNow() {
    if (this.#running()) spawnSync(this.pgCtl, ["stop", "-D", this.dataDir, "-m", "immediate", "-w", "-t", "10"], { stdio: "ignore", ...this.asOwner });
  }

  #running() {
    return existsSync(join(this.dataDir, "postmaster.pid"));
  }

  async #pgCtl(args) {
    try {
      await execFileAsync(this.pgCtl, args, { ...this.asOwner, cwd: this.dir });
    } catch (error) {
      const failure = /** @type {Error & { stderr?: string, stdout?: string }} */ (error);
      throw new Error(`pg_ctl ${args[0]} failed: ${failure.stderr || failure.stdout || failure.message}`);
    }
  }
}
