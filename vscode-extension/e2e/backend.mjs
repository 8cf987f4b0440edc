// A loopback model server for the end-to-end test: speaks the OpenAI API the way vLLM does
// (/v1/models, /v1/completions and /v1/chat/completions, streamed as SSE or whole) with fixed
// words, so the real codectx server and backend client run unchanged and the result is
// deterministic. Every request body is kept, to compare with what the editor says was sent;
// GETs are counted, and close() stops it mid-test to show an unreachable backend.
import { createHash } from "node:crypto";
import { createServer } from "node:http";

export const MODEL = "e2e-fixed-model";
export const COMPLETION = "return 'hello ' + name";
export const REFACTOR = [
  "```python",
  "def total(values):",
  '    """Add up the values."""',
  "    return sum(values)",
  "```",
].join("\n");

function sse(res, data) {
  res.write(`data: ${JSON.stringify(data)}\n\n`);
}

export function startBackend() {
  const requests = [];
  // GET requests (/v1/models: the server's health probe and model discovery), counted apart.
  const gets = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      const json = (status, data) => {
        const body = JSON.stringify(data);
        res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
        res.end(body);
      };
      if (req.method === "GET") {
        gets.push(req.url);
        if (req.url.replace(/\/$/, "").endsWith("/models")) return json(200, { object: "list", data: [{ id: MODEL, object: "model" }] });
        return json(404, { error: { message: `no route ${req.url}` } });
      }
      let body;
      try {
        body = JSON.parse(raw.toString("utf8"));
      } catch {
        return json(400, { error: { message: "bad json" } });
      }
      const chat = req.url.endsWith("/chat/completions");
      if (!chat && !req.url.endsWith("/completions")) return json(404, { error: { message: `no route ${req.url}` } });
      requests.push({ path: req.url, body, sha256: createHash("sha256").update(raw).digest("hex") });
      const text = chat ? REFACTOR : COMPLETION;
      const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
      if (!body.stream) {
        const choice = chat ? { index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" } : { index: 0, text, finish_reason: "stop" };
        return json(200, { id: "cmpl-e2e", object: chat ? "chat.completion" : "text_completion", model: MODEL, choices: [choice], usage });
      }
      res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", Connection: "close" });
      for (let i = 0; i < text.length; i += 8) {
        const piece = text.slice(i, i + 8);
        sse(res, { id: "cmpl-e2e", model: MODEL, choices: [chat ? { index: 0, delta: { content: piece }, finish_reason: null } : { index: 0, text: piece, finish_reason: null }] });
      }
      sse(res, { id: "cmpl-e2e", model: MODEL, choices: [chat ? { index: 0, delta: {}, finish_reason: "stop" } : { index: 0, text: "", finish_reason: "stop" }], usage });
      res.end("data: [DONE]\n\n");
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      // Closing drops open keep-alive connections too, so the port refuses at once, like a stopped vLLM.
      const close = () =>
        new Promise((r) => {
          server.close(() => r());
          server.closeAllConnections();
        });
      resolve({ url: `http://127.0.0.1:${port}/v1`, requests, gets, close });
    });
  });
}
