import { describe, expect, it } from "vitest";

import { LOG_LEVEL, type PlainChannel, TraceChannel, traceLogLevel } from "../src/traceChannel";

class Plain implements PlainChannel {
  lines: string[] = [];
  disposed = false;
  shown: (boolean | undefined)[] = [];
  append(value: string) {
    this.lines.push(value);
  }
  appendLine(value: string) {
    this.lines.push(value);
  }
  replace(value: string) {
    this.lines = [value];
  }
  clear() {
    this.lines = [];
  }
  show(preserveFocus?: boolean) {
    this.shown.push(preserveFocus);
  }
  hide() {}
  dispose() {
    this.disposed = true;
  }
}

function channel(setting: "off" | "messages" | "verbose") {
  const made: Plain[] = [];
  const trace = new TraceChannel("codectx trace", setting, () => {
    const p = new Plain();
    made.push(p);
    return p;
  }, () => new Date("2026-11-30T04:00:00Z"));
  return { trace, made };
}

describe("TraceChannel", () => {
  it("reports the Trace level whenever tracing is wanted, so the language client turns its tracer on", () => {
    expect(traceLogLevel("off")).toBe(LOG_LEVEL.Off);
    expect(traceLogLevel("messages")).toBe(LOG_LEVEL.Trace);
    expect(traceLogLevel("verbose")).toBe(LOG_LEVEL.Trace);
    expect(channel("verbose").trace.logLevel).toBe(LOG_LEVEL.Trace);
  });

  it("writes trace lines unfiltered, with a timestamp", () => {
    const { trace, made } = channel("verbose");
    trace.trace("[Trace - 04:00:00] Sending request 'initialize - (0)'.\nParams: {}");
    trace.info("client started", { pid: 7 });
    expect(made).toHaveLength(1);
    expect(made[0]?.lines).toEqual([
      "2026-11-30T04:00:00.000Z [trace] [Trace - 04:00:00] Sending request 'initialize - (0)'.\nParams: {}",
      '2026-11-30T04:00:00.000Z [info] client started {"pid":7}',
    ]);
  });

  it("creates no channel and writes nothing while off", () => {
    const { trace, made } = channel("off");
    trace.trace("x");
    trace.clear();
    trace.hide();
    expect(made).toHaveLength(0);
  });

  it("tells listeners when the setting changes the level, and only then", () => {
    const { trace } = channel("off");
    const seen: number[] = [];
    const sub = trace.onDidChangeLogLevel((level) => seen.push(level));
    trace.setSetting("messages");
    trace.setSetting("verbose"); // same level: no event
    trace.setSetting("off");
    expect(seen).toEqual([LOG_LEVEL.Trace, LOG_LEVEL.Off]);
    sub.dispose();
    trace.setSetting("verbose");
    expect(seen).toHaveLength(2);
  });

  it("shows and disposes the plain channel", () => {
    const { trace, made } = channel("messages");
    trace.show(true);
    trace.show();
    expect(made[0]?.shown).toEqual([true, undefined]);
    trace.dispose();
    expect(made[0]?.disposed).toBe(true);
  });
});
