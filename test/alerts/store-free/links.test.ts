/** The dashboard links an alert carries: the filtered list of what its incident is about. */
import { describe, expect, it } from "vitest";
import { absolute, incidentPath, listPath } from "../../../src/alerts/links";
import { parseFilter } from "../../../src/http/ui/filters";

describe("an alert's links", () => {
  it("name the subscriber that failed, and the dashboard's list reads it back as its filter", () => {
    const path = listPath("delivery_failed", "stripe", "crm");
    expect(path).toBe("/ui/deliveries?status=failed&source=stripe&subscriber=crm");
    const { filter, problems } = parseFilter(new URL(path, "https://inbox.example.com").searchParams);
    expect(problems).toEqual([]);
    expect(filter).toMatchObject({ status: "failed", source: "stripe", subscriber: "crm" });
  });

  it("name the subscriber of a failure rate too, leave it out where the list has nothing to show for it, and link nowhere without a base URL", () => {
    expect(listPath("delivery_failed", "stripe")).toBe("/ui/deliveries?status=failed&source=stripe");
    expect(listPath("failure_rate", "stripe", "crm")).toBe("/ui/deliveries?status=failed&source=stripe&subscriber=crm");
    expect(listPath("backlog_age", "stripe", "crm")).toBe("/ui/deliveries?status=received&source=stripe");
    expect(listPath("breaker_open", "svix", "forward")).toBe("/ui/incidents");
    expect(absolute(undefined, incidentPath(7))).toBeNull();
    expect(absolute("https://inbox.example.com/", incidentPath(7))).toBe("https://inbox.example.com/ui/incidents/7");
  });
});
