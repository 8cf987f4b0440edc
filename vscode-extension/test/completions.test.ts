import { describe, expect, it } from "vitest";

import { type CancellationLike, completionMiddleware, debounce } from "../src/completions";

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
      answered: (n) => answered.push(n),
    });
    const next = (() => {
      calls++;
      return Promise.resolve({ items: [{ insertText: "x" }] });
    }) as unknown as Next;
    const ask = (token = new Token()) =>
      mw.provideInlineCompletionItems!({} as never, {} as never, {} as never, token as never, next);
    return { ask, answered, calls: () => calls, mw };
  }

  it("asks the server after the debounce and reports the answer", async () => {
    const t = setup({ enabled: true, paused: false });
    expect(await t.ask()).toEqual({ items: [{ insertText: "x" }] });
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
