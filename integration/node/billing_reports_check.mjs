// What the providers report, billed, through the official SDKs (run by integration/billing_reports_test.go against a live
// gateway in front of fake providers): each call is made with a key of its own account, so that
// the test can read what each was charged from that account's ledger. Prints one line per call
// and "all ok" at the end; exits non-zero on the first failure.
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import { check } from "./genai_check.mjs";

const { GATEWAY: gateway } = process.env;
const openai = (apiKey) => new OpenAI({ baseURL: `${gateway}/v1`, apiKey, maxRetries: 0 });

// Gemini: generateContent and its stream (alt=sse), whose usage has a tool-use prompt and thoughts.
const genai = new GoogleGenAI({ apiKey: "mg-gap-gemini", httpOptions: { baseUrl: gateway } });
const gen = await genai.models.generateContent({ model: "gap-gemini", contents: "search the web" });
check("gemini generateContent", gen.text === "found it" && gen.usageMetadata?.toolUsePromptTokenCount === 200, gen);
let streamed = "";
for await (const chunk of await genai.models.generateContentStream({ model: "gap-gemini", contents: "search the web" })) {
  streamed += chunk.text ?? "";
}
check("gemini generateContentStream", streamed === "found it", streamed);

// Anthropic: a message and a stream whose usage reports web searches (server_tool_use).
const anthropic = new Anthropic({ baseURL: gateway, apiKey: "mg-gap-claude", maxRetries: 0 });
const msg = await anthropic.messages.create({ model: "gap-claude", max_tokens: 100, messages: [{ role: "user", content: "search" }] });
check("anthropic message", msg.usage?.server_tool_use?.web_search_requests === 3 && msg.usage.output_tokens === 40, msg);
const final = await anthropic.messages.stream({ model: "gap-claude", max_tokens: 100, messages: [{ role: "user", content: "search" }] }).finalMessage();
check("anthropic stream", final.usage?.server_tool_use?.web_search_requests === 3 && final.usage.output_tokens === 40, final);

// OpenAI-compatible: a 200 whose body is only an error, and a stream whose only event is one.
const errors = openai("mg-gap-errors");
const errorAnswer = await errors.chat.completions.create({ model: "gap-chat", max_tokens: 100, messages: [{ role: "user", content: "error-json" }] });
check("chat answered 200 with an error object", errorAnswer.error?.type === "server_error" && errorAnswer.choices === undefined, errorAnswer);
let streamError;
try {
  for await (const _ of await errors.chat.completions.create({ model: "gap-chat", max_tokens: 100, stream: true, messages: [{ role: "user", content: "error-stream" }] })) {
    // no chunk comes before the error
  }
} catch (e) {
  streamError = e;
}
check("chat stream of one error event", streamError instanceof OpenAI.APIError, String(streamError));

// OpenAI Responses: a stream whose only event is an error event, and one whose only event is
// response.failed without usage or output.
// responsesStream streams a Responses answer to input through client: the events' types, and
// what the SDK threw (undefined when nothing).
async function responsesStream(client, input) {
  const events = [];
  try {
    for await (const e of await client.responses.create({ model: "gap-chat", max_output_tokens: 100, stream: true, input })) {
      events.push(e.type);
    }
  } catch (e) {
    return { events, failure: e };
  }
  return { events, failure: undefined };
}
for (const say of ["error-stream", "failed-stream"]) {
  const { events, failure } = await responsesStream(errors, say);
  check(`responses ${say}`, failure !== undefined || events.join() === "response.failed", { events, failure: String(failure) });
}

// OpenAI Responses streams that open (response.created, response.in_progress) and then fail,
// without output: with response.failed, and with an error event (which the SDK throws).
for (const [say, want] of [["opened-failed", "response.created,response.in_progress,response.failed"], ["opened-error", "response.created,response.in_progress"]]) {
  const { events, failure } = await responsesStream(errors, say);
  check(`responses ${say}`, events.join() === want && (say === "opened-error") === (failure instanceof OpenAI.APIError), { events, failure: String(failure) });
}
// One that failed after it streamed an output item and a delta.
const late = [];
for await (const e of await openai("mg-gap-late").responses.create({ model: "gap-chat", max_output_tokens: 100, stream: true, input: "output-failed" })) {
  late.push(e.type);
}
check("responses output-failed", late.at(-1) === "response.failed" && late.includes("response.output_text.delta"), late);

// A stream whose lines end with a bare CR.
let text = "";
let usage;
for await (const chunk of await openai("mg-gap-cr").chat.completions.create({
  model: "gap-chat", max_tokens: 100, stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "cr-stream" }],
})) {
  text += chunk.choices[0]?.delta?.content ?? "";
  usage = chunk.usage ?? usage;
}
check("chat stream with CR line ends", text === "abc" && usage?.completion_tokens === 3, { text, usage });

// An image of quality auto; the answer reports the quality and size it made.
const img = await openai("mg-gap-image").images.generate({ model: "gap-image", prompt: "a lighthouse", n: 2, size: "1024x1024", quality: "auto" });
check("image generation of quality auto", img.data?.length === 2 && img.quality === "low" && img.size === "1024x1024", img);

// Streamed images (stream: true): events as the SDK yields them, or the error it throws.
const imageStream = openai("mg-gap-image-stream");
for (const [prompt, quality, want, fails] of [
  ["stream-auto", "auto", "image_generation.partial_image,image_generation.completed", false],
  ["stream-named-high", "high", "image_generation.partial_image,image_generation.completed", false],
  ["stream-error", "auto", "", true],
  ["stream-partial", "auto", "image_generation.partial_image", true],
]) {
  const events = [];
  let failure;
  try {
    for await (const e of await imageStream.images.generate({ model: "gap-image", prompt, n: 1, size: "1024x1024", quality, stream: true, partial_images: 1 })) {
      events.push(e.type);
    }
  } catch (e) {
    failure = e;
  }
  check(`image generation ${prompt}`, events.join() === want && fails === (failure instanceof OpenAI.APIError), { events, failure: String(failure) });
}
// A streamed edit (JSON, with public image URLs, as the edit endpoint takes it).
const edited = [];
for await (const e of await openai("mg-gap-edit-stream").post("/images/edits", {
  body: { model: "gap-image", prompt: "make it blue", images: [{ image_url: "https://cdn.example.com/cat.png" }], size: "1024x1024", quality: "auto", stream: true },
  stream: true,
})) {
  edited.push(e.type);
}
check("streamed image edit", edited.join() === "image_edit.partial_image,image_edit.completed", edited);
console.log("all ok");
