// Streams billed through the official SDKs (run by integration/billing_attack_test.go against a
// live gateway in front of fake providers): an Anthropic stream that made no output (it reports
// 30 input tokens and 0 output tokens), and a Gemini stream that the client leaves after its
// third chunk of text. Prints "all ok" at the end; exits non-zero on a failure.
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import { check } from "./genai_check.mjs";

const { GATEWAY: gateway } = process.env;
const anthropic = new Anthropic({ baseURL: gateway, apiKey: "mg-atk-claude", maxRetries: 0 });
const final = await anthropic.messages.stream({ model: "atk-claude", max_tokens: 100, messages: [{ role: "user", content: "say nothing" }] }).finalMessage();
check("anthropic stream without output", final.usage?.output_tokens === 0 && final.usage.input_tokens === 30 && final.content.length === 0, final);

const genai = new GoogleGenAI({ apiKey: "mg-atk-gemini", httpOptions: { baseUrl: gateway } });
const controller = new AbortController();
let text = "";
let chunks = 0;
try {
  for await (const chunk of await genai.models.generateContentStream({ model: "atk-gemini", contents: "write", config: { abortSignal: controller.signal } })) {
    text += chunk.text ?? "";
    if (++chunks === 3) {
      controller.abort(); // the client leaves, before the chunk that counts the output
    }
  }
} catch (e) {
  // the abort ends the stream with an AbortError
}
check("gemini stream left after 3 chunks", text === "The quick brown", text);
console.log("all ok");
