// Runs the official Node SDKs of the three protocols mediagw passes through against a live
// gateway. Each client is made with only its base URL and API key changed. Run by
// integration/node_test.go with GATEWAY (the gateway's base URL), KEY (a mediagw key that may use
// every model), NARROW_KEY (one that may use only gemini-* and sim-*) and GENAI_API_VERSION (the
// API version the installed @google/genai sends to); prints one line per check and exits
// non-zero on the first failure.
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { check, genaiChecks } from "./genai_check.mjs";

const { GATEWAY: gateway, KEY: key, NARROW_KEY: narrowKey, GENAI_API_VERSION: genaiVersion, BROKE_KEY: brokeKey } = process.env;
if (!gateway || !key || !narrowKey || !genaiVersion || !brokeKey) {
  throw new Error("set GATEWAY, KEY, NARROW_KEY, GENAI_API_VERSION and BROKE_KEY");
}

const openai = new OpenAI({ baseURL: `${gateway}/v1`, apiKey: key, maxRetries: 0 });

const models = [];
const items = {};
for await (const m of openai.models.list()) {
  models.push(m.id);
  items[m.id] = m;
}
check("openai models.list", models.includes("sim-chat") && models.includes("claude-x"), models);
// The Caddyfile prices sim-chat per million tokens and leaves claude-x unpriced: the SDK's
// model items carry the gateway's `pricing` addition as it was sent.
const pricing = items["sim-chat"]?.pricing;
check(
  "openai models.list pricing",
  pricing?.currency === "EUR" &&
    JSON.stringify(pricing.prices) ===
      JSON.stringify([
        { unit: "input_token", per: 1000000, amount: "0.15" },
        { unit: "output_token", per: 1000000, amount: "0.6" },
      ]) &&
    items["claude-x"] !== undefined &&
    items["claude-x"].pricing === undefined,
  items,
);

// models.retrieve answers the models a key may use; any other is 404 in the OpenAI shape, the
// same for a model that exists but the key may not use as for one that does not exist.
const retrieved = await openai.models.retrieve("sim-chat");
check("openai models.retrieve", retrieved.id === "sim-chat" && retrieved.object === "model", retrieved);
const narrow = new OpenAI({ baseURL: `${gateway}/v1`, apiKey: narrowKey, maxRetries: 0 });
check("openai models.retrieve, narrow key", (await narrow.models.retrieve("gemini-x")).id === "gemini-x", "gemini-x");
const notFound = {};
for (const [name, client, model] of [["unknown", openai, "no-such-model"], ["not the key's", narrow, "claude-x"]]) {
  try {
    await client.models.retrieve(model);
  } catch (e) {
    notFound[name] = e instanceof OpenAI.NotFoundError ? { status: e.status, code: e.code, type: e.type, param: e.param } : String(e);
  }
}
check("openai models.retrieve of a model the key may not use is 404 model_not_found",
  notFound.unknown?.status === 404 && notFound.unknown.code === "model_not_found" &&
    JSON.stringify(notFound["not the key's"]) === JSON.stringify(notFound.unknown), notFound);

const chat = await openai.chat.completions.create({
  model: "sim-chat",
  messages: [{ role: "user", content: "hello" }],
});
check("openai chat.completions", chat.choices[0]?.message?.content?.length > 0, chat);

const stream = await openai.chat.completions.create({
  model: "sim-chat",
  stream: true,
  messages: [{ role: "user", content: "hello" }],
});
let chunks = 0;
let text = "";
for await (const chunk of stream) {
  chunks++;
  text += chunk.choices[0]?.delta?.content ?? "";
}
check("openai chat.completions stream", chunks >= 2 && text.length > 0, { chunks, text });

const emb = await openai.embeddings.create({ model: "sim-embedding", input: "hello" });
check("openai embeddings", emb.data[0]?.embedding?.length > 0, emb);

// The Anthropic SDK sends the key as x-api-key, its default.
const anthropic = new Anthropic({ baseURL: gateway, apiKey: key, maxRetries: 0 });
const msg = await anthropic.messages.create({
  model: "claude-x",
  max_tokens: 16,
  messages: [{ role: "user", content: "hello" }],
});
check("anthropic messages", msg.content[0]?.type === "text" && msg.content[0].text === "hello from the fake messages upstream", msg);

// The Google Gen AI SDK sends the key as x-goog-api-key.
await genaiChecks(gateway, narrowKey, genaiVersion, brokeKey);

// A wrong key is refused with 401 through each SDK's own error type.
for (const [name, call] of [
  ["openai", () => new OpenAI({ baseURL: `${gateway}/v1`, apiKey: "mg-wrong", maxRetries: 0 }).models.list()],
  ["anthropic", () => new Anthropic({ baseURL: gateway, apiKey: "mg-wrong", maxRetries: 0 }).messages.create({ model: "claude-x", max_tokens: 1, messages: [{ role: "user", content: "x" }] })],
]) {
  let status = 0;
  try {
    await call();
  } catch (e) {
    status = e.status;
  }
  check(`${name} wrong key is 401`, status === 401, { status });
}
// The gateway's own refusals on the messages protocol are in Anthropic's shape: the SDK reads
// them as its APIError subclass with the status and Anthropic's error type.
const anthropicRefusals = {};
for (const [name, apiKey, call] of [
  ["402 past the balance", brokeKey, (c) => c.messages.create({ model: "claude-priced", max_tokens: 1, messages: [{ role: "user", content: "x" }] })],
  ["401 wrong key", "mg-wrong", (c) => c.messages.create({ model: "claude-x", max_tokens: 1, messages: [{ role: "user", content: "x" }] })],
  ["401 wrong key, countTokens", "mg-wrong", (c) => c.messages.countTokens({ model: "claude-x", messages: [{ role: "user", content: "x" }] })],
  ["401 wrong key, batches", "mg-wrong", (c) => c.messages.batches.retrieve("msgbatch_x")],
]) {
  try {
    await call(new Anthropic({ baseURL: gateway, apiKey, maxRetries: 0 }));
    anthropicRefusals[name] = "no error";
  } catch (e) {
    anthropicRefusals[name] = e instanceof Anthropic.APIError ? { status: e.status, type: e.type, message: e.apiMessage } : `not an APIError: ${e}`;
  }
}
const refused = (name, status, type) => {
  const r = anthropicRefusals[name];
  return r?.status === status && r.type === type && typeof r.message === "string" && r.message.length > 0;
};
check("anthropic refusals are APIErrors with status and type",
  refused("402 past the balance", 402, "billing_error") && refused("401 wrong key", 401, "authentication_error") &&
    refused("401 wrong key, countTokens", 401, "authentication_error") && refused("401 wrong key, batches", 401, "authentication_error"),
  anthropicRefusals);
console.log("all ok");
