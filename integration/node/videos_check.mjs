// Drives the OpenAI-style video API of a live gateway with the official Node `openai` package,
// made with only its base URL and API key changed: videos.create (which the SDK sends as a
// multipart form), retrieve until completed, list, and downloadContent, which follows the
// gateway's redirect to the result. Run by integration/videos_front_node_test.go with GATEWAY
// (the gateway's base URL), KEY (a mediagw key), MODEL (a Seedance model behind an Ark
// upstream) and VIDEO_SHA256 (the SHA-256 of the result's bytes); prints one line per check
// and exits non-zero on the first failure.
import OpenAI from "openai";
import { createHash } from "node:crypto";

const { GATEWAY: gateway, KEY: key, MODEL: model, VIDEO_SHA256: videoSHA256 } = process.env;
if (!gateway || !key || !model || !videoSHA256) {
  throw new Error("set GATEWAY, KEY, MODEL and VIDEO_SHA256");
}

function check(name, ok, detail) {
  if (!ok) {
    throw new Error(`${name} failed: ${JSON.stringify(detail)}`);
  }
  console.log(`ok ${name}`);
}

const openai = new OpenAI({ baseURL: `${gateway}/v1`, apiKey: key, maxRetries: 0 });

const created = await openai.videos.create({
  model,
  prompt: "a red fox crossing a snowy field",
  seconds: "4",
  size: "1280x720",
  input_reference: { image_url: "https://example.com/fox.png" },
});
check("videos.create", created.object === "video" && created.status === "queued" && created.progress === 0 &&
  created.model === model && created.seconds === "4" && created.size === "1280x720" && created.id.length > 0, created);

let video = created;
const deadline = Date.now() + 60_000;
while (video.status === "queued" || video.status === "in_progress") {
  if (Date.now() > deadline) {
    throw new Error(`the video is still ${video.status} after 60 s`);
  }
  await new Promise((resolve) => setTimeout(resolve, 200));
  video = await openai.videos.retrieve(created.id);
}
check("videos.retrieve until completed", video.id === created.id && video.status === "completed" && video.progress === 100 &&
  video.error === null && typeof video.completed_at === "number" && video.prompt === "a red fox crossing a snowy field", video);

const listed = [];
for await (const v of openai.videos.list({ limit: 1 })) {
  listed.push(v.id);
}
check("videos.list pages through the caller's videos", listed.length === 1 && listed[0] === created.id, listed);

const content = await openai.videos.downloadContent(created.id);
const bytes = Buffer.from(await content.arrayBuffer());
const sha = createHash("sha256").update(bytes).digest("hex");
check("videos.downloadContent", content.ok && sha === videoSHA256, { status: content.status, length: bytes.length, sha });

let notFound;
try {
  await openai.videos.retrieve("cgt-000000000000000000000000");
} catch (e) {
  notFound = e instanceof OpenAI.NotFoundError ? { status: e.status, type: e.type } : String(e);
}
check("videos.retrieve of an unknown id is 404", notFound?.status === 404 && notFound.type === "not_found_error", notFound);

// A create sent again with the same Idempotency-Key (as a client does after a timeout) is the
// same request: the SDK sends its form again with a new multipart boundary, and the gateway
// answers the first create's video, not a second task and not 422 idempotency_key_reused.
const retried = { headers: { "Idempotency-Key": "node-videos-retry-1" } };
const params = { model, prompt: "a heron at dawn", seconds: "4", size: "1280x720" };
const first = await openai.videos.create(params, retried);
let again;
try {
  const { data, response } = await openai.videos.create(params, retried).withResponse();
  again = { id: data.id, replayed: response.headers.get("idempotent-replayed") };
} catch (e) {
  again = { status: e.status, code: e.code, message: e.message };
}
check("videos.create again with its Idempotency-Key answers the first video", again.id === first.id && again.replayed === "true",
  { first: first.id, again });
let changed;
try {
  await openai.videos.create({ ...params, prompt: "another prompt" }, retried);
} catch (e) {
  changed = { status: e.status, code: e.code };
}
check("videos.create with the key and other parameters is 422", changed?.status === 422 && changed.code === "idempotency_key_reused", changed);

console.log("all ok");
