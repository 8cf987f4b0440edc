import { describe, expect, it } from "vitest";

import { anchorAtLineStart, type CancellationLike, completionMiddleware, debounce } from "../src/completions";

class Token implements CancellationLike {
  isCancellationRequested = false;
  private listeners: (() => unknown)[] = [];
  onCancellationRequested(listener: () => unknown) {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  }
  cancel() {
    this.isCancellationRequested = true;
    for (const l of this.listeners) l();
  }
  get listening() {
    return this.listeners.length;
  }
}

describe("debounce", () => {
  it("resolves true when not cancelled and cleans up its listener", async () => {
    const token = new Token();
    expect(await debounce(5, token)).toBe(true);
    expect(token.listening).toBe(0);
  });

  it("resolves false as soon as the request is cancelled", async () => {
    const token = new Token();
    const pending = debounce(60_000, token);
    token.cancel();
    expect(await pending).toBe(false);
  });

  it("does not wait for zero and refuses an already-cancelled token", async () => {
    const token = new Token();
    expect(await debounce(0, token)).toBe(true);
    token.cancel();
    expect(await debounce(0, token)).toBe(false);
  });
});

describe("completionMiddleware", () => {
  type Next = Parameters<NonNullable<ReturnType<typeof completionMiddleware>["provideInlineCompletionItems"]>>[4];

  function setup(state: { enabled: boolean; paused: boolean }) {
    const answered: number[] = [];
    let calls = 0;
    const mw = completionMiddleware({
      enabled: () => state.enabled,
      paused: () => state.paused,
      debounceMs: () => 1,
      answered: (n, where) => answered.push(n) && where !== "",
    });
    const at = new Pos(15, 4);
    const next = (() => {
      calls++;
      return Promise.resolve({ items: [{ insertText: "x", range: new Rng(at, at) }] });
    }) as unknown as Next;
    const doc = { lineAt: () => ({ text: "    " }) };
    const ask = (token = new Token()) =>
      mw.provideInlineCompletionItems!(doc as never, at as never, {} as never, token as never, next);
    return { ask, answered, calls: () => calls, mw };
  }

  it("asks the server after the debounce and reports the answer", async () => {
    const t = setup({ enabled: true, paused: false });
    const result = (await t.ask()) as { items: { insertText: string; range: Rng }[] };
    // On a blank indented line the item is anchored at column 0 with the indentation.
    expect(result.items[0]?.insertText).toBe("    x");
    expect(result.items[0]?.range.start).toEqual(new Pos(15, 0));
    expect(t.calls()).toBe(1);
    expect(t.answered).toEqual([1]);
  });

  it("sends nothing while paused or switched off", async () => {
    for (const state of [{ enabled: true, paused: true }, { enabled: false, paused: false }]) {
      const t = setup(state);
      expect(await t.ask()).toBeNull();
      expect(t.calls()).toBe(0);
    }
  });

  it("sends nothing for a keystroke superseded during the debounce", async () => {
    const t = setup({ enabled: true, paused: false });
    const token = new Token();
    const pending = t.ask(token);
    token.cancel();
    expect(await pending).toBeNull();
    expect(t.calls()).toBe(0);
  });

  it("keeps the suggest widget free of the server's AI items", () => {
    const t = setup({ enabled: true, paused: false });
    expect(t.mw.provideCompletionItem!({} as never, {} as never, {} as never, {} as never, () => [])).toBeNull();
  });
});

class Pos {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
  isEqual(o: Pos) {
    return o.line === this.line && o.character === this.character;
  }
  with(line?: number, character?: number) {
    return new Pos(line ?? this.line, character ?? this.character);
  }
}

class Rng {
  constructor(
    readonly start: Pos,
    readonly end: Pos,
  ) {}
  get isEmpty() {
    return this.start.isEqual(this.end);
  }
  with(start?: Pos) {
    return new Rng(start ?? this.start, this.end);
  }
}

describe("anchorAtLineStart", () => {
  const at = new Pos(15, 4);

  it("includes the indentation of a blank indented line and starts at column 0", () => {
    const item = { insertText: "return 1", range: new Rng(at, at) };
    anchorAtLineStart(item, at, "    ");
    expect(item.insertText).toBe("    return 1");
    expect(item.range.start).toEqual(new Pos(15, 0));
    expect(item.range.end).toEqual(at);
  });

  it("leaves lines with code before the cursor, non-empty ranges and snippets alone", () => {
    const cases: [{ insertText: unknown; range: Rng }, string][] = [
      [{ insertText: "(x)", range: new Rng(at, at) }, "  f"],
      [{ insertText: "return 1", range: new Rng(new Pos(15, 0), at) }, "    "],
      [{ insertText: { value: "snippet" }, range: new Rng(at, at) }, "    "],
      [{ insertText: "x", range: new Rng(at, at) }, ""],
    ];
    for (const [item, prefix] of cases) {
      const before = { ...item };
      anchorAtLineStart(item, at, prefix);
      expect(item).toEqual(before);
    }
  });
});
