// Options the official SDKs offer their callers whose cost the gateway does not see in the
// answer (run by integration/unseen_costs_sdk_test.go against a live gateway in front of
// providerOptionsFake). Each call is made and its outcome printed, one line each: "ok <name>"
// when the SDK got its answer, "refused <name> <status> <message>" when it threw an API error.
// Prints "done" at the end.
import OpenAI from "openai";
import { GoogleGenAI } from "@google/genai";

const { GATEWAY: gateway } = process.env;

async function attempt(name, fn) {
  try {
    console.log(`ok ${name} ${JSON.stringify(await fn())}`);
  } catch (e) {
    console.log(`refused ${name} ${e.status ?? e.code ?? "none"} ${e.message}`);
  }
}

// @google/genai: a response field mask, sent as the X-Goog-FieldMask header through the SDK's
// own httpOptions.headers, that leaves thoughtsTokenCount out of usageMetadata.
const genai = new GoogleGenAI({
  apiKey: "mg-atk-a",
  httpOptions: { baseUrl: gateway, headers: { "X-Goog-FieldMask": "candidates,usageMetadata.promptTokenCount,usageMetadata.candidatesTokenCount" } },
});
await attempt("gemini", async () => {
  const gen = await genai.models.generateContent({ model: "atk-gemini", contents: "think, then answer in three words" });
  return gen.usageMetadata;
});

// openai: service_tier "priority", a typed parameter of chat.completions.create.
const openai = new OpenAI({ baseURL: `${gateway}/v1`, apiKey: "mg-atk-b", maxRetries: 0 });
await attempt("chat", async () => {
  const chat = await openai.chat.completions.create({ model: "atk-chat", max_tokens: 5, service_tier: "priority", messages: [{ role: "user", content: "hi" }] });
  return chat.service_tier;
});
console.log("done");
