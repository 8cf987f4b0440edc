/**
 * The chat view's model of one conversation: the turns shown, and the assembly of a streamed answer
 * from `codectx/chat/delta` notifications. Deltas of another conversation, of a turn already
 * finished, or arriving when nothing runs are ignored; the send's result is authoritative and
 * replaces the assembled text (docs/chat-protocol.md). Pure, so the webview can be re-sent the
 * whole state at any time.
 */
import type { Citation, CodeBlock, Conversation, Delta, Notice, Turn, TurnResult } from "./protocol";

export type TurnStatus = "streaming" | "done" | "cancelled" | "error";

export interface ViewNotice {
  kind: string;
  message: string;
}

export interface ViewTurn {
  /** Local id, stable for the view (the server's turnId arrives with the first delta). */
  key: number;
  role: "user" | "assistant";
  text: string;
  turnId?: string;
  citations: Citation[];
  blocks: CodeBlock[];
  notices: ViewNotice[];
  status: TurnStatus;
  error?: string;
}

export class ChatSession {
  conversation: Conversation | undefined;
  turns: ViewTurn[] = [];
  private pending: ViewTurn | undefined;
  private readonly finished = new Set<string>();
  private keys = 0;

  get running(): boolean {
    return this.pending !== undefined;
  }

  get current(): ViewTurn | undefined {
    return this.pending;
  }

  /** Show a fresh (or no) conversation. */
  reset(conversation?: Conversation): void {
    this.conversation = conversation;
    this.turns = [];
    this.pending = undefined;
    this.finished.clear();
  }

  /** The question and an empty assistant turn that the deltas fill. */
  begin(question: string): ViewTurn {
    if (this.pending) throw new Error("an answer is still streaming; stop it first");
    this.turns.push(this.turn("user", question, "done"));
    const answer = this.turn("assistant", "", "streaming");
    this.turns.push(answer);
    this.pending = answer;
    return answer;
  }

  /** Append a delta to the running turn; the turn changed, or undefined when the delta was ignored. */
  delta(d: Delta): ViewTurn | undefined {
    const turn = this.pending;
    if (!turn || d.conversationId !== this.conversation?.conversationId || this.finished.has(d.turnId)) return undefined;
    if (turn.turnId !== undefined && turn.turnId !== d.turnId) return undefined;
    turn.turnId = d.turnId;
    turn.text += d.text;
    return turn;
  }

  /** Attach a notice to its turn (the running one when it names none); undefined if not ours. */
  notice(n: Notice): ViewTurn | undefined {
    if (n.conversationId !== this.conversation?.conversationId) return undefined;
    const turn =
      (n.turnId !== undefined ? this.turns.find((t) => t.role === "assistant" && t.turnId === n.turnId) : undefined) ??
      this.pending ??
      this.turns.filter((t) => t.role === "assistant").at(-1);
    if (!turn) return undefined;
    if (!turn.notices.some((x) => x.kind === n.kind && x.message === n.message)) turn.notices.push({ kind: n.kind, message: n.message });
    return turn;
  }

  /** The send's result: its text replaces the assembled deltas. */
  finish(result: TurnResult): ViewTurn | undefined {
    const turn = this.pending;
    if (!turn) return undefined;
    this.pending = undefined;
    turn.turnId = result.turnId || turn.turnId;
    if (turn.turnId) this.finished.add(turn.turnId);
    turn.text = result.text;
    turn.citations = result.citations;
    turn.blocks = result.blocks;
    for (const message of result.notices) {
      if (!turn.notices.some((x) => x.message === message)) turn.notices.push({ kind: "notice", message });
    }
    turn.status = result.cancelled ? "cancelled" : "done";
    if (this.conversation) this.conversation = { ...this.conversation, turns: this.conversation.turns + 1 };
    return turn;
  }

  /** The send failed (an error from the server, or the connection went away). */
  fail(message: string): ViewTurn | undefined {
    const turn = this.pending;
    if (!turn) return undefined;
    this.pending = undefined;
    if (turn.turnId) this.finished.add(turn.turnId);
    turn.status = "error";
    turn.error = message;
    return turn;
  }

  /** A saved conversation, resumed (`codectx/chat/get`). */
  load(conversation: Conversation, turns: Turn[]): void {
    this.reset(conversation);
    for (const t of turns) {
      const view = this.turn(t.role, t.text, t.role === "assistant" && t.cancelled ? "cancelled" : "done");
      view.turnId = t.turnId;
      view.citations = t.citations;
      view.blocks = t.blocks;
      view.notices = t.notices.map((message) => ({ kind: "notice", message }));
      if (t.turnId) this.finished.add(t.turnId);
      this.turns.push(view);
    }
  }

  assistant(turnId: string): ViewTurn | undefined {
    return this.turns.find((t) => t.role === "assistant" && t.turnId === turnId);
  }

  private turn(role: ViewTurn["role"], text: string, status: TurnStatus): ViewTurn {
    return { key: ++this.keys, role, text, citations: [], blocks: [], notices: [], status };
  }
}
