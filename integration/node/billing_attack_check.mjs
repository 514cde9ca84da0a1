// An Anthropic stream that made no output, through the official SDK (run by
// integration/billing_attack_test.go against a live gateway in front of a fake provider whose
// stream reports 30 input tokens and 0 output tokens). Prints "all ok" at the end; exits
// non-zero on a failure.
import Anthropic from "@anthropic-ai/sdk";
import { check } from "./genai_check.mjs";

const { GATEWAY: gateway } = process.env;
const anthropic = new Anthropic({ baseURL: gateway, apiKey: "mg-atk-claude", maxRetries: 0 });
const final = await anthropic.messages.stream({ model: "atk-claude", max_tokens: 100, messages: [{ role: "user", content: "say nothing" }] }).finalMessage();
check("anthropic stream without output", final.usage?.output_tokens === 0 && final.usage.input_tokens === 30 && final.content.length === 0, final);
console.log("all ok");
