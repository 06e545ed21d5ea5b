/**
 * Load from wrk (Debian's `wrk`), a C load generator that leaves the two cores to the runtime far
 * more than a Node one: each run replays pre-signed requests, each thread its own share, from a
 * file its Lua script reads at start. Runs for a duration; or sends `total` requests (each thread
 * stops after its share) and is stopped once `until()` says the work is over. Prints nothing;
 * returns wrk's figures.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Throws with how to install wrk when it is missing. */
export function requireWrk() {
  try {
    execFileSync("wrk", ["--version"], { stdio: "ignore" });
  } catch (error) {
    // `wrk --version` exits 1 after printing its version: only a missing binary is a failure.
    if (error.code === "ENOENT") throw new Error("npm run bench needs wrk: install it with `apt-get install -y wrk` (Debian/Ubuntu) or your system's package manager");
  }
}

const SEPARATOR = "\u0000\n";

// Each thread takes every threads-th request, starting at its own index, and cycles through them.
// With `total`, a thread stops once it has its share of answers (wrk's thread:stop()).
const SCRIPT = `
local threads = {}
local counter = 0
function setup(thread)
  thread:set("index", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

function init(args)
  local file = assert(io.open(args[1], "rb"))
  local data = file:read("*a")
  file:close()
  local count = tonumber(args[2])
  local quota = tonumber(args[3])
  requests = {}
  local position = 1
  local number = 0
  while true do
    local stop = string.find(data, "${SEPARATOR.replace("\u0000", "\\0").replace("\n", "\\n")}", position, true)
    if not stop then break end
    if number % count == wrk.thread:get("index") then table.insert(requests, string.sub(data, position, stop - 1)) end
    number = number + 1
    position = stop + ${SEPARATOR.length}
  end
  assert(#requests > 0, "a wrk thread got no requests: pass at least one per thread")
  next_request = 0
  answered = 0
  share = quota > 0 and math.ceil(quota / count) or 0
end

function request()
  next_request = next_request % #requests + 1
  return requests[next_request]
end

function response(status, headers, body)
  answered = answered + 1
  if share > 0 and answered >= share then wrk.thread:stop() end
end

function done(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format("WRK {\\"requests\\":%d,\\"durationUs\\":%d,\\"p50Us\\":%d,\\"p99Us\\":%d,\\"status\\":%d,\\"connect\\":%d,\\"read\\":%d,\\"write\\":%d,\\"timeout\\":%d}\\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    errors.status, errors.connect, errors.read, errors.write, errors.timeout))
end
`;

/** A raw HTTP/1.1 request. */
function raw({ method = "POST", path, headers, body }, host) {
  const lines = [`${method} ${path} HTTP/1.1`, `Host: ${host}`];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return `${lines.join("\r\n")}\r\n\r\n${body}`;
}

/**
 * Runs wrk against `url` (an origin) with `requests`, for `seconds`; or, with `total`, until
 * `until()` resolves true (polled every 250 ms, for at most `untilTimeoutMs`), then stops it (wrk
 * reports on SIGINT). `requests` needs one per thread at least: each thread replays its own share.
 * @param {{ url: string, requests: { method?: string, path: string, headers: Record<string, string>, body: string }[], seconds?: number, connections: number, threads?: number, total?: number, until?: () => Promise<boolean> }} options
 * @returns {Promise<{ requests: number, seconds: number, requestsPerSecond: number, p50Ms: number, p99Ms: number, non2xx: number, errors: number }>}
 */
export async function runWrk({ url, requests, seconds = 3600, connections, threads = 2, total = 0, until, untilTimeoutMs = 600_000 }) {
  if (requests.length < threads) throw new Error(`runWrk: ${requests.length} requests for ${threads} threads: each thread needs one at least`);
  const dir = mkdtempSync(join(tmpdir(), "webhook-inbox-wrk-"));
  let child = null;
  try {
    const host = new URL(url).host;
    writeFileSync(join(dir, "requests"), requests.map((request) => raw(request, host) + SEPARATOR).join(""));
    writeFileSync(join(dir, "load.lua"), SCRIPT);
    const args = ["-t", String(threads), "-c", String(connections), "-d", `${seconds}s`, "--timeout", "30s", "-s", join(dir, "load.lua"), url, "--", join(dir, "requests"), String(threads), String(total)];
    child = spawn("wrk", args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const exited = new Promise((resolve) => child.once("exit", resolve));
    if (until) {
      const giveUpAt = Date.now() + untilTimeoutMs;
      while (child.exitCode === null && Date.now() < giveUpAt && !(await until())) await new Promise((resolve) => setTimeout(resolve, 250));
      child.kill("SIGINT");
    }
    await exited;
    const line = stdout.split("\n").find((text) => text.startsWith("WRK {"));
    if (!line) throw new Error(`wrk printed no summary:\n${stdout}${stderr}`);
    const summary = JSON.parse(line.slice(4));
    const elapsedSeconds = summary.durationUs / 1e6;
    return {
      requests: summary.requests,
      seconds: Math.round(elapsedSeconds * 100) / 100,
      requestsPerSecond: Math.round(summary.requests / elapsedSeconds),
      p50Ms: Math.round(summary.p50Us / 100) / 10,
      p99Ms: Math.round(summary.p99Us / 100) / 10,
      non2xx: summary.status,
      errors: summary.connect + summary.read + summary.write + summary.timeout,
    };
  } finally {
    if (child && child.exitCode === null) child.kill("SIGKILL"); // `until` threw: no wrk left behind
    rmSync(dir, { recursive: true, force: true });
  }
}
