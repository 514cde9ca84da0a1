// The Google Gen AI SDK's generate-content calls through a live gateway: generateContent, its
// stream, countTokens and embedContent (which the SDK sends as batchEmbedContents), each with
// only the base URL and the key changed. The SDK sends the key as x-goog-api-key, to the API
// version it was built for: /v1beta up to its version 2, /v1 from version 3 on. GENAI_API_VERSION
// says which one this install must have used; the paths the SDK fetched are checked against it.
// Imported by sdk_check.mjs; run alone (node genai_check.mjs) for an install that has only
// @google/genai. Prints one line per check and exits non-zero on the first failure.
import { ApiError, GoogleGenAI } from "@google/genai";

// fetched records the path of every request the SDK sends; the SDK calls the global fetch.
const fetched = [];
const realFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  fetched.push(new URL(typeof input === "string" || input instanceof URL ? input : input.url).pathname);
  return realFetch(input, init);
};

export function check(name, ok, detail) {
  if (!ok) {
    throw new Error(`${name} failed: ${JSON.stringify(detail)}`);
  }
  console.log(`ok ${name}`);
}

// genaiChecks runs the calls with the SDK's default API version, which must be wantVersion;
// brokeKey is a key of an account with no balance, for the priced model gemini-priced.
export async function genaiChecks(gateway, key, wantVersion, brokeKey) {
  const genai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gateway } });
  fetched.length = 0;

  const gen = await genai.models.generateContent({ model: "gemini-x", contents: "hello" });
  check("genai generateContent", gen.text === "hello from the fake generateContent upstream", gen);
  check(`genai generateContent went to /${wantVersion}`, fetched[0] === `/${wantVersion}/models/gemini-x:generateContent`, fetched);

  let streamed = "";
  for await (const chunk of await genai.models.generateContentStream({ model: "gemini-x", contents: "hello" })) {
    streamed += chunk.text ?? "";
  }
  check("genai generateContentStream", streamed === "hello from the fake stream", streamed);

  const count = await genai.models.countTokens({ model: "gemini-x", contents: "hello" });
  check("genai countTokens", count.totalTokens === 3, count);

  const emb = await genai.models.embedContent({ model: "gemini-x", contents: ["a", "b"] });
  check("genai embedContent", emb.embeddings?.length === 2 && emb.embeddings[0].values?.length === 3, emb);

  const want = ["generateContent", "streamGenerateContent", "countTokens", "batchEmbedContents"].map((m) => `/${wantVersion}/models/gemini-x:${m}`);
  check(`genai sent every call to /${wantVersion}`, JSON.stringify(fetched) === JSON.stringify(want), fetched);

  // A model the key may not use, and a wrong key, through the SDK's own error type.
  let status = 0;
  try {
    await genai.models.generateContent({ model: "claude-x", contents: "hello" });
  } catch (e) {
    status = e.status;
  }
  check("genai model outside the key's list is 403", status === 403, { status });
  status = 0;
  try {
    await new GoogleGenAI({ apiKey: "mg-wrong", httpOptions: { baseUrl: gateway } }).models.generateContent({ model: "gemini-x", contents: "x" });
  } catch (e) {
    status = e.status;
  }
  check("genai wrong key is 401", status === 401, { status });

  // Past the balance: the gateway's 402 in Google's shape reaches the caller as the SDK's
  // ApiError with the status and the gateway's message, on the call and on its stream.
  const broke = new GoogleGenAI({ apiKey: brokeKey, httpOptions: { baseUrl: gateway } });
  for (const [name, call] of [
    ["generateContent", () => broke.models.generateContent({ model: "gemini-priced", contents: "hello" })],
    ["generateContentStream", async () => {
      for await (const _ of await broke.models.generateContentStream({ model: "gemini-priced", contents: "hello" })) {
        // not reached: the gateway refuses before any chunk
      }
    }],
  ]) {
    let got;
    try {
      await call();
      got = "no error";
    } catch (e) {
      got = e instanceof ApiError ? { status: e.status, message: e.message } : `not an ApiError: ${e}`;
    }
    check(`genai ${name} past the balance is an ApiError 402 with a message`,
      got?.status === 402 && typeof got.message === "string" && got.message.includes("FAILED_PRECONDITION") &&
        got.message.includes("insufficient_quota"), got);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { GATEWAY, NARROW_KEY, GENAI_API_VERSION, BROKE_KEY } = process.env;
  if (!GATEWAY || !NARROW_KEY || !GENAI_API_VERSION || !BROKE_KEY) {
    throw new Error("set GATEWAY, NARROW_KEY, GENAI_API_VERSION and BROKE_KEY");
  }
  await genaiChecks(GATEWAY, NARROW_KEY, GENAI_API_VERSION, BROKE_KEY);
  console.log("all ok");
}
