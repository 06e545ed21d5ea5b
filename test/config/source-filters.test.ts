// `<SOURCE>_FILTER`: read with the config, keyed by the source's var prefix; a bad one is a config
// problem naming the var and what is wrong, never its value.
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config";
import { MAX_FILTER_VAR_LENGTH, parseSourceFilters, sourceFilterOf, sourceFilterVarName } from "../../src/config/source-filters";

describe("parseSourceFilters", () => {
  it("reads each <NAME>_FILTER var and finds a source's filter by its var prefix", () => {
    const { filters, problems } = parseSourceFilters({ MY_SHOP_FILTER: '{"field":"headers.x-shopify-topic","prefix":"orders/"}', STRIPE_FILTER: "", OTHER: "x" });
    expect(problems).toEqual([]);
    expect(sourceFilterOf(filters, "my-shop")).toEqual({ field: "headers.x-shopify-topic", prefix: "orders/" });
    expect(sourceFilterOf(filters, "stripe")).toBeUndefined();
    expect(sourceFilterVarName("my-shop")).toBe("MY_SHOP_FILTER");
  });

  it("names the var and the problem, never the value", () => {
    const secretish = "not-json-but-secret-looking";
    const { problems } = parseSourceFilters({ A_FILTER: secretish, B_FILTER: '{"field":"type"}', C_FILTER: "x".repeat(MAX_FILTER_VAR_LENGTH + 1) });
    expect(problems).toEqual([
      { variables: ["A_FILTER"], problem: "must be JSON: a filter as docs/filters.md describes" },
      { variables: ["B_FILTER"], problem: expect.stringMatching(/^filter: a clause needs at least one operator/) },
      { variables: ["C_FILTER"], problem: `longer than ${MAX_FILTER_VAR_LENGTH} characters` },
    ]);
    expect(JSON.stringify(problems)).not.toContain(secretish);
  });

  it("makes loadConfig fail closed with a ConfigError, alongside other bad vars", () => {
    let error: unknown;
    try {
      loadConfig({ STRIPE_FILTER: '{"any":[]}', MAX_ATTEMPTS: "0" });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variables).toEqual(["MAX_ATTEMPTS", "STRIPE_FILTER"]);
    expect(loadConfig({ STRIPE_FILTER: '{"field":"type","exists":true}' }).sourceFilters.byPrefix.STRIPE).toEqual({ field: "type", exists: true });
  });
});
