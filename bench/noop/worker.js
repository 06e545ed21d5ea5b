// The benchmark's baseline: a no-op worker in the same local runtime that reads the body and
// answers 200. Bench-only; not part of the product.
export default {
  async fetch(request) {
    await request.arrayBuffer();
    return Response.json({ status: "ok" });
  },
};
