/**
 * A private Postgres server for `npm run dev:postgres` and the Postgres tests: the machine's own
 * binaries (Debian's `postgresql` package), a data folder of its own, a free port on 127.0.0.1 and
 * its unix socket in that folder. Nothing system-wide: no service, no /var/run/postgresql, no
 * cluster of the system's.
 *
 * Postgres refuses to run as root (CI does). Then the server runs as the `postgres` user (the
 * package creates it) or, without one, as `nobody`: Node starts it with that uid and gid, and the
 * folder is handed to that user.
 *
 * The server is a child of this process: `stop()` shuts it down (fast shutdown: open connections
 * are closed), so does this process's exit, and on Linux `setpriv --pdeathsig` makes the kernel
 * stop it when this process is killed outright.
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { delimiter, dirname, join, resolve } from "node:path";
import pg from "pg";

/** The folder `npm run dev:postgres` keeps its server in, beside wrangler's local D1 and queues. */
export const DEFAULT_STATE_DIR = ".wrangler/state/postgres";
/** The database the inbox uses on the local server. */
export const DEFAULT_DATABASE = "webhook_inbox";
/** The superuser initdb creates; the connection URL names it. */
const SUPERUSER = "postgres";
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
/** A unix socket path must fit sockaddr_un (108 bytes with its NUL): `<dir>/.s.PGSQL.<port>`. */
const MAX_SOCKET_PATH = 107;

/** No Postgres binaries on this machine: the message says what to install. */
export class PostgresNotInstalledError extends Error {
  constructor() {
    super(
      "Postgres is not installed: no initdb in /usr/lib/postgresql/*/bin or on the PATH. " +
        "Install it: `sudo apt-get install postgresql` (Debian/Ubuntu; the service the package may start is not used).",
    );
    this.name = "PostgresNotInstalledError";
  }
}

/**
 * The folder holding initdb and postgres: Debian's newest /usr/lib/postgresql/<major>/bin, else
 * the folder of the initdb on the PATH (followed through symlinks, since Debian links only the
 * client tools there).
 * @param {{ debianRoot?: string, path?: string }} [where] where to look (tests change it)
 * @returns {{ binDir: string, major: number }}
 * @throws {PostgresNotInstalledError}
 * @example
 * findPostgresBinaries(); // { binDir: "/usr/lib/postgresql/15/bin", major: 15 }
 */
export function findPostgresBinaries({ debianRoot = "/usr/lib/postgresql", path = process.env.PATH ?? "" } = {}) {
  const candidates = [];
  if (existsSync(debianRoot)) {
    const versions = readdirSync(debianRoot).filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((version) => join(debianRoot, version, "bin")));
  }
  for (const folder of path.split(delimiter)) {
    if (folder && existsSync(join(folder, "initdb"))) candidates.push(dirname(realpathSync(join(folder, "initdb"))));
  }
  for (const binDir of candidates) {
    if (!existsSync(join(binDir, "initdb")) || !existsSync(join(binDir, "postgres"))) continue;
    const version = spawnSync(join(binDir, "postgres"), ["--version"], { encoding: "utf8" });
    const major = Number(/\(PostgreSQL\)\s+(\d+)/.exec(version.stdout ?? "")?.[1]);
    if (version.status === 0 && major) return { binDir, major };
  }
  throw new PostgresNotInstalledError();
}

/**
 * Starts a private Postgres server keeping its data in `dir` (created by initdb on first use,
 * reused afterwards), and creates `database` on it if missing.
 * @param {object} options
 * @param {string} options.dir the server's folder: `data/` (the cluster), `password`, `postgres.log`, the socket
 * @param {string} [options.database] the database to create and connect to
 * @param {boolean} [options.durable] false for tests: no fsync (a crash of the machine may lose the data)
 * @returns {Promise<{ url: string, port: number, dir: string, major: number, stop: () => Promise<void> }>}
 * @throws {PostgresNotInstalledError} when no binaries are found
 * @example
 * const server = await startLocalPostgres({ dir: ".wrangler/state/postgres" });
 * server.url; // "postgres://postgres:…@127.0.0.1:40123/webhook_inbox"
 * await server.stop();
 */
export async function startLocalPostgres({ dir, database = DEFAULT_DATABASE, durable = true }) {
  const { binDir, major } = findPostgresBinaries();
  dir = resolve(dir);
  const dataDir = join(dir, "data");
  const passwordFile = join(dir, "password");
  const owner = serverUser();
  // Parents as any folder (the server's user must be able to enter them); the folder itself private.
  mkdirSync(dirname(dir), { recursive: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (owner) {
    assertReachable(dir, owner);
    chownSync(dir, owner.uid, owner.gid);
  }

  if (!existsSync(join(dataDir, "PG_VERSION"))) {
    writeFileSync(passwordFile, randomBytes(18).toString("hex"), { mode: 0o600 });
    if (owner) chownSync(passwordFile, owner.uid, owner.gid);
    const initdb = spawnSync(
      join(binDir, "initdb"),
      ["-D", dataDir, "-U", SUPERUSER, "--auth=scram-sha-256", `--pwfile=${passwordFile}`, "--encoding=UTF8", "--locale=C", ...(durable ? [] : ["--no-sync"])],
      { encoding: "utf8", ...(owner ? { uid: owner.uid, gid: owner.gid } : {}) },
    );
    if (initdb.status !== 0) throw new Error(`initdb failed in ${dataDir}:\n${initdb.stderr || initdb.stdout}`);
  } else {
    const dataMajor = Number(readFileSync(join(dataDir, "PG_VERSION"), "utf8").trim());
    if (dataMajor !== major) {
      throw new Error(`${dataDir} was created by PostgreSQL ${dataMajor}, and the binaries found are ${major} (${binDir}): delete ${dir} to start afresh.`);
    }
    if (!existsSync(passwordFile)) throw new Error(`${passwordFile} is missing, so the server's password is unknown: delete ${dir} to start afresh.`);
  }
  const password = readFileSync(passwordFile, "utf8").trim();

  const port = await freePort();
  const socketDir = `${dir}/.s.PGSQL.${port}`.length <= MAX_SOCKET_PATH ? dir : "";
  const settings = {
    listen_addresses: "127.0.0.1",
    unix_socket_directories: socketDir,
    ...(durable ? {} : { fsync: "off", synchronous_commit: "off", full_page_writes: "off" }),
  };
  const postgresArgs = ["-D", dataDir, "-p", String(port), ...Object.entries(settings).flatMap(([name, value]) => ["-c", `${name}=${value}`])];
  const setpriv = process.platform === "linux" ? onPath("setpriv") : undefined;
  // setpriv: the kernel sends the server SIGINT (fast shutdown) when this process dies, even by SIGKILL.
  const [command, args] = setpriv ? [setpriv, ["--pdeathsig", "INT", join(binDir, "postgres"), ...postgresArgs]] : [join(binDir, "postgres"), postgresArgs];
  const logFile = join(dir, "postgres.log");
  const logFd = openSync(logFile, "a");
  const server = spawn(command, args, { stdio: ["ignore", logFd, logFd], ...(owner ? { uid: owner.uid, gid: owner.gid } : {}) });
  closeSync(logFd);
  const exited = new Promise((resolveExit) => server.once("exit", resolveExit));
  const stopOnExit = () => server.kill("SIGINT");
  process.once("exit", stopOnExit);

  const stop = async () => {
    process.removeListener("exit", stopOnExit);
    if (server.exitCode !== null || server.signalCode !== null) return;
    server.kill("SIGINT");
    // Fast shutdown takes well under a second; past the timeout, an immediate one, then SIGKILL.
    if (await Promise.race([exited.then(() => true), delay(STOP_TIMEOUT_MS).then(() => false)])) return;
    server.kill("SIGQUIT");
    if (await Promise.race([exited.then(() => true), delay(STOP_TIMEOUT_MS).then(() => false)])) return;
    server.kill("SIGKILL");
    await exited;
  };

  const adminUrl = connectionUrl(password, port, "postgres");
  try {
    await waitUntilReady(adminUrl, exited, logFile);
    await createDatabase(adminUrl, database);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: connectionUrl(password, port, database), port, dir, major, stop };
}

/** @param {string} password @param {number} port @param {string} database */
function connectionUrl(password, port, database) {
  return `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}

/**
 * The user to run the server as when this process is root (Postgres refuses root), or undefined.
 * @returns {{ name: string, uid: number, gid: number } | undefined}
 */
function serverUser() {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ["postgres", "nobody"]) {
    const uid = spawnSync("id", ["-u", name], { encoding: "utf8" });
    const gid = spawnSync("id", ["-g", name], { encoding: "utf8" });
    if (uid.status === 0 && gid.status === 0) return { name, uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  }
  throw new Error("Postgres refuses to run as root, and this machine has neither a `postgres` nor a `nobody` user to run it as.");
}

/**
 * Throws unless `owner` may enter every folder above `dir` (the server runs as that user).
 * @param {string} dir
 * @param {{ name: string, uid: number, gid: number }} owner
 */
function assertReachable(dir, owner) {
  for (let folder = dirname(dir); ; folder = dirname(folder)) {
    const { mode, uid, gid } = statSync(folder);
    const searchable = uid === owner.uid ? mode & 0o100 : gid === owner.gid ? mode & 0o010 : mode & 0o001;
    if (!searchable) {
      throw new Error(`Postgres runs as the user ${owner.name} here (it refuses root), and ${folder} is closed to that user: use a state folder elsewhere, or \`chmod o+x ${folder}\`.`);
    }
    if (folder === dirname(folder)) return;
  }
}

/** @param {string} name @returns {string | undefined} */
function onPath(name) {
  for (const folder of (process.env.PATH ?? "").split(delimiter)) {
    if (folder && existsSync(join(folder, name))) return join(folder, name);
  }
  for (const folder of ["/usr/bin", "/bin"]) if (existsSync(join(folder, name))) return join(folder, name);
  return undefined;
}

/** A TCP port nothing listens on at 127.0.0.1 right now. */
function freePort() {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = /** @type {import("node:net").AddressInfo} */ (probe.address());
      probe.close(() => resolvePort(port));
    });
  });
}

/** @param {number} ms */
function delay(ms) {
  return new Promise((resolveDelay) => setTimeout(resolveDelay, ms).unref());
}

/**
 * Resolves once the server accepts a connection; throws with the log's end when it exits first.
 * @param {string} url @param {Promise<unknown>} exited @param {string} logFile
 */
async function waitUntilReady(url, exited, logFile) {
  let gone = false;
  exited.then(() => (gone = true));
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      return;
    } catch (error) {
      await client.end().catch(() => {});
      if (gone || Date.now() > deadline) {
        const log = existsSync(logFile) ? readFileSync(logFile, "utf8").split("\n").slice(-15).join("\n") : "";
        throw new Error(`the local Postgres server ${gone ? "exited" : "did not answer"} (${/** @type {Error} */ (error).message}); the end of ${logFile}:\n${log}`);
      }
      await delay(100);
    }
  }
}

/** @param {string} adminUrl @param {string} database */
async function createDatabase(adminUrl, database) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [database]);
    if (!rowCount) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}
