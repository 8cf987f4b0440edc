/**
 * A minimal Markdown renderer for model output in the chat webview. Safe by construction: every
 * piece of input text is HTML-escaped, and the only markup in the output is a fixed set of tags
 * whose only attributes are `class` and a numeric `data-block`, so no model output can add a
 * script, an event handler, a style or a link. Links are shown as text with their address; code
 * blocks get Copy and Apply buttons. Covers what answers use: fenced code (also while a fence is
 * still open during streaming), headings, lists, quotes, rules, paragraphs, code spans, bold,
 * italics, strike-through. Pure; bundled into the webview and unit-tested in Node.
 */

export interface RenderedBlock {
  index: number;
  language: string;
  path?: string;
  text: string;
  /** False while the answer is still streaming inside this block. */
  closed: boolean;
}

export interface RenderOptions {
  /** Show the Apply button on code blocks (only once the turn is complete and has blocks). */
  apply?: boolean;
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** `python path=src/a.py`, `python:src/a.py`, `python` → language and path. */
export function parseInfo(info: string): { language: string; path?: string } {
  const words = info.trim().split(/\s+/).filter(Boolean);
  let language = words[0] ?? "";
  let path: string | undefined;
  const colon = language.indexOf(":");
  if (colon > 0) {
    path = language.slice(colon + 1) || undefined;
    language = language.slice(0, colon);
  }
  for (const word of words.slice(1)) {
    if (word.startsWith("path=")) path = word.slice(5) || undefined;
  }
  return { language, path };
}

/** Inline formatting of one escaped-on-the-way segment of text. */
export function renderInline(text: string): string {
  const out: string[] = [];
  const code = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g;
  let last = 0;
  for (let m = code.exec(text); m; m = code.exec(text)) {
    out.push(formatText(text.slice(last, m.index)));
    out.push(`<code>${escapeHtml((m[2] ?? "").replace(/^ (.*) $/, "$1"))}</code>`);
    last = m.index + m[0].length;
  }
  out.push(formatText(text.slice(last)));
  return out.join("");
}

function formatText(raw: string): string {
  return escapeHtml(raw)
    .replace(/\[([^\]\n]+)\]\(([^()\s]+)\)/g, '$1 <span class="url">($2)</span>')
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, "$1<strong>$2</strong>")
    .replace(/(^|[^*\w])\*(?=[^\s*])([^*]*?[^\s*])\*(?!\*)/g, "$1<em>$2</em>")
    .replace(/(^|[^\w])_(?=[^\s_])([^_]*?[^\s_])_(?!\w)/g, "$1<em>$2</em>")
    .replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>");
}

const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/;
const RULE = /^ {0,3}([-*_])(?: *\1){2,} *$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^ {0,3}([-*+]|\d{1,9}[.)])\s+(.*)$/;

function codeBlockHtml(block: RenderedBlock, options: RenderOptions): string {
  const label = [block.language, block.path].filter(Boolean).map((s) => escapeHtml(s ?? "")).join(" · ");
  const buttons =
    `<button class="code-copy" data-action="copy" data-block="${block.index}">Copy</button>` +
    (options.apply && block.closed ? `<button class="code-apply" data-action="apply" data-block="${block.index}">Apply</button>` : "");
  return (
    `<div class="code-block" data-block="${block.index}"><div class="code-bar"><span class="code-label">${label}</span>${buttons}</div>` +
    `<pre><code>${escapeHtml(block.text)}</code></pre></div>`
  );
}

/** Render Markdown `text` to safe HTML, and the fenced blocks found, numbered from 0 in order. */
export function renderMarkdown(text: string, options: RenderOptions = {}): { html: string; blocks: RenderedBlock[] } {
  const blocks: RenderedBlock[] = [];
  const html = renderLines(text.replace(/\r\n?/g, "\n").split("\n"), options, blocks, 0);
  return { html, blocks };
}

function renderLines(lines: string[], options: RenderOptions, blocks: RenderedBlock[], depth: number): string {
  const out: string[] = [];
  let para: string[] = [];
  const flush = (): void => {
    if (para.length) out.push(`<p>${renderInline(para.join("\n"))}</p>`);
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const fence = FENCE.exec(line);
    if (fence && !(fence[1]?.startsWith("`") && fence[2]?.includes("`"))) {
      flush();
      const mark = fence[1] ?? "```";
      const body: string[] = [];
      let closed = false;
      for (i++; i < lines.length; i++) {
        const l = lines[i] ?? "";
        const close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(l);
        if (close && close[1]?.[0] === mark[0] && (close[1]?.length ?? 0) >= mark.length) {
          closed = true;
          break;
        }
        body.push(l);
      }
      const block: RenderedBlock = { index: blocks.length, ...parseInfo(fence[2] ?? ""), text: body.join("\n"), closed };
      blocks.push(block);
      out.push(codeBlockHtml(block, options));
      continue;
    }
    if (!line.trim()) {
      flush();
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      flush();
      const level = Math.min(6, (heading[1] ?? "#").length + 2); // answers' headings sit below the view's own
      out.push(`<h${level}>${renderInline(heading[2] ?? "")}</h${level}>`);
      continue;
    }
    if (RULE.test(line)) {
      flush();
      out.push("<hr>");
      continue;
    }
    if (QUOTE.test(line) && depth < 4) {
      flush();
      const inner: string[] = [];
      for (; i < lines.length && QUOTE.test(lines[i] ?? ""); i++) inner.push(QUOTE.exec(lines[i] ?? "")?.[1] ?? "");
      i--;
      out.push(`<blockquote>${renderLines(inner, options, blocks, depth + 1)}</blockquote>`);
      continue;
    }
    const item = ITEM.exec(line);
    if (item) {
      flush();
      const ordered = /\d/.test(item[1] ?? "");
      const items: string[] = [];
      for (; i < lines.length; i++) {
        const l = lines[i] ?? "";
        const m = ITEM.exec(l);
        if (m && /\d/.test(m[1] ?? "") === ordered) items.push(m[2] ?? "");
        else if (items.length && /^\s+\S/.test(l) && !FENCE.test(l)) items[items.length - 1] += `\n${l.trim()}`;
        else break;
      }
      i--;
      const tag = ordered ? "ol" : "ul";
      out.push(`<${tag}>${items.map((t) => `<li>${renderInline(t)}</li>`).join("")}</${tag}>`);
      continue;
    }
    para.push(line);
  }
  flush();
  return out.join("");
}
