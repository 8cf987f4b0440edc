/**
 * Backend health for one language-server connection: ask `codectx/health`
 * with `{"probe": true}`, apply `codectx/healthChanged` notifications, and,
 * when the server does not know the request (MethodNotFound: an older server),
 * fall back to inference from its messages and `codectx.status`. Pure: the
 * requests come in as functions, so the fallback can be tested without VS Code.
 */
import {
  acceptInferred,
  type BackendHealth,
  healthFromStatus,
  type IndexHealth,
  isMethodNotFound,
  parseBackendHealth,
  parseHealthReport,
} from "./backendHealth";

export interface ProbeDeps {
  /** Send `codectx/health` with `{probe: true}`; rejects like a JSON-RPC request does. */
  askHealth(): Promise<unknown>;
  /** Run the older `codectx.status` command. */
  askStatus(): Promise<unknown>;
  /** Send `codectx/health` with `{}`: the last known state, at once (no backend request). */
  askKnown?(): Promise<unknown>;
  current(): BackendHealth | undefined;
  /** The configured model name, for inferred health (a probe reports the served one). */
  model(): string | undefined;
  update(backend: BackendHealth | undefined): void;
  updateIndex(index: IndexHealth | undefined): void;
  log(level: "info" | "warn", message: string): void;
}

export class HealthProbe {
  /** Does the server answer `codectx/health`? undefined until it has been asked. */
  private known: boolean | undefined;
  private inFlight: Promise<BackendHealth | undefined> | undefined;

  constructor(private readonly deps: ProbeDeps) {}

  get supported(): boolean | undefined {
    return this.known;
  }

  get busy(): boolean {
    return this.inFlight !== undefined;
  }

  /** Probe now; concurrent callers share one request. Resolves to the health shown afterwards. */
  probe(): Promise<BackendHealth | undefined> {
    this.inFlight ??= this.run().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  /**
   * Refresh the index part without probing the backend (e.g. when an indexing pass ends, so the
   * index state shown is not the one from the last probe). Nothing with an older server.
   */
  async refreshIndex(): Promise<void> {
    if (this.known === false || !this.deps.askKnown) return;
    try {
      const report = parseHealthReport(await this.deps.askKnown());
      if (report?.index) this.deps.updateIndex(report.index);
    } catch (err) {
      if (isMethodNotFound(err)) this.known = false;
    }
  }

  /** A `codectx/healthChanged` notification. */
  notified(raw: unknown): void {
    const backend = parseBackendHealth(raw);
    if (!backend) {
      this.deps.log("warn", "codectx/healthChanged without a backend state: ignored");
      return;
    }
    this.known = true;
    this.deps.log("info", `backend health changed: ${backend.state}${backend.detail ? ` (${backend.detail})` : ""}`);
    this.deps.update(backend);
  }

  /**
   * Health guessed from a server message or an answered completion. It counts
   * only while the server cannot be probed: a server that can also records
   * every completion's outcome and sends `codectx/healthChanged` itself.
   */
  inferred(backend: BackendHealth): void {
    if (acceptInferred(this.known)) this.deps.update(backend);
  }

  private async run(): Promise<BackendHealth | undefined> {
    if (this.known !== false) {
      try {
        const raw = await this.deps.askHealth();
        this.known = true;
        const report = parseHealthReport(raw);
        if (report) {
          this.deps.update(report.backend);
          this.deps.updateIndex(report.index);
        } else {
          this.deps.log("warn", "codectx/health answered without a backend state");
        }
        return this.deps.current();
      } catch (err) {
        if (!isMethodNotFound(err)) {
          this.deps.log("warn", `codectx/health failed: ${err instanceof Error ? err.message : String(err)}`);
          return this.deps.current();
        }
        this.known = false;
        this.deps.log("info", "the language server has no codectx/health: backend health is inferred from its messages");
      }
    }
    return this.pollStatus();
  }

  private async pollStatus(): Promise<BackendHealth | undefined> {
    try {
      const current = this.deps.current();
      const next = healthFromStatus(await this.deps.askStatus(), current, this.deps.model());
      if (next !== current) this.deps.update(next);
    } catch {
      // Older still (no codectx.status): health then comes from messages and answers only.
    }
    return this.deps.current();
  }
}
