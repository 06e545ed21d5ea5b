/**
 * The admin API's schemas: what the routes validate with and what `/admin/openapi.json` is
 * generated from, so the document cannot drift from the code.
 */
import { z } from "@hono/zod-openapi";
import { DELIVERY_STATUSES } from "../../store";
import { MAX_DELIVERY_ID_LENGTH } from "../receiver";
import { decodeCursor } from "../cursor";

export const DEFAULT_LIST_LIMIT = 50;
export const MAX_LIST_LIMIT = 200;
export const DEFAULT_BULK_REPLAY_LIMIT = 100;
export const MAX_BULK_REPLAY_LIMIT = 500;

export const ErrorSchema = z
  .object({
    error: z.string().openapi({ example: "not_found" }),
    message: z.string().openapi({ example: "no delivery standard/msg_1" }),
  })
  .openapi("Error");

const StatusSchema = z.enum(DELIVERY_STATUSES).openapi("DeliveryStatus");
const SourceSchema = z.string().min(1).max(100).openapi({ example: "stripe" });

/** A subscriber's name (handler-api/registry.ts SUBSCRIBER_NAME). */
const SubscriberSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/)
  .openapi({ example: "crm", description: "a subscriber of the source: a code subscriber's name (`handler` by default) or a forward destination's (`forward`, or `<name>` of `<SOURCE>_FORWARD_<NAME>_URL`)" });

/** No NUL: Postgres cannot compare text holding one (the store keeps an event type's NUL as U+FFFD). */
const EventTypeSchema = z
  .string()
  .min(1)
  .max(200)
  .refine((text) => !text.includes("\u0000"), "must not contain NUL")
  .openapi({ example: "invoice.paid" });

/** A time bound, any ISO 8601 date-time with an offset; compared as the stored UTC form. */
const TimeBoundSchema = z.iso
  .datetime({ offset: true })
  .transform((text) => new Date(text).toISOString())
  .openapi({ example: "2026-12-03T00:00:00Z" });

/** What a listing and a bulk replay can be narrowed to, besides the status and source. */
const FilterFields = {
  eventType: EventTypeSchema.optional(),
  since: TimeBoundSchema.optional().openapi({ description: "received at or after this time" }),
  until: TimeBoundSchema.optional().openapi({ description: "received before this time" }),
};

/** `unhandled=true`: only done deliveries no handler matched. */
const UnhandledSchema = z
  .enum(["true", "false"])
  .optional()
  .transform((value) => value === "true")
  .openapi({ description: "`true`: only done deliveries no handler matched" });

const StatusCountsSchema = z
  .object({ received: z.number().int(), processing: z.number().int(), done: z.number().int(), failed: z.number().int(), filtered: z.number().int() })
  .openapi("StatusCounts");

export const StatsSchema = z
  .object({
    counts: StatusCountsSchema,
    unhandled: z.number().int().openapi({ description: "done deliveries that no handler matched" }),
    oldestWaitingSeconds: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "age of the oldest received or processing delivery; null when none waits" }),
    bySource: z.record(z.string(), StatusCountsSchema),
  })
  .openapi("Stats");

export const DeliverySummarySchema = z
  .object({
    source: z.string(),
    id: z.string(),
    eventType: z.string().nullable(),
    status: StatusSchema,
    attempts: z.number().int(),
    error: z.string().nullable(),
    handled: z.boolean().nullable().openapi({ description: "on done: whether a handler matched" }),
    receivedAt: z.string().openapi({ example: "2026-12-03T07:41:45.123Z" }),
    updatedAt: z.string(),
    duplicates: z.number().int().openapi({ description: 'copies answered "duplicate" after this delivery was stored (a provider\'s retries)' }),
    lastDuplicateAt: z.string().nullable().openapi({ description: "when the last duplicate came; null when none did" }),
    subscriber: z.string().nullable().openapi({ description: "the subscriber whose progress this is, when one subscriber took the delivery; null for none, or when it was fanned out" }),
    fanout: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "how many subscribers it was fanned out to, each with its own progress (`runs`); its status then summarises theirs" }),
  })
  .openapi("DeliverySummary");

export const DeliveryListSchema = z
  .object({
    deliveries: z.array(DeliverySummarySchema),
    nextCursor: z.string().nullable().openapi({ description: "pass as `cursor` for the next page; null on the last page" }),
  })
  .openapi("DeliveryList");

const AttemptEntrySchema = z.object({
  attempt: z.number().int().nullable().openapi({ description: "the run's number; null for a replay or a run cut short by the consumer" }),
  at: z.string().nullable().openapi({ description: "when the run started (or the replay happened)" }),
  ms: z.number().int().nullable().openapi({ description: "how long the run took" }),
  outcome: z.enum(["done", "unhandled", "retry", "failed", "vanished", "deferred", "replayed"]),
  error: z.string().nullable(),
  count: z
    .number()
    .int()
    .optional()
    .openapi({ description: "on a deferral repeated in a row with the same error: how many times (at and ms are the latest's)" }),
});

export const DeliveryDetailSchema = DeliverySummarySchema.extend({
  body: z
    .object({
      bytes: z.number().int(),
      text: z.string().nullable().openapi({ description: "the body as text; null when it is not valid UTF-8" }),
      base64: z.string().openapi({ description: "the raw bytes, exactly as signed" }),
    })
    .nullable()
    .openapi({ description: "null once BODY_RETENTION_DAYS cleared it" }),
  headers: z
    .array(z.tuple([z.string(), z.string()]))
    .nullable()
    .openapi({
      description: "the request headers as received, [name, value] in order, names in lower case; credential headers are never stored; null when cleared with the body",
    }),
  attemptLog: z
    .array(AttemptEntrySchema)
    .openapi({ description: "each run and replay, oldest first (the last 50); deferrals in a row with the same error share one entry" }),
  runs: z
    .array(
      z.object({
        subscriber: z.string(),
        status: StatusSchema,
        attempts: z.number().int(),
        error: z.string().nullable(),
        updatedAt: z.string(),
        attemptLog: z.array(AttemptEntrySchema),
      }),
    )
    .openapi({ description: "a fanned-out delivery's subscribers, each with its own progress; empty when one subscriber (or none) took it" }),
}).openapi("DeliveryDetail");

export const ListQuerySchema = z.object({
  status: StatusSchema.optional(),
  source: SourceSchema.optional(),
  subscriber: SubscriberSchema.optional().openapi({ description: "only what this subscriber took; with a status, its own run has that status" }),
  ...FilterFields,
  unhandled: UnhandledSchema,
  limit: z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).default(DEFAULT_LIST_LIMIT),
  cursor: z
    .string()
    .max(2_048)
    .refine((cursor) => decodeCursor(cursor) !== null, "not a cursor this API issued")
    .optional()
    .openapi({ description: "the previous page's nextCursor" }),
});

export const DeliveryParamsSchema = z.object({
  source: SourceSchema.openapi({ param: { name: "source", in: "path" } }),
  id: z
    .string()
    .min(1)
    .max(MAX_DELIVERY_ID_LENGTH)
    // No stored id holds NUL (the receiver refuses it), and Postgres cannot even compare one.
    .refine((id) => !id.includes("\u0000"), "must not contain NUL")
    .openapi({ param: { name: "id", in: "path" }, example: "evt_3PqXyZ" }),
});

export const ReplayQuerySchema = z.object({
  subscriber: SubscriberSchema.optional().openapi({ description: "replay only this subscriber's run of a fanned-out delivery" }),
  force: z
    .enum(["true", "false"])
    .default("false")
    .openapi({ description: "also replay a delivery that is done (its handler runs again), unless retention cleared its body" }),
});

/** The codes a replay of one delivery is refused with (409). */
export const REPLAY_REFUSALS = ["conflict", "body_pruned"] as const;

/** The error shape with the codes spelled out (flat, not an `allOf` of Error). */
export const ReplayRefusedSchema = z
  .object({
    error: z.enum(REPLAY_REFUSALS).openapi({
      description:
        "`conflict`: the delivery is received or processing (still in flight), or done and force is not set; " +
        "`body_pruned`: BODY_RETENTION_DAYS cleared its body, so its handler would run on nothing",
      example: "body_pruned",
    }),
    message: z.string().openapi({ example: "the body of delivery stripe/evt_1 was cleared by retention; it cannot be replayed" }),
  })
  .openapi("ReplayRefused");

export const ReplayedSchema = z
  .object({ status: z.literal("replayed"), source: z.string(), id: z.string(), subscriber: z.string().optional() })
  .openapi("Replayed");

export const BulkReplayBodySchema = z
  .strictObject({
    status: z.literal("failed").openapi({ description: "only failed deliveries are replayed in bulk" }),
    source: SourceSchema.optional(),
    subscriber: SubscriberSchema.optional().openapi({ description: "only this subscriber's failures (the deliveries it alone took, and its runs of fanned-out ones): nothing of the others runs again" }),
    ...FilterFields,
    limit: z.number().int().min(1).max(MAX_BULK_REPLAY_LIMIT).default(DEFAULT_BULK_REPLAY_LIMIT),
  })
  .openapi("BulkReplayRequest");

export const BulkReplayedSchema = z
  .object({
    replayed: z.number().int(),
    remaining: z.number().int().openapi({ description: "failed deliveries left to replay (with their body); call again while > 0" }),
  })
  .openapi("BulkReplayed");
