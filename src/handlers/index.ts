/**
 * Your handlers, by source and event type (`"*"` for any type of a source). Deliveries with no
 * matching handler are marked done and shown as unhandled. See docs/handlers.md.
 */
import { defineHandlers } from "../handler-api";
import { recordPayment } from "./payments";

export const HANDLERS = defineHandlers({
  stripe: {
    "payment_intent.succeeded": recordPayment,
  },
});
