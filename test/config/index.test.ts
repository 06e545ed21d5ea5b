import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, MIN_RETENTION_DAYS, QUEUE_MAX_DELAY_SECONDS } from "../../src/config";
import { parseAlerts } from "../../src/config/alerts";
import { problemsOf } from "../helpers/config-problems";

describe("loadConfig", () => {
  it("has a default for every var, a heartbeat every 10 s among them", () => {
    expect(loadConfig({})).toEqual({
      maxBodyBytes: 1_048_576,
      maxAttempts: 5,
      retryBaseSeconds: 2,
      leaseSeconds: 60,
      handlerTimeoutSeconds: 300,
      retentionDays: 30,
      bodyRetentionDays: 7,
      sweepAfterSeconds: 60,
      sweepIntervalSeconds: 10,
      storeTimeoutSeconds: 30,
      publicBaseUrl: undefined,
      adminToken: undefined,
      forwarding: { byPrefix: {} },
      sourceFilters: { byPrefix: {} },
      alerts: parseAlerts({}).alerts,
    });
  });

  it("turns the heartbeat off with SWEEP_INTERVAL_SECONDS=0", () => {
    expect(loadConfig({ SWEEP_INTERVAL_SECONDS: "0" }).sweepIntervalSeconds).toBe(0);
  });

  it("accepts HANDLER_TIMEOUT_SECONDS from 1 to 840, above LEASE_SECONDS too", () => {
    expect(loadConfig({ HANDLER_TIMEOUT_SECONDS: "840", LEASE_SECONDS: "60" }).handlerTimeoutSeconds).toBe(840);
    expect(loadConfig({ HANDLER_TIMEOUT_SECONDS: "1" }).handlerTimeoutSeconds).toBe(1);
    expect(problemsOf({ HANDLER_TIMEOUT_SECONDS: "841" })).toEqual([{ variables: ["HANDLER_TIMEOUT_SECONDS"], problem: "must be a whole number from 1 to 840" }]);
    expect(problemsOf({ HANDLER_TIMEOUT_SECONDS: "0" })[0]!.variables).toEqual(["HANDLER_TIMEOUT_SECONDS"]);
  });

  it("refuses a longest backoff beyond Queues' 12 h delay limit, and accepts one at it", () => {
    // 1 · 2^15 = 32768 s ≤ 43200; 1 · 2^16 = 65536 s > 43200.
    expect(loadConfig({ RETRY_BASE_SECONDS: "1", MAX_ATTEMPTS: "17" }).maxAttempts).toBe(17);
    expect(problemsOf({ RETRY_BASE_SECONDS: "1", MAX_ATTEMPTS: "18" })).toEqual([
      { variables: ["RETRY_BASE_SECONDS", "MAX_ATTEMPTS"], problem: expect.stringContaining(`${QUEUE_MAX_DELAY_SECONDS} s`) },
    ]);
    // 2700 · 2^4 = 43200 exactly.
    expect(loadConfig({ RETRY_BASE_SECONDS: "2700", MAX_ATTEMPTS: "6" }).retryBaseSeconds).toBe(2700);
    expect(problemsOf({ RETRY_BASE_SECONDS: "2701", MAX_ATTEMPTS: "6" })[0]!.variables).toEqual(["RETRY_BASE_SECONDS", "MAX_ATTEMPTS"]);
  });

  it("refuses MAX_ATTEMPTS=44, which once made every sweep throw (a date out of range)", () => {
    expect(problemsOf({ MAX_ATTEMPTS: "44" })[0]!.variables).toEqual(["RETRY_BASE_SECONDS", "MAX_ATTEMPTS"]);
  });

  it(`refuses RETENTION_DAYS below ${MIN_RETENTION_DAYS}, shorter than the providers' retry windows`, () => {
    expect(loadConfig({ RETENTION_DAYS: String(MIN_RETENTION_DAYS), BODY_RETENTION_DAYS: "1" }).retentionDays).toBe(MIN_RETENTION_DAYS);
    for (const days of ["0", "1", "3"]) {
      expect(problemsOf({ RETENTION_DAYS: days, BODY_RETENTION_DAYS: "0" })).toEqual([
        { variables: ["RETENTION_DAYS"], problem: expect.stringContaining("retry windows") },
      ]);
    }
  });

  it("refuses BODY_RETENTION_DAYS above RETENTION_DAYS, and accepts them equal", () => {
    expect(loadConfig({ RETENTION_DAYS: "10", BODY_RETENTION_DAYS: "10" }).bodyRetentionDays).toBe(10);
    expect(problemsOf({ RETENTION_DAYS: "10", BODY_RETENTION_DAYS: "11" })).toEqual([
      { variables: ["BODY_RETENTION_DAYS", "RETENTION_DAYS"], problem: "BODY_RETENTION_DAYS must not exceed RETENTION_DAYS" },
    ]);
  });

  it("names every bad var at once, and never their values", () => {
    const values = { MAX_ATTEMPTS: "987654", LEASE_SECONDS: "sixty-sixty", PUBLIC_BASE_URL: "not a url 4f7c", SWEEP_INTERVAL_SECONDS: "-31337" };
    const error = (() => {
      try {
        loadConfig(values);
      } catch (thrown) {
        return thrown as ConfigError;
      }
    })()!;
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.variables.sort()).toEqual(Object.keys(values).sort());
    const text = JSON.stringify(error.problems) + error.message;
    for (const value of Object.values(values)) expect(text).not.toContain(value);
    expect(text).not.toMatch(/987654|sixty|4f7c|31337/);
  });
});
