import { describe, expect, it } from "vitest";

import { RestartPolicy } from "../src/restartPolicy";

const options = { initialDelayMs: 100, maxDelayMs: 1000, maxAttempts: 5, stableMs: 60_000 };

describe("RestartPolicy", () => {
  it("backs off exponentially up to a cap, telling the user only on the first crash", () => {
    const p = new RestartPolicy(options);
    const decisions = [1, 2, 3, 4, 5].map((i) => p.crashed(i));
    expect(decisions.map((d) => d.delayMs)).toEqual([100, 200, 400, 800, 1000]);
    expect(decisions.map((d) => d.notify)).toEqual([true, false, false, false, false]);
  });

  it("gives up after too many crashes in a row and says so", () => {
    const p = new RestartPolicy(options);
    for (let i = 0; i < 5; i++) p.crashed(i);
    expect(p.crashed(6)).toEqual({ notify: true, attempt: 6 });
  });

  it("starts a new streak after the server stayed up long enough", () => {
    const p = new RestartPolicy(options);
    p.crashed(0);
    p.started(1000);
    expect(p.crashed(2000).attempt).toBe(2); // came back but died quickly: same streak
    p.started(3000);
    const fresh = p.crashed(3000 + 60_000);
    expect(fresh).toEqual({ delayMs: 100, notify: true, attempt: 1 });
  });

  it("forgets the streak on a manual restart", () => {
    const p = new RestartPolicy(options);
    for (let i = 0; i < 6; i++) p.crashed(i);
    p.reset();
    expect(p.crashed(10).delayMs).toBe(100);
  });
});
