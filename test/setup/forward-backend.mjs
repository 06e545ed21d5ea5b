/**
 * A real HTTP backend for the forwarding tests, started in Node by vitest's globalSetup and
 * reached from the Workers runtime over loopback (its URL is `inject("forwardBackendUrl")`).
 *
 * Each path is a destination of its own. A test plans a path's answers (`POST /__plan?path=…`
 * with `{ "steps": [{ "status", "headers", "body", "delayMs" }, …] }`: the n-th request gets the
 * n-th step, the last step repeats) and reads back what the path received (`GET
 * /__calls?path=…`: every request's headers and body, and the most requests it had in flight at
 * once). A path with no plan answers 200.
 */
import { createServer } from "node:http";

export default async function setup({ provide }) {
  const plans = new Map();
  const calls = new Map();
  const inFlight = new Map();
  const maxInFlight = new Map();

  const server = createServer((request, response) => {
    const url = new URL(request.url, "http://backend");
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      if (url.pathname === "/__plan") {
        plans.set(url.searchParams.get("path"), JSON.parse(body.toString()).steps);
        calls.set(url.searchParams.get("path"), []);
        maxInFlight.set(url.searchParams.get("path"), 0);
        return response.end("planned");
      }
      if (url.pathname === "/__calls") {
        const path = url.searchParams.get("path");
        response.setHeader("content-type", "application/json");
        return response.end(JSON.stringify({ calls: calls.get(path) ?? [], maxInFlight: maxInFlight.get(path) ?? 0 }));
      }
      const path = url.pathname;
      const received = calls.get(path) ?? [];
      calls.set(path, received);
      received.push({ method: request.method, url: request.url, headers: request.headers, body: body.toString("base64") });
      const steps = plans.get(path) ?? [{ status: 200 }];
      const step = steps[Math.min(received.length - 1, steps.length - 1)];
      inFlight.set(path, (inFlight.get(path) ?? 0) + 1);
      maxInFlight.set(path, Math.max(maxInFlight.get(path) ?? 0, inFlight.get(path)));
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        inFlight.set(path, inFlight.get(path) - 1);
      };
      // In flight until the answer is written or the client goes away (a timed-out request).
      response.on("finish", finish);
      response.on("close", finish);
      setTimeout(() => {
        if (response.destroyed) return;
        response.writeHead(step.status, step.headers ?? {});
        response.end(step.body ?? "");
      }, step.delayMs ?? 0);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  provide("forwardBackendUrl", `http://127.0.0.1:${server.address().port}`);
  return () => new Promise((resolve) => server.close(resolve));
}
