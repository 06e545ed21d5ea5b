// Several forward destinations per source by vars (issue 26): <SOURCE>_FORWARD_URL is `forward`,
// <SOURCE>_FORWARD_<NAME>_URL is `<name>`; each with its own settings, read without ambiguity.
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config";
import { destinationOf, destinationsOf } from "../../src/config/forwarding";
import { readForwardVar } from "../../src/config/forward-vars";
import { problemsOf } from "../helpers/config-problems";

const SECRET = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
const OTHER = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const FIRST = { STRIPE_FORWARD_URL: "https://billing.example.com/", STRIPE_FORWARD_SECRET: SECRET };
const CRM = { STRIPE_FORWARD_CRM_URL: "https://crm.example.com/hooks", STRIPE_FORWARD_CRM_SECRET: OTHER };

describe("reading a forwarding var's name", () => {
  it.each([
    ["STRIPE_FORWARD_URL", { prefix: "STRIPE", name: "forward", varName: null, setting: "url" }],
    ["STRIPE_FORWARD_SECRET", { prefix: "STRIPE", name: "forward", varName: null, setting: "secret" }],
    ["STRIPE_FORWARD_CRM_SECRET", { prefix: "STRIPE", name: "crm", varName: "CRM", setting: "secret" }],
    ["STRIPE_FORWARD_TIMEOUT_SECONDS", { prefix: "STRIPE", name: "forward", varName: null, setting: "timeout" }],
    ["STRIPE_FORWARD_CRM_TIMEOUT_SECONDS", { prefix: "STRIPE", name: "crm", varName: "CRM", setting: "timeout" }],
    ["STRIPE_FORWARD_RETRY_BASE_SECONDS", { prefix: "STRIPE", name: "forward", varName: null, setting: "retryBase" }],
    ["STRIPE_FORWARD_MAX_ATTEMPTS", { prefix: "STRIPE", name: "forward", varName: null, setting: "maxAttempts" }],
    ["STRIPE_FORWARD_A2_MAX_ATTEMPTS", { prefix: "STRIPE", name: "a2", varName: "A2", setting: "maxAttempts" }],
    ["STRIPE_FORWARD_BREAKER_FAILURES", { prefix: "STRIPE", name: "forward", varName: null, setting: "breakerFailures" }],
    ["STRIPE_FORWARD_CRM_FILTER", { prefix: "STRIPE", name: "crm", varName: "CRM", setting: "filter" }],
    ["MY_SHOP_FORWARD_CRM_URL", { prefix: "MY_SHOP", name: "crm", varName: "CRM", setting: "url" }],
    // A source named `a-forward`: the longest prefix wins, FORWARD is never a name.
    ["A_FORWARD_FORWARD_URL", { prefix: "A_FORWARD", name: "forward", varName: null, setting: "url" }],
    ["STRIPE_FORWARD_SECRET_URL", { prefix: "STRIPE", name: "secret", varName: "SECRET", setting: "url" }],
  ])("%s", (name, read) => {
    expect(readForwardVar(name)).toEqual(read);
  });

  it.each(["STRIPE_WEBHOOK_SECRET", "STRIPE_FORWARD", "STRIPE_FORWARD_CRM", "STRIPE_FORWARD_MY_CRM_URL", "STRIPE_FORWARD_crm_URL", "FORWARD_URL"])("%s is not one", (name) => {
    expect(readForwardVar(name)).toBeNull();
  });
});

describe("several destinations per source", () => {
  it("reads the first as `forward` and the others by name, first first then by name, each with its own settings", () => {
    const { forwarding } = loadConfig({
      ...FIRST,
      ...CRM,
      STRIPE_FORWARD_ANALYTICS_URL: "https://analytics.example.com/in",
      STRIPE_FORWARD_ANALYTICS_SECRET: SECRET,
      STRIPE_FORWARD_ANALYTICS_CONCURRENCY: "2",
      STRIPE_FORWARD_CRM_TIMEOUT_SECONDS: "7",
      STRIPE_FORWARD_TIMEOUT_SECONDS: "9",
    });
    const destinations = destinationsOf(forwarding, "stripe");
    expect(destinations.map((d) => [d.name, d.url, d.timeoutSeconds, d.concurrency])).toEqual([
      ["forward", "https://billing.example.com/", 9, 10],
      ["analytics", "https://analytics.example.com/in", 30, 2],
      ["crm", "https://crm.example.com/hooks", 7, 10],
    ]);
    // Each signs with its own key.
    expect(destinations[2]!.key).not.toEqual(destinations[0]!.key);
    expect(destinationOf(forwarding, "stripe")!.url).toBe("https://billing.example.com/");
    expect(destinationsOf(forwarding, "github")).toEqual([]);
  });

  it("has named destinations without a first one, and then destinationOf finds none", () => {
    const { forwarding } = loadConfig(CRM);
    expect(destinationsOf(forwarding, "stripe").map((d) => d.name)).toEqual(["crm"]);
    expect(destinationOf(forwarding, "stripe")).toBeUndefined();
  });

  it("defaults the retry schedule to the inbox's, and reads a destination's own", () => {
    const { forwarding } = loadConfig({ ...FIRST, ...CRM, MAX_ATTEMPTS: "7", RETRY_BASE_SECONDS: "3", STRIPE_FORWARD_CRM_MAX_ATTEMPTS: "12", STRIPE_FORWARD_CRM_RETRY_BASE_SECONDS: "10" });
    const [first, crm] = destinationsOf(forwarding, "stripe");
    expect([first!.maxAttempts, first!.retryBaseSeconds]).toEqual([7, 3]);
    expect([crm!.maxAttempts, crm!.retryBaseSeconds]).toEqual([12, 10]);
  });

  it("refuses a destination's schedule whose longest backoff passes Queues' 12 h, naming its vars or the inbox's it defaults to", () => {
    // 10 · 2^12 = 40960 fits; 10 · 2^13 does not.
    expect(loadConfig({ ...CRM, STRIPE_FORWARD_CRM_MAX_ATTEMPTS: "14", STRIPE_FORWARD_CRM_RETRY_BASE_SECONDS: "10" }).forwarding.byPrefix.STRIPE![0]!.maxAttempts).toBe(14);
    expect(problemsOf({ ...CRM, STRIPE_FORWARD_CRM_MAX_ATTEMPTS: "15", STRIPE_FORWARD_CRM_RETRY_BASE_SECONDS: "10" })).toEqual([
      { variables: ["STRIPE_FORWARD_CRM_RETRY_BASE_SECONDS", "STRIPE_FORWARD_CRM_MAX_ATTEMPTS"], problem: expect.stringContaining("12 h") },
    ]);
    expect(problemsOf({ ...CRM, RETRY_BASE_SECONDS: "100", STRIPE_FORWARD_CRM_MAX_ATTEMPTS: "12" })).toEqual([
      { variables: ["RETRY_BASE_SECONDS", "STRIPE_FORWARD_CRM_MAX_ATTEMPTS"], problem: expect.stringContaining("12 h") },
    ]);
    expect(problemsOf({ ...CRM, STRIPE_FORWARD_CRM_MAX_ATTEMPTS: "0" })).toEqual([{ variables: ["STRIPE_FORWARD_CRM_MAX_ATTEMPTS"], problem: expect.stringContaining("1 to 50") }]);
    expect(problemsOf({ ...CRM, STRIPE_FORWARD_CRM_RETRY_BASE_SECONDS: "x" })).toEqual([{ variables: ["STRIPE_FORWARD_CRM_RETRY_BASE_SECONDS"], problem: expect.stringContaining("1 to 3600") }]);
  });

  it("reads the breaker settings, with defaults of 5 failures and 30 s, and refuses bad ones", () => {
    const { forwarding } = loadConfig({ ...FIRST, ...CRM, STRIPE_FORWARD_CRM_BREAKER_FAILURES: "2", STRIPE_FORWARD_CRM_BREAKER_OPEN_SECONDS: "5" });
    expect(destinationsOf(forwarding, "stripe").map((d) => d.breaker)).toEqual([
      { failures: 5, openSeconds: 30 },
      { failures: 2, openSeconds: 5 },
    ]);
    expect(problemsOf({ ...FIRST, STRIPE_FORWARD_BREAKER_FAILURES: "0" })[0]!.variables).toEqual(["STRIPE_FORWARD_BREAKER_FAILURES"]);
    expect(problemsOf({ ...FIRST, STRIPE_FORWARD_BREAKER_OPEN_SECONDS: "601" })[0]!.variables).toEqual(["STRIPE_FORWARD_BREAKER_OPEN_SECONDS"]);
  });

  it("keeps a destination's filter as its raw JSON text, and refuses text that is not JSON or not a filter", () => {
    const filter = '{"field":"type","oneOf":["invoice.paid"]}';
    const { forwarding } = loadConfig({ ...FIRST, ...CRM, STRIPE_FORWARD_CRM_FILTER: filter });
    expect(destinationsOf(forwarding, "stripe").map((d) => d.filterJson)).toEqual([null, filter]);
    expect(problemsOf({ ...CRM, STRIPE_FORWARD_CRM_FILTER: "{eventType" })).toEqual([{ variables: ["STRIPE_FORWARD_CRM_FILTER"], problem: expect.stringContaining("JSON") }]);
    expect(problemsOf({ ...CRM, STRIPE_FORWARD_CRM_FILTER: '{"eventType":{"oneOf":["invoice.paid"]}}' })).toEqual([
      { variables: ["STRIPE_FORWARD_CRM_FILTER"], problem: expect.stringContaining("is not a filter") },
    ]);
  });

  it("refuses a name that is a reserved word, once, naming its var", () => {
    expect(problemsOf({ ...FIRST, STRIPE_FORWARD_SECRET_URL: "https://x.example.com/", STRIPE_FORWARD_SECRET_SECRET: SECRET })).toEqual([
      { variables: ["STRIPE_FORWARD_SECRET_URL"], problem: expect.stringContaining("SECRET is a reserved word") },
    ]);
    expect(problemsOf({ ...FIRST, STRIPE_FORWARD_BREAKER_URL: "https://x.example.com/" })[0]!.problem).toContain("BREAKER is a reserved word");
    expect(problemsOf({ ...FIRST, STRIPE_FORWARD_TIMEOUT_CONCURRENCY: "3" })[0]).toEqual({
      variables: ["STRIPE_FORWARD_TIMEOUT_CONCURRENCY"],
      problem: expect.stringContaining("TIMEOUT is a reserved word"),
    });
  });

  it("refuses a setting whose destination has no URL, naming the URL it lacks", () => {
    expect(problemsOf({ ...FIRST, STRIPE_FORWARD_CMR_SECRET: SECRET })).toEqual([
      { variables: ["STRIPE_FORWARD_CMR_SECRET"], problem: expect.stringContaining("without STRIPE_FORWARD_CMR_URL") },
    ]);
    expect(problemsOf({ STRIPE_FORWARD_SECRET: SECRET, STRIPE_FORWARD_CONCURRENCY: "3" })).toEqual([
      { variables: ["STRIPE_FORWARD_CONCURRENCY"], problem: expect.stringContaining("without STRIPE_FORWARD_URL") },
      { variables: ["STRIPE_FORWARD_SECRET"], problem: expect.stringContaining("without STRIPE_FORWARD_URL") },
    ]);
  });

  it("checks a named destination as the first one: its URL, its secret, its timeout under the lease", () => {
    expect(problemsOf({ STRIPE_FORWARD_CRM_URL: "http://crm.example.com/" })).toEqual([
      { variables: ["STRIPE_FORWARD_CRM_URL"], problem: expect.stringContaining("https://") },
      { variables: ["STRIPE_FORWARD_CRM_SECRET"], problem: expect.stringContaining("must be set when STRIPE_FORWARD_CRM_URL is") },
    ]);
    expect(problemsOf({ ...CRM, STRIPE_FORWARD_CRM_TIMEOUT_SECONDS: "31" })).toEqual([
      { variables: ["STRIPE_FORWARD_CRM_TIMEOUT_SECONDS", "LEASE_SECONDS"], problem: expect.stringContaining("half of LEASE_SECONDS") },
    ]);
  });
});
