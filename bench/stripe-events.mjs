/**
 * A realistic set of Stripe events for the capacity measurement (bench/capacity.mjs). No package on
 * npm ships Stripe's event fixtures (stripe-node has types only), so these are built from the shapes
 * Stripe documents in its API reference (API version 2024-06-20): the event envelope, and the full
 * objects it carries (PaymentIntent, Charge, Customer, Invoice with its lines, Subscription,
 * Checkout Session), with every documented field present, nulls and empty objects included, as a
 * live event carries them. Ids, amounts and times vary from event to event, as they do in a stream.
 */

const TYPES = ["payment_intent.succeeded", "charge.succeeded", "customer.created", "invoice.paid", "customer.subscription.updated", "checkout.session.completed"];

/** A Stripe-like id: prefix and 24 characters of base62 from `seed`. */
function stripeId(prefix, seed) {
  const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  let state = (seed * 2_654_435_761) >>> 0;
  let text = "";
  for (let index = 0; index < 24; index++) {
    state = (state * 1_103_515_245 + 12_345) >>> 0;
    text += alphabet[(state >>> 8) % 62];
  }
  return `${prefix}_${text}`;
}

const address = (seed) => ({ city: ["Berlin", "Lyon", "Austin", "Leeds"][seed % 4], country: ["DE", "FR", "US", "GB"][seed % 4], line1: `${10 + (seed % 90)} Example Street`, line2: null, postal_code: String(10_000 + ((seed * 37) % 89_999)), state: null });

function paymentIntent(seed, created, customer) {
  const amount = 500 + ((seed * 7919) % 99_500);
  return {
    id: stripeId("pi", seed), object: "payment_intent", amount, amount_capturable: 0, amount_details: { tip: {} }, amount_received: amount,
    application: null, application_fee_amount: null, automatic_payment_methods: { allow_redirects: "always", enabled: true },
    canceled_at: null, cancellation_reason: null, capture_method: "automatic_async", client_secret: `${stripeId("pi", seed)}_secret_${stripeId("x", seed + 1).slice(2)}`,
    confirmation_method: "automatic", created, currency: "usd", customer, description: `Order #${100_000 + seed}`, invoice: null, last_payment_error: null,
    latest_charge: stripeId("ch", seed), livemode: true, metadata: { order_id: String(100_000 + seed), channel: "web" }, next_action: null, on_behalf_of: null,
    payment_method: stripeId("pm", seed), payment_method_configuration_details: { id: stripeId("pmc", 1), parent: null },
    payment_method_options: { card: { installments: null, mandate_options: null, network: null, request_three_d_secure: "automatic" }, link: { persistent_token: null } },
    payment_method_types: ["card", "link"], processing: null, receipt_email: `customer${seed}@example.com`, review: null, setup_future_usage: null,
    shipping: null, source: null, statement_descriptor: null, statement_descriptor_suffix: null, status: "succeeded", transfer_data: null, transfer_group: null,
  };
}

function charge(seed, created, customer) {
  const amount = 500 + ((seed * 7919) % 99_500);
  return {
    id: stripeId("ch", seed), object: "charge", amount, amount_captured: amount, amount_refunded: 0, application: null, application_fee: null, application_fee_amount: null,
    balance_transaction: stripeId("txn", seed), billing_details: { address: address(seed), email: `customer${seed}@example.com`, name: `Customer ${seed}`, phone: null },
    calculated_statement_descriptor: "EXAMPLE SHOP", captured: true, created, currency: "usd", customer, description: `Order #${100_000 + seed}`, disputed: false,
    failure_balance_transaction: null, failure_code: null, failure_message: null, fraud_details: {}, invoice: null, livemode: true, metadata: { order_id: String(100_000 + seed) },
    on_behalf_of: null, outcome: { network_status: "approved_by_network", reason: null, risk_level: "normal", risk_score: seed % 60, seller_message: "Payment complete.", type: "authorized" },
    paid: true, payment_intent: stripeId("pi", seed), payment_method: stripeId("pm", seed),
    payment_method_details: {
      card: {
        amount_authorized: amount, brand: ["visa", "mastercard", "amex"][seed % 3], checks: { address_line1_check: "pass", address_postal_code_check: "pass", cvc_check: "pass" },
        country: "US", exp_month: 1 + (seed % 12), exp_year: 2027 + (seed % 5), extended_authorization: { status: "disabled" }, fingerprint: stripeId("fp", seed).slice(3, 19),
        funding: "credit", incremental_authorization: { status: "unavailable" }, installments: null, last4: String(1000 + (seed % 9000)), mandate: null,
        multicapture: { status: "unavailable" }, network: ["visa", "mastercard", "amex"][seed % 3], network_token: { used: false },
        overcapture: { maximum_amount_capturable: amount, status: "unavailable" }, three_d_secure: null, wallet: null,
      },
      type: "card",
    },
    radar_options: {}, receipt_email: `customer${seed}@example.com`, receipt_number: null,
    receipt_url: `https://pay.stripe.com/receipts/payment/${stripeId("x", seed).slice(2)}${stripeId("y", seed + 7).slice(2)}`, refunded: false, review: null, shipping: null,
    source: null, source_transfer: null, statement_descriptor: null, statement_descriptor_suffix: null, status: "succeeded", transfer_data: null, transfer_group: null,
  };
}

function customer(seed, created) {
  return {
    id: stripeId("cus", seed), object: "customer", address: address(seed), balance: 0, created, currency: null, default_source: null, delinquent: false,
    description: null, discount: null, email: `customer${seed}@example.com`, invoice_prefix: stripeId("x", seed).slice(2, 10).toUpperCase(),
    invoice_settings: { custom_fields: null, default_payment_method: null, footer: null, rendering_options: null }, livemode: true,
    metadata: { account_id: String(50_000 + seed) }, name: `Customer ${seed}`, next_invoice_sequence: 1, phone: null, preferred_locales: ["en"], shipping: null,
    tax_exempt: "none", test_clock: null,
  };
}

function price(seed, created) {
  const amount = [900, 1900, 4900][seed % 3];
  return {
    id: stripeId("price", seed % 3), object: "price", active: true, billing_scheme: "per_unit", created: created - 8_000_000, currency: "usd", custom_unit_amount: null,
    livemode: true, lookup_key: ["starter", "team", "business"][seed % 3], metadata: {}, nickname: null, product: stripeId("prod", seed % 3),
    recurring: { aggregate_usage: null, interval: "month", interval_count: 1, meter: null, trial_period_days: null, usage_type: "licensed" },
    tax_behavior: "exclusive", tiers_mode: null, transform_quantity: null, type: "recurring", unit_amount: amount, unit_amount_decimal: String(amount),
  };
}

function invoice(seed, created, customerId) {
  const item = price(seed, created);
  const quantity = 1 + (seed % 5);
  const amount = item.unit_amount * quantity;
  const period = { end: created, start: created - 2_592_000 };
  return {
    id: stripeId("in", seed), object: "invoice", account_country: "US", account_name: "Example Shop", account_tax_ids: null, amount_due: amount, amount_paid: amount,
    amount_remaining: 0, amount_shipping: 0, application: null, application_fee_amount: null, attempt_count: 1, attempted: true, auto_advance: false,
    automatic_tax: { enabled: false, liability: null, status: null }, billing_reason: "subscription_cycle", charge: stripeId("ch", seed), collection_method: "charge_automatically",
    created, currency: "usd", custom_fields: null, customer: customerId, customer_address: address(seed), customer_email: `customer${seed}@example.com`,
    customer_name: `Customer ${seed}`, customer_phone: null, customer_shipping: null, customer_tax_exempt: "none", customer_tax_ids: [], default_payment_method: null,
    default_source: null, default_tax_rates: [], description: null, discount: null, discounts: [], due_date: null, effective_at: created, ending_balance: 0, footer: null,
    from_invoice: null, hosted_invoice_url: `https://invoice.stripe.com/i/acct_1Example/live_${stripeId("x", seed).slice(2)}`, invoice_pdf: `https://pay.stripe.com/invoice/acct_1Example/live_${stripeId("x", seed).slice(2)}/pdf`,
    issuer: { type: "self" }, last_finalization_error: null, latest_revision: null,
    lines: {
      object: "list",
      data: [
        {
          id: stripeId("il", seed), object: "line_item", amount, amount_excluding_tax: amount, currency: "usd", description: `${quantity} × ${item.lookup_key} (at $${item.unit_amount / 100} / month)`,
          discount_amounts: [], discountable: true, discounts: [], invoice: stripeId("in", seed), livemode: true, metadata: {}, period, plan: null, price: item,
          proration: false, proration_details: { credited_items: null }, quantity, subscription: stripeId("sub", seed), subscription_item: stripeId("si", seed), tax_amounts: [],
          tax_rates: [], type: "subscription", unit_amount_excluding_tax: String(item.unit_amount),
        },
      ],
      has_more: false, total_count: 1, url: `/v1/invoices/${stripeId("in", seed)}/lines`,
    },
    livemode: true, metadata: {}, next_payment_attempt: null, number: `${stripeId("x", seed).slice(2, 10).toUpperCase()}-${String(1 + (seed % 40)).padStart(4, "0")}`, on_behalf_of: null,
    paid: true, paid_out_of_band: false, payment_intent: stripeId("pi", seed), payment_settings: { default_mandate: null, payment_method_options: null, payment_method_types: null },
    period_end: period.end, period_start: period.start, post_payment_credit_notes_amount: 0, pre_payment_credit_notes_amount: 0, quote: null, receipt_number: null,
    rendering: null, shipping_cost: null, shipping_details: null, starting_balance: 0, statement_descriptor: null, status: "paid",
    status_transitions: { finalized_at: created, marked_uncollectible_at: null, paid_at: created + 2, voided_at: null }, subscription: stripeId("sub", seed),
    subscription_details: { metadata: {} }, subtotal: amount, subtotal_excluding_tax: amount, tax: null, test_clock: null, total: amount, total_discount_amounts: [],
    total_excluding_tax: amount, total_tax_amounts: [], transfer_data: null, webhooks_delivered_at: created,
  };
}

function subscription(seed, created, customerId) {
  const item = price(seed, created);
  const period = { current_period_end: created + 2_592_000, current_period_start: created };
  return {
    id: stripeId("sub", seed), object: "subscription", application: null, application_fee_percent: null, automatic_tax: { enabled: false, liability: null },
    billing_cycle_anchor: created - 7_776_000, billing_cycle_anchor_config: null, billing_thresholds: null, cancel_at: null, cancel_at_period_end: false, canceled_at: null,
    cancellation_details: { comment: null, feedback: null, reason: null }, collection_method: "charge_automatically", created: created - 7_776_000, currency: "usd",
    ...period, customer: customerId, days_until_due: null, default_payment_method: stripeId("pm", seed), default_source: null, default_tax_rates: [], description: null,
    discount: null, discounts: [], ended_at: null, invoice_settings: { account_tax_ids: null, issuer: { type: "self" } },
    items: {
      object: "list",
      data: [{ id: stripeId("si", seed), object: "subscription_item", billing_thresholds: null, created: created - 7_776_000, discounts: [], metadata: {}, plan: null, price: item, quantity: 1 + (seed % 5), subscription: stripeId("sub", seed), tax_rates: [] }],
      has_more: false, total_count: 1, url: `/v1/subscription_items?subscription=${stripeId("sub", seed)}`,
    },
    latest_invoice: stripeId("in", seed), livemode: true, metadata: { plan: item.lookup_key }, next_pending_invoice_item_invoice: null, on_behalf_of: null,
    pause_collection: null, payment_settings: { payment_method_options: null, payment_method_types: null, save_default_payment_method: "off" },
    pending_invoice_item_interval: null, pending_setup_intent: null, pending_update: null, schedule: null, start_date: created - 7_776_000, status: "active",
    test_clock: null, transfer_data: null, trial_end: null, trial_settings: { end_behavior: { missing_payment_method: "create_invoice" } }, trial_start: null,
  };
}

function checkoutSession(seed, created, customerId) {
  const amount = 500 + ((seed * 7919) % 99_500);
  return {
    id: `cs_live_${stripeId("x", seed).slice(2)}${stripeId("y", seed + 3).slice(2)}`, object: "checkout.session", after_expiration: null, allow_promotion_codes: null,
    amount_subtotal: amount, amount_total: amount, automatic_tax: { enabled: false, liability: null, status: null }, billing_address_collection: null,
    cancel_url: "https://shop.example.com/cart", client_reference_id: String(100_000 + seed), client_secret: null, consent: null, consent_collection: null, created,
    currency: "usd", currency_conversion: null, custom_fields: [], custom_text: { after_submit: null, shipping_address: null, submit: null, terms_of_service_acceptance: null },
    customer: customerId, customer_creation: "if_required",
    customer_details: { address: address(seed), email: `customer${seed}@example.com`, name: `Customer ${seed}`, phone: null, tax_exempt: "none", tax_ids: [] },
    customer_email: null, expires_at: created + 86_400, invoice: null, invoice_creation: { enabled: false, invoice_data: { account_tax_ids: null, custom_fields: null, description: null, footer: null, issuer: null, metadata: {}, rendering_options: null } },
    livemode: true, locale: null, metadata: { order_id: String(100_000 + seed) }, mode: "payment", payment_intent: stripeId("pi", seed), payment_link: null,
    payment_method_collection: "if_required", payment_method_configuration_details: { id: stripeId("pmc", 1), parent: null },
    payment_method_options: { card: { request_three_d_secure: "automatic" } }, payment_method_types: ["card", "link"], payment_status: "paid",
    phone_number_collection: { enabled: false }, recovered_from: null, saved_payment_method_options: null, setup_intent: null, shipping_address_collection: null,
    shipping_cost: null, shipping_details: null, shipping_options: [], status: "complete", submit_type: null, subscription: null,
    success_url: "https://shop.example.com/thanks?session_id={CHECKOUT_SESSION_ID}", total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 }, ui_mode: "hosted", url: null,
  };
}

/** The `index`-th event of the set (types in turn), created `created` (Unix seconds). */
function stripeEvent(index, created) {
  const type = TYPES[index % TYPES.length];
  const seed = 1_000 + index;
  // Ids from `seed`: distinct for each index, the same for the same index.
  const customerId = stripeId("cus", seed);
  const object = {
    "payment_intent.succeeded": () => paymentIntent(seed, created, customerId),
    "charge.succeeded": () => charge(seed, created, customerId),
    "customer.created": () => customer(seed, created),
    "invoice.paid": () => invoice(seed, created, customerId),
    "customer.subscription.updated": () => subscription(seed, created, customerId),
    "checkout.session.completed": () => checkoutSession(seed, created, customerId),
  }[type]();
  const previous = type === "customer.subscription.updated" ? { previous_attributes: { current_period_end: created, current_period_start: created - 2_592_000, latest_invoice: stripeId("in", seed - 1) } } : {};
  return {
    id: stripeId("evt", seed), object: "event", api_version: "2024-06-20", created, data: { object, ...previous }, livemode: true, pending_webhooks: 1 + (index % 2),
    // A dashboard or API action carries its request's id; automatic events (a renewal, a charge) none.
    request: type === "customer.created" ? { id: stripeId("req", seed).slice(0, 18), idempotency_key: crypto.randomUUID() } : { id: null, idempotency_key: null },
    type,
  };
}

/** `count` Stripe events, the six types in turn, from the `first`-th on (each index its own ids). */
export function stripeEvents(count, { first = 0, createdAt = Math.floor(Date.now() / 1000) } = {}) {
  return Array.from({ length: count }, (_, index) => stripeEvent(first + index, createdAt - (count - index)));
}
