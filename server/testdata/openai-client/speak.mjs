// Speaks to zonos serve through OpenAI's official Node client, the way
// users of that client do, and prints a JSON summary on stdout for
// server/openai_client_test.go:
//
//   ZONOS_BASE_URL  the server's OpenAI base URL (http://127.0.0.1:PORT/v1)
//   ZONOS_API_KEY   a key the server accepts
//   ZONOS_OUT_DIR   where speech.wav and speech.pcm are written
//
// Three requests: a WAV, OpenAI's raw pcm, and one with a wrong key,
// which the client must report as its AuthenticationError (401).
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import OpenAI, { AuthenticationError } from "openai";

const baseURL = process.env.ZONOS_BASE_URL;
const apiKey = process.env.ZONOS_API_KEY;
const outDir = process.env.ZONOS_OUT_DIR;
if (!baseURL || !apiKey || !outDir) {
  console.error("set ZONOS_BASE_URL, ZONOS_API_KEY and ZONOS_OUT_DIR");
  process.exit(2);
}

const client = new OpenAI({ baseURL, apiKey });

async function speak(format, input) {
  const res = await client.audio.speech.create({ model: "tts-1", voice: "alloy", input, response_format: format });
  const bytes = Buffer.from(await res.arrayBuffer());
  const path = join(outDir, "speech." + format);
  await writeFile(path, bytes);
  return {
    path,
    bytes: bytes.length,
    content_type: res.headers.get("content-type"),
    sample_rate: Number(res.headers.get("x-zonos-sample-rate")),
  };
}

const summary = {};
summary.wav = await speak("wav", "Hello there.");
summary.pcm = await speak("pcm", "Hello there.");

const wrong = new OpenAI({ baseURL, apiKey: "not-the-key-" + apiKey });
try {
  await wrong.audio.speech.create({ model: "tts-1", voice: "alloy", input: "Hello.", response_format: "wav" });
  summary.bad_key = { status: 0, error: "the request with a wrong key succeeded" };
} catch (e) {
  summary.bad_key = {
    status: e.status ?? 0,
    authentication_error: e instanceof AuthenticationError,
    message: e.message,
  };
}

console.log(JSON.stringify(summary));
