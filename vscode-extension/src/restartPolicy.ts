/**
 * When to restart a crashed language server, and when to tell the user.
 *
 * Pure: time comes in as numbers. Crashes back off exponentially; the user is
 * told once per streak of crashes (not on every restart); after too many
 * crashes in a row we stop and leave a manual restart to the user. A server
 * that stayed up for `stableMs` ends the streak.
 */

export interface RestartDecision {
  /** Restart after this many milliseconds; undefined: give up. */
  delayMs?: number;
  /** Show a message to the user (first crash of a streak, or giving up). */
  notify: boolean;
  /** Crashes in the current streak, this one included. */
  attempt: number;
}

export interface RestartPolicyOptions {
  initialDelayMs: number;
  maxDelayMs: number;
  maxAttempts: number;
  stableMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicyOptions = {
  initialDelayMs: 500,
  maxDelayMs: 30_000,
  maxAttempts: 5,
  stableMs: 60_000,
};

export class RestartPolicy {
  private attempts = 0;
  private startedAt: number | undefined;

  constructor(private readonly options: RestartPolicyOptions = DEFAULT_RESTART_POLICY) {}

  /** The server is up (again). */
  started(now: number): void {
    this.startedAt = now;
  }

  /** A user asked for a restart: forget the streak. */
  reset(): void {
    this.attempts = 0;
    this.startedAt = undefined;
  }

  crashed(now: number): RestartDecision {
    if (this.startedAt !== undefined && now - this.startedAt >= this.options.stableMs) {
      this.attempts = 0;
    }
    this.startedAt = undefined;
    this.attempts += 1;
    if (this.attempts > this.options.maxAttempts) {
      return { notify: true, attempt: this.attempts };
    }
    const delayMs = Math.min(this.options.maxDelayMs, this.options.initialDelayMs * 2 ** (this.attempts - 1));
    return { delayMs, notify: this.attempts === 1, attempt: this.attempts };
  }
}
