/**
 * The runtime's CPU, read from /proc: the workerd process that runs the worker (not wrangler's
 * proxy), its Durable Objects, local D1 and the queue broker share its one thread, so its CPU per
 * delivery is what the inbox costs, whatever the load generator and wrangler's proxy can push
 * through. Also the rounding the bench's figures share.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";

export const round = (value) => Math.round(value * 100) / 100;
export const shown = (value) => (value === null || value === undefined ? "n/a" : value);

/** The workerd process that runs the worker (not wrangler's proxy), or null where /proc is not there. */
export function runtimePid(inbox) {
  if (!existsSync("/proc/self/stat")) return null;
  const parentOf = new Map();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // gone meanwhile
    }
  }
  const isDescendant = (pid) => {
    for (let at = pid; at > 1; at = parentOf.get(at) ?? 0) if (at === inbox.child?.pid) return true;
    return false;
  };
  for (const pid of parentOf.keys()) {
    if (!isDescendant(pid)) continue;
    let command;
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    // wrangler dev runs two workerd processes: a proxy that owns the public port, and the runtime.
    if (command.includes("workerd") && !command.includes(`entry=127.0.0.1:${inbox.port}`)) return pid;
  }
  return null;
}

const CLOCK_TICKS = existsSync("/proc/self/stat") ? Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100 : 100;

/**
 * CPU time (ms) used so far by the runtime: the worker, its Durable Objects, local D1 and the queue
 * broker share its one thread, so its CPU per delivery is what the inbox costs, whatever the load
 * generator and wrangler's proxy can push through.
 */
export function runtimeCpuMs(inbox) {
  const pid = runtimePid(inbox);
  if (pid === null) return null;
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

/** Runtime CPU ms per unit of work between two readings, or null where there are none. */
export function cpuPerUnit(before, after, units) {
  return before === null || after === null ? null : round((after - before) / units);
}

