/**
 * One soak on one store: the real local runtime (`wrangler dev`, state on disk) under a steady load
 * of signed Stripe events from the provider (provider.mjs), its whole process group SIGKILLed every
 * 30–60 s and restarted on the same state; on Postgres, the database server crashed once mid-run
 * (`pg_ctl stop -m immediate`) and restarted while the load goes on. Then the provider gets its
 * last 200s, everything must settle within RECOVERY_LIMIT_S of the last restart, and the store is
 * checked (checks.mjs). Prints its figures as it goes and at the end.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { LocalInbox, sleep } from "../e2e/harness.mjs";
import { RECOVERY_LIMIT_S } from "../e2e/kill-restart.mjs";
import { checkStore } from "./checks.mjs";
import { startSoakPostgres } from "./postgres-server.mjs";
import { Provider } from "./provider.mjs";

/** From one kill to the next (uniformly drawn; the first counts from the load's start). */
const KILL_EVERY_S = [30, 60];
/** The database server's crash falls in this part of the run, and it stays down this long. */
const CRASH_WITHIN = [0.35, 0.65];
const DATABASE_DOWN_S = 5;
/** After the load, the provider keeps resending what is unanswered for at most this long. */
const RESEND_AFTER_LOAD_S = 120;
/** A run that settled is checked again after this, so a late second run would show. */
const QUIET_S = 10;
const PROGRESS_EVERY_S = 15;

/**
 * @param {object} options
 * @param {"d1" | "postgres"} options.store
 * @param {number} options.minutes how long the load and the kills go on
 * @param {number} options.rate new events per second
 * @param {number} options.twiceShare the share of events posted twice at once
 * @param {(resources: { inbox?: LocalInbox, postgres?: Awaited<ReturnType<typeof startSoakPostgres>> }) => void} options.track
 *   told what to clean up if the process is interrupted
 * @returns {Promise<{ store: string, figures: Record<string, unknown>, failures: string[] }>}
 */
export async function soakStore({ store, minutes, rate, twiceShare, track }) {
  const secret = `whsec_soak_${randomBytes(16).toString("hex")}`;
  const startedAt = Date.now();
  const clock = () => formatSeconds((Date.now() - startedAt) / 1000);
  const say = (text) => console.log(`[${store} ${clock()}] ${text}`);
  const failures = [];
  /** @type {Awaited<ReturnType<typeof startSoakPostgres>> | undefined} */
  let postgres;
  /** @type {LocalInbox | undefined} */
  let inbox;
  let keep = false;
  try {
    if (store === "postgres") {
      postgres = await startSoakPostgres();
      track({ postgres });
      say(`private Postgres server up (${postgres.dir})`);
    }
    // A secret of its own: a post that reaches another inbox on a reused port is refused there.
    inbox = new LocalInbox({ vars: { STRIPE_WEBHOOK_SECRET: secret }, ...(postgres ? { postgres: { url: postgres.url } } : {}) });
    track({ inbox, postgres });
    await inbox.start();
    say(`runtime up on ${inbox.url} (state in ${inbox.stateDir})`);

    const provider = new Provider({ inbox, secret, prefix: `evt_soak_${store}_`, twiceShare });
    const loadStart = Date.now();
    const loadEnd = loadStart + minutes * 60_000;
    const kills = [];
    let lastRestartAt = loadStart;
    /** @type {{ at: number, downS: number, startS: number } | undefined} */
    let crash;
    // Ends the load and the chaos early when something failed: their waits reject, they stop.
    const stopping = new AbortController();
    const wait = (ms) => delay(ms, undefined, { signal: stopping.signal });

    const load = (async () => {
      while (Date.now() < loadEnd) {
        const due = Math.floor(((Date.now() - loadStart) / 1000) * rate);
        while (provider.events.size < due) provider.sendNext();
        await wait(50);
      }
    })();

    const chaos = (async () => {
      let previousKillAt = loadStart;
      let upSince = loadStart;
      for (;;) {
        const killAt = previousKillAt + between(...KILL_EVERY_S) * 1000;
        if (killAt >= loadEnd) return;
        await wait(Math.max(0, killAt - Date.now()));
        const gapS = (Date.now() - previousKillAt) / 1000;
        const upS = (Date.now() - upSince) / 1000;
        previousKillAt = Date.now();
        await inbox.kill();
        const restartingAt = Date.now();
        lastRestartAt = Math.max(lastRestartAt, restartingAt);
        await startWithOneRetry(inbox, say);
        upSince = Date.now();
        const restartS = (upSince - restartingAt) / 1000;
        kills.push({ at: (previousKillAt - loadStart) / 1000, restartS });
        say(`kill -9 #${kills.length}, ${gapS.toFixed(0)} s after the ${kills.length > 1 ? "previous one" : "load's start"} (up ${upS.toFixed(0)} s); restarted in ${restartS.toFixed(1)} s on ${inbox.url}`);
      }
    })();

    const databaseCrash = (async () => {
      if (!postgres) return;
      await wait(between(...CRASH_WITHIN) * minutes * 60_000);
      const at = Date.now();
      await postgres.crash();
      say("Postgres crashed: pg_ctl stop -m immediate");
      await wait(DATABASE_DOWN_S * 1000);
      const restartingAt = Date.now();
      await postgres.restart();
      lastRestartAt = Math.max(lastRestartAt, restartingAt);
      crash = { at: (at - loadStart) / 1000, downS: (Date.now() - at) / 1000, startS: (Date.now() - restartingAt) / 1000 };
      say(`Postgres restarted (pg_ctl start): down ${crash.downS.toFixed(1)} s`);
    })();

    const progress = setInterval(async () => say(`${providerLine(provider)} | ${await storeLine(inbox)}`), PROGRESS_EVERY_S * 1000);
    try {
      await Promise.all([load, chaos, databaseCrash]);
      say(`load over: ${provider.events.size} events sent; ${provider.unanswered} copies still unanswered`);
      provider.giveUpAt = Date.now() + RESEND_AFTER_LOAD_S * 1000;
      await provider.drain();
      say(`every copy answered 200 or given up: ${providerLine(provider)}`);

      // Settled: every copy answered 200 and every event done. Polled past the limit, so a slow
      // settling still prints its figure before it fails.
      const deadline = lastRestartAt + 2 * RECOVERY_LIMIT_S * 1000;
      let counts;
      for (;;) {
        counts = (await inbox.admin("/admin/stats", { signal: AbortSignal.timeout(10_000) }).catch(() => null))?.json?.counts;
        const settled = counts && counts.done === provider.events.size && counts.received + counts.processing + counts.failed === 0;
        if (settled || counts?.failed > 0 || Date.now() > deadline) break;
        await sleep(1_000);
      }
      const settledAt = Math.max(Date.now(), provider.lastAnsweredAt);
      const settleS = (settledAt - lastRestartAt) / 1000;
      const settled = counts?.done === provider.events.size && counts.received + counts.processing + counts.failed === 0;
      say(settled ? `settled ${settleS.toFixed(1)} s after the last restart` : `not settled ${settleS.toFixed(1)} s after the last restart: ${JSON.stringify(counts)}`);
      if (!settled) failures.push(`not settled ${settleS.toFixed(1)} s after the last restart: ${JSON.stringify(counts)}`);
      else if (settleS > RECOVERY_LIMIT_S) failures.push(`settled ${settleS.toFixed(1)} s after the last restart, over ${RECOVERY_LIMIT_S} s`);

      await sleep(QUIET_S * 1000);
      const checked = await checkStore(inbox, store, provider);
      failures.push(...checked.failures);
      const figures = {
        minutes,
        "events sent": provider.events.size,
        "events sent twice at once": provider.sentTwice,
        "posts made": provider.posts,
        "answered 200 stored": provider.answers.get("200 stored") ?? 0,
        "answered 200 duplicate": provider.answers.get("200 duplicate") ?? 0,
        "non-200 answers": provider.non200,
        resends: provider.resends,
        "kills and restarts": kills.length,
        "kills at (s into the load)": kills.map((kill) => Math.round(kill.at)),
        "restart took (s, each)": kills.map((kill) => Number(kill.restartS.toFixed(1))),
        ...(store === "postgres"
          ? { "Postgres crash": crash ? `at ${Math.round(crash.at)} s into the load, down ${crash.downS.toFixed(1)} s (pg_ctl start ${crash.startS.toFixed(1)} s)` : "none" }
          : {}),
        ...checked.figures,
        "settled after the last restart (s)": Number(settleS.toFixed(1)),
      };
      if (store === "postgres" && !crash) failures.push("the database server was not crashed");
      keep = failures.length > 0;
      return { store, figures, failures };
    } finally {
      clearInterval(progress);
      // When something above threw: stop the load, and let a restart under way end before the cleanup.
      stopping.abort();
      provider.stop();
      await Promise.allSettled([load, chaos, databaseCrash]);
    }
  } catch (error) {
    keep = true;
    throw error;
  } finally {
    if (keep) {
      if (inbox) console.log(`[${store}] kept for a look: the runtime's state in ${inbox.stateDir}; the end of its output:\n${inbox.output.slice(-3_000)}`);
      if (postgres) console.log(`[${store}] kept for a look: the Postgres server's folder ${postgres.dir}`);
    }
    if (inbox) await (keep ? inbox.kill() : inbox.stop());
    await postgres?.stop({ keep });
    track({});
  }
}

/** Starts the runtime; once more if it did not come up (its output names why). */
async function startWithOneRetry(inbox, say) {
  try {
    await inbox.start();
  } catch (error) {
    say(`restart failed, trying once more: ${/** @type {Error} */ (error).message.split("\n")[0]}`);
    await inbox.kill();
    await inbox.start();
  }
}

function providerLine(provider) {
  const ok = (provider.answers.get("200 stored") ?? 0) + (provider.answers.get("200 duplicate") ?? 0);
  return `events ${provider.events.size}, posts ${provider.posts}, 200 ${ok}, non-200 ${JSON.stringify(provider.non200)}, resends ${provider.resends}, unanswered ${provider.unanswered}`;
}

async function storeLine(inbox) {
  const stats = await inbox.admin("/admin/stats", { signal: AbortSignal.timeout(10_000) }).catch(() => null);
  const counts = stats?.json?.counts;
  return counts ? `received ${counts.received}, processing ${counts.processing}, done ${counts.done}, failed ${counts.failed}` : "runtime down";
}

function between(low, high) {
  return low + Math.random() * (high - low);
}

function formatSeconds(seconds) {
  return `${Math.floor(seconds / 60)}:${String(Math.floor(seconds % 60)).padStart(2, "0")}`;
}
