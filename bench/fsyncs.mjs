/**
 * The runtime's fsyncs, counted with strace (Debian's `strace`) over a pass of their own, so that
 * strace slows no measured row. BENCH_FSYNC_FILES=1 names the file behind each call.
 */
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Reads an `strace -f -y` log of fsync/fdatasync calls, prints them by kind of file (the state
 * directory's hashed names folded into `*`), and returns their number.
 */
function fsyncsByFile(log) {
  const kinds = new Map();
  let calls = 0;
  for (const line of readFileSync(log, "utf8").split("\n")) {
    const match = /(fsync|fdatasync)\(\d+<([^>]*)>/.exec(line);
    if (!match) continue;
    calls++;
    const kind = `${match[1]} ${match[2].replace(/^.*?\/(v3|wrangler-[^/]*)\//, "").replace(/[0-9a-f]{16,}/g, "*")}`;
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  for (const [kind, count] of [...kinds].sort((a, b) => b[1] - a[1])) console.log(`    ${String(count).padStart(6)}  ${kind}`);
  return calls;
}

/**
 * Counts the fsync and fdatasync calls of a process and its threads with strace (Debian's
 * `strace`); `stop()` detaches and resolves the count. Null when strace is missing.
 */
export async function traceFsyncsOf(pid) {
  if (pid === null) return null;
  try {
    execFileSync("strace", ["-V"], { stdio: "ignore" });
  } catch {
    console.warn("  (no strace: fsyncs not counted; `apt-get install -y strace` adds them)");
    return null;
  }
  // BENCH_FSYNC_FILES=1: a profile too, the calls by the kind of file they sync (-y names each fd).
  const byFile = process.env.BENCH_FSYNC_FILES === "1";
  const log = join(tmpdir(), `bench-fsyncs-${pid}.txt`);
  const args = byFile ? ["-f", "-y", "-o", log, "-e", "trace=fsync,fdatasync", "-p", String(pid)] : ["-c", "-f", "-e", "trace=fsync,fdatasync", "-p", String(pid)];
  const child = spawn("strace", args, { stdio: ["ignore", "ignore", "pipe"] });
  let output = "";
  child.stderr.on("data", (chunk) => (output += chunk));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  await new Promise((resolve) => setTimeout(resolve, 1_000)); // attached to every thread
  let result;
  return {
    async stop() {
      if (result !== undefined) return result;
      child.kill("SIGINT");
      await exited;
      // The summary's last line: "100.00  <seconds>  <usecs/call>  <calls>  [errors]  total". None
      // when strace could not attach (ptrace refused): then nothing was counted, not zero.
      if (byFile) {
        result = fsyncsByFile(log);
        return result;
      }
      const total = output.split("\n").find((line) => /\btotal\s*$/.test(line));
      result = total ? Number(total.trim().split(/\s+/)[3]) : null;
      if (result === null) console.warn(`  (strace counted nothing: ${output.trim().split("\n")[0] ?? "no output"})`);
      return result;
    },
  };
}
