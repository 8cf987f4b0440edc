import { describe, expect, it } from "vitest";

import { escapeHtml, parseInfo, renderInline, renderMarkdown } from "../src/chat/markdown";

const ALLOWED_TAGS = new Set(["p", "code", "pre", "strong", "em", "del", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "hr", "span", "div", "button"]);

/** Every tag in `html` is one of ours, with no attribute but class and a numeric data-block. */
function onlyOurMarkup(html: string): void {
  for (const m of html.matchAll(/<\/?([a-zA-Z][\w-]*)([^>]*)>/g)) {
    expect(ALLOWED_TAGS.has(m[1] ?? ""), `tag <${m[1]}>`).toBe(true);
    const attrs = (m[2] ?? "").trim();
    if (!attrs) continue;
    for (const a of attrs.matchAll(/([\w-]+)="([^"]*)"/g)) {
      expect(["class", "data-block", "data-action"]).toContain(a[1]);
      if (a[1] === "data-block") expect(a[2]).toMatch(/^\d+$/);
    }
    // Nothing but well-formed name="value" pairs.
    expect(attrs.replace(/([\w-]+)="([^"]*)"/g, "").trim()).toBe("");
  }
}

describe("escaping model output", () => {
  const hostile = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "[click](javascript:alert(1))",
    "[x](https://evil.example/?q=<b>)",
    "**<iframe src=//evil>**",
    "`<svg onload=alert(1)>`",
    '```"><script>alert(1)</script>\ncode\n```',
    '```python path="><img src=x onerror=alert(1)>\nprint(1)\n```',
    "> <style>body{display:none}</style>",
    "- <a href=javascript:alert(1)>x</a>",
    "# <marquee>hi</marquee>",
    "&lt;already escaped&gt; & 'quotes' \"double\"",
  ];

  it.each(hostile)("renders %j with no markup of its own", (text) => {
    const { html } = renderMarkdown(text, { apply: true });
    onlyOurMarkup(html);
    expect(html).not.toMatch(/<(script|img|iframe|svg|style|a|marquee)\b/i);
  });

  it("keeps the text itself visible, escaped", () => {
    expect(renderMarkdown("<script>alert(1)</script>").html).toBe("<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>");
    expect(escapeHtml(`<a href="x" onclick='y'>&`)).toBe("&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;");
  });

  it("shows links as text with their address, never as links", () => {
    expect(renderInline("see [the docs](https://example.org/a)")).toBe('see the docs <span class="url">(https://example.org/a)</span>');
  });
});

describe("Markdown", () => {
  it("renders paragraphs, emphasis, code spans and headings", () => {
    const { html } = renderMarkdown("# Title\n\nSome **bold**, *it*, ~~gone~~ and `a < b`.\nNext line.");
    expect(html).toBe("<h3>Title</h3><p>Some <strong>bold</strong>, <em>it</em>, <del>gone</del> and <code>a &lt; b</code>.\nNext line.</p>");
  });

  it("leaves snake_case and stars inside code alone", () => {
    expect(renderInline("call parse_config_file and `a*b*c`")).toBe("call parse_config_file and <code>a*b*c</code>");
  });

  it("renders lists, quotes and rules", () => {
    expect(renderMarkdown("- one\n- two\n  more\n\n1. first\n2. second").html).toBe(
      "<ul><li>one</li><li>two\nmore</li></ul><ol><li>first</li><li>second</li></ol>",
    );
    expect(renderMarkdown("> quoted **text**\n> again\n\n---").html).toBe("<blockquote><p>quoted <strong>text</strong>\nagain</p></blockquote><hr>");
  });

  it("numbers code blocks in order, with language, path and buttons", () => {
    const text = "Intro\n\n```python path=calc/ops.py\ndef f():\n    return 1 < 2\n```\n\nThen\n\n~~~\nplain\n~~~\n";
    const { html, blocks } = renderMarkdown(text, { apply: true });
    expect(blocks).toEqual([
      { index: 0, language: "python", path: "calc/ops.py", text: "def f():\n    return 1 < 2", closed: true },
      { index: 1, language: "", text: "plain", closed: true },
    ]);
    expect(html).toContain('<button class="code-apply" data-action="apply" data-block="0">Apply</button>');
    expect(html).toContain('<button class="code-copy" data-action="copy" data-block="1">Copy</button>');
    expect(html).toContain("<pre><code>def f():\n    return 1 &lt; 2</code></pre>");
    expect(html).toContain('<span class="code-label">python · calc/ops.py</span>');
  });

  it("shows no Apply button unless asked, nor on a block still streaming", () => {
    expect(renderMarkdown("```py\nx = 1\n```").html).not.toContain("code-apply");
    const open = renderMarkdown("text\n```python\ndef half", { apply: true });
    expect(open.blocks).toEqual([{ index: 0, language: "python", path: undefined, text: "def half", closed: false }]);
    expect(open.html).not.toContain("code-apply");
  });

  it("closes a fence only with the same character, at least as long", () => {
    const { blocks } = renderMarkdown("````md\n```\ninner\n```\n````\n");
    expect(blocks).toHaveLength(1);
    expect(blocks[0]?.text).toBe("```\ninner\n```");
  });

  it("reads a path from either info-string form", () => {
    expect(parseInfo("python:src/a.py")).toEqual({ language: "python", path: "src/a.py" });
    expect(parseInfo("ts path=web/x.ts title=y")).toEqual({ language: "ts", path: "web/x.ts" });
    expect(parseInfo("")).toEqual({ language: "", path: undefined });
  });
});
