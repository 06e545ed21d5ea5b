/**
 * `GET /admin/sources`: every configured source with its provider's security grade (is the body
 * signed, a timestamp signed and checked both ways, the delivery id signed, the secret sent in the
 * clear), its dedup key, whether its secret is set, the provider messages that are not deliveries
 * (lifecycle messages, a confirmed subscription), counted apart, and whether a rotation is in progress: the
 * previous secret set, and when it last verified a delivery (while that is recent, the provider
 * still signs with the old secret, and `_PREVIOUS` must stay).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { previousSecretVarName, secretsFor } from "../../config/secrets";
import { SOURCES } from "../../sources";
import { openStore } from "../../store";
import { adminRouter, BEARER_SECURITY, errorResponses } from "./router";

const GradeSchema = z
  .object({
    bodySigned: z.union([z.boolean(), z.literal("partly")]).openapi({ description: '"partly" when only selected fields are signed (Adyen, SNS)' }),
    timestampSigned: z.boolean().openapi({ description: "a timestamp is signed and checked in both directions" }),
    deliveryIdSigned: z.boolean(),
    secretInClear: z.boolean().openapi({ description: "the secret travels in every request (a token header, Basic, a URL query)" }),
  })
  .openapi("SecurityGrade");

const SourcesSchema = z
  .object({
    sources: z.array(
      z.object({
        source: z.string(),
        provider: z.string(),
        grade: GradeSchema.nullable(),
        dedupKey: z.string().nullable(),
        configured: z.boolean(),
        messages: z
          .array(z.object({ kind: z.string(), count: z.number().int(), lastAt: z.string(), lastDetail: z.string() }))
          .openapi({ description: "provider messages that are not deliveries (lifecycle messages, confirmed subscriptions), counted apart" }),
        rotation: z.object({
          inProgress: z.boolean().openapi({ description: "the previous secret is set" }),
          previousLastMatchedAt: z.string().nullable().openapi({ description: "when the previous secret last verified a delivery (noted at most once a minute)" }),
        }),
      }),
    ),
  })
  .openapi("Sources");

const sourcesRoute = createRoute({
  method: "get",
  path: "/sources",
  summary: "Every source, its security grade, dedup key, and rotation state",
  security: BEARER_SECURITY,
  responses: {
    200: { description: "the sources", content: { "application/json": { schema: SourcesSchema } } },
    ...errorResponses(),
  },
});

export const sourceRoutes = adminRouter().openapi(sourcesRoute, async (c) => {
  const store = openStore(c.env);
  const [uses, messages] = await Promise.all([store.previousSecretUses(), store.providerMessages()]);
  const vars = c.env as unknown as Record<string, unknown>;
  const sources = Object.entries(SOURCES).map(([source, provider]) => {
    const previous = vars[previousSecretVarName(source)];
    return {
      source,
      provider: provider.kind,
      grade: provider.grade ?? null,
      dedupKey: provider.dedupKey ?? null,
      configured: secretsFor(c.env, source).length > 0,
      messages: messages.filter((message) => message.source === source).map(({ kind, count, lastAt, lastDetail }) => ({ kind, count, lastAt, lastDetail })),
      rotation: { inProgress: typeof previous === "string" && previous.length > 0, previousLastMatchedAt: uses[source] ?? null },
    };
  });
  return c.json({ sources }, 200);
});
