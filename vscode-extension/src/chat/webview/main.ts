/**
 * The chat webview's page script (bundled to dist/chat.js, run under a strict CSP). It draws the
 * turns the host sends, appends streamed deltas as they arrive, and posts the user's actions back.
 * User text, citations and notices go in through textContent; answers through the escaping Markdown
 * renderer (markdown.ts), the only HTML this page ever parses.
 */
import { renderMarkdown } from "../markdown";
import { insertMention, kindsMatching, type MentionQuery, mentionAtCaret, takesValue } from "../mentions";
import type { HostMessage, ViewMessage } from "../messages";
import type { MentionItem, MentionKind } from "../protocol";
import type { ViewTurn } from "../session";

declare function acquireVsCodeApi(): { postMessage(message: ViewMessage): void };

const vscode = acquireVsCodeApi();
const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const transcript = $<HTMLDivElement>("transcript");
const empty = $<HTMLDivElement>("empty");
const input = $<HTMLTextAreaElement>("input");
const form = $<HTMLFormElement>("composer");
const stopButton = $<HTMLButtonElement>("stop");
const sendButton = $<HTMLButtonElement>("send");
const status = $<HTMLSpanElement>("status");
const banner = $<HTMLDivElement>("banner");
const LISTED_SEARCH_HITS = 5; // search hits listed before the rest are folded (codectx/app/chat_model.py)
const mentionList = $<HTMLDivElement>("mention-list");

const turns = new Map<number, ViewTurn>();
let running = false;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function lines(c: { startLine: number; endLine: number }): string {
  return c.endLine > c.startLine ? `${c.startLine + 1}-${c.endLine + 1}` : `${c.startLine + 1}`;
}

function drawTurn(turn: ViewTurn): HTMLElement {
  const node = el("div", `turn ${turn.role} ${turn.status}`);
  node.dataset.key = String(turn.key);
  if (turn.turnId) node.dataset.turnId = turn.turnId;
  const who = el("div", "who", turn.role === "user" ? "You" : "codectx");
  if (turn.role === "assistant" && turn.status !== "done") {
    const label = { streaming: "answering…", cancelled: "stopped", error: "failed", done: "" }[turn.status];
    who.append(" ", el("span", "state", label));
  }
  node.append(who);
  if (turn.role === "user") {
    node.append(el("div", "text", turn.text));
    return node;
  }
  if (turn.notices.length) {
    const notices = el("div", "notices");
    for (const n of turn.notices) notices.append(el("div", `notice ${n.kind}`, n.message));
    node.append(notices);
  }
  const body = el("div", "body");
  const complete = turn.status === "done" || turn.status === "cancelled";
  body.innerHTML = renderMarkdown(turn.text, { apply: complete && turn.blocks.length > 0 }).html;
  node.append(body);
  if (turn.error) node.append(el("div", "error", turn.error));
  if (turn.citations.length) {
    const box = el("div", "citations");
    box.append(el("div", "cite-title", `Citations (${turn.citations.length})`));
    // A turn's search sends up to a hundred hits, most cut to a few lines: every other citation and
    // the first few search hits are listed, the rest folded under one line.
    const folded = el("div", "more-list");
    let searched = 0;
    turn.citations.forEach((c, i) => {
      const button = el("button", "citation");
      button.type = "button";
      button.dataset.action = "cite";
      button.dataset.index = String(i);
      button.title = `Open ${c.path} at line ${c.startLine + 1}`;
      button.append(el("span", "cite-path", `${c.path}:${lines(c)}`));
      if (c.symbol) button.append(" ", el("span", "cite-symbol", c.symbol));
      if (c.reason) button.append(" ", el("span", "cite-reason", c.reason));
      searched += c.reason === "search" ? 1 : 0;
      (c.reason === "search" && searched > LISTED_SEARCH_HITS ? folded : box).append(button);
    });
    if (folded.childElementCount) {
      const more = el("details", "more-citations");
      more.append(el("summary", "", `${folded.childElementCount} more search hits (their matching lines)`), folded);
      box.append(more);
    }
    node.append(box);
  }
  if (complete && turn.turnId) {
    const actions = el("div", "turn-actions");
    const context = el("button", "show-context", "Show Context Sent");
    context.type = "button";
    context.dataset.action = "context";
    actions.append(context);
    node.append(actions);
  }
  return node;
}

function atBottom(): boolean {
  return document.documentElement.scrollHeight - window.scrollY - window.innerHeight < 80;
}

function place(turn: ViewTurn): void {
  const follow = atBottom();
  turns.set(turn.key, turn);
  const node = drawTurn(turn);
  const old = transcript.querySelector(`.turn[data-key="${turn.key}"]`);
  if (old) old.replaceWith(node);
  else transcript.append(node);
  empty.hidden = turns.size > 0;
  if (follow) window.scrollTo(0, document.documentElement.scrollHeight);
}

// Streaming: deltas are appended to the turn's text and drawn at most once per frame.
const dirty = new Set<number>();
let frame = 0;
function redrawSoon(key: number): void {
  dirty.add(key);
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    for (const k of dirty) {
      const turn = turns.get(k);
      if (turn) place(turn);
    }
    dirty.clear();
  });
}

function setRunning(value: boolean): void {
  running = value;
  stopButton.hidden = !value;
  sendButton.disabled = value;
  status.textContent = value ? "answering…" : "";
}

window.addEventListener("message", (event: MessageEvent<HostMessage>) => {
  const message = event.data;
  switch (message.type) {
    case "state":
      turns.clear();
      transcript.replaceChildren();
      for (const turn of message.turns) place(turn);
      empty.hidden = message.turns.length > 0;
      setRunning(message.running);
      banner.hidden = true;
      break;
    case "turn":
      place(message.turn);
      setRunning(message.running);
      break;
    case "delta": {
      const turn = turns.get(message.key);
      if (turn) {
        turn.text += message.text;
        redrawSoon(turn.key);
      }
      break;
    }
    case "mentions":
      showMentions(message.requestId, message.items);
      break;
    case "banner":
      banner.textContent = message.message;
      banner.hidden = false;
      break;
  }
});

transcript.addEventListener("click", (event) => {
  const target = (event.target as HTMLElement).closest<HTMLElement>("[data-action]");
  const turnNode = target?.closest<HTMLElement>(".turn");
  if (!target || !turnNode) return;
  const key = Number(turnNode.dataset.key);
  const turn = turns.get(key);
  const block = Number(target.dataset.block);
  switch (target.dataset.action) {
    case "cite":
      vscode.postMessage({ type: "openCitation", key, index: Number(target.dataset.index) });
      break;
    case "apply":
      vscode.postMessage({ type: "apply", key, block });
      break;
    case "copy":
      if (turn) vscode.postMessage({ type: "copy", text: renderMarkdown(turn.text).blocks[block]?.text ?? "" });
      break;
    case "context":
      vscode.postMessage({ type: "showContext", key });
      break;
  }
});

function send(): void {
  const text = input.value.trim();
  if (!text || running) return;
  banner.hidden = true;
  vscode.postMessage({ type: "send", text });
  input.value = "";
  hideMentions();
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  send();
});
stopButton.addEventListener("click", () => vscode.postMessage({ type: "stop" }));

// ---- @-mention completion --------------------------------------------------------------------

interface Choice {
  kind: MentionKind;
  value?: string;
  label: string;
  detail?: string;
}
let choices: Choice[] = [];
let selected = 0;
let query: MentionQuery | undefined;
let requestId = 0;
let timer = 0;

function hideMentions(): void {
  mentionList.hidden = true;
  choices = [];
  query = undefined;
}

function drawMentions(): void {
  mentionList.replaceChildren(
    ...choices.map((c, i) => {
      const row = el("div", `mention${i === selected ? " selected" : ""}`);
      row.setAttribute("role", "option");
      row.dataset.index = String(i);
      row.append(el("span", "mention-kind", c.kind), " ", el("span", "mention-label", c.label));
      if (c.detail) row.append(" ", el("span", "mention-detail", c.detail));
      return row;
    }),
  );
  mentionList.hidden = choices.length === 0;
}

function showMentions(id: number, items: MentionItem[]): void {
  if (id !== requestId || !query) return;
  const kinds: Choice[] = query.kind ? [] : kindsMatching(query.query).map((k) => ({ kind: k, label: takesValue(k) ? `@${k}:` : `@${k}` }));
  choices = [...kinds, ...items.map((i) => ({ kind: i.kind, value: i.value, label: i.label, detail: i.detail }))];
  selected = 0;
  drawMentions();
}

function onInput(): void {
  query = mentionAtCaret(input.value, input.selectionStart ?? input.value.length);
  clearTimeout(timer);
  if (!query) {
    hideMentions();
    return;
  }
  const asked = query;
  const id = ++requestId;
  // The kinds show at once; the server's files and symbols follow.
  showMentions(id, []);
  timer = window.setTimeout(() => vscode.postMessage({ type: "mentions", requestId: id, query: asked.query, kind: asked.kind }), 80);
}

function choose(index: number): void {
  const choice = choices[index];
  if (!choice || !query) return;
  const caret = input.selectionStart ?? input.value.length;
  const next = insertMention(input.value, caret, query, choice.kind, choice.value);
  input.value = next.text;
  input.setSelectionRange(next.caret, next.caret);
  input.focus();
  hideMentions();
  if (choice.value === undefined && takesValue(choice.kind)) onInput(); // go on with @file: → files
}

input.addEventListener("input", onInput);
input.addEventListener("keydown", (event) => {
  if (!mentionList.hidden && choices.length) {
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      selected = (selected + (event.key === "ArrowDown" ? 1 : choices.length - 1)) % choices.length;
      drawMentions();
      event.preventDefault();
      return;
    }
    if (event.key === "Enter" || event.key === "Tab") {
      choose(selected);
      event.preventDefault();
      return;
    }
    if (event.key === "Escape") {
      hideMentions();
      event.preventDefault();
      return;
    }
  }
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});
// mousedown, not click: the textarea keeps the focus and the caret.
mentionList.addEventListener("mousedown", (event) => {
  const row = (event.target as HTMLElement).closest<HTMLElement>(".mention");
  if (!row) return;
  event.preventDefault();
  choose(Number(row.dataset.index));
});
input.addEventListener("blur", () => window.setTimeout(hideMentions, 150));

vscode.postMessage({ type: "ready" });
input.focus();
