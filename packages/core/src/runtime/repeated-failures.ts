import { canonicalJson } from '../canonical-json.js';
import type { ToolCall } from '../chat.js';

/** How many identical failing tool calls in a row a member may make by default. */
export const DEFAULT_MAX_REPEATED_FAILURES = 3;

/**
 * Counts a member's failing tool calls by what they ask (tool name and input) and how they fail
 * (the result's text): the same call failing the same way `max` times with nothing new for the
 * member in between is a loop, and the turn ends there instead of burning more model calls. A
 * success of that call, or new mail for the member, forgets its count: the world changed, so
 * trying again is no longer a repeat. Counts live as long as the member's runner.
 */
export class RepeatedFailureGuard {
  private readonly counts = new Map<string, Map<string, number>>();
  /** The failure that last reached {@link max}, for the notice to the lead. */
  last: { readonly tool: string; readonly text: string } | undefined;

  constructor(readonly max: number) {}

  /** Records a tool call's result; returns how often this exact failure happened (0: success). */
  record(call: ToolCall, failed: boolean, resultText: string): number {
    const callKey = `${call.name}\u0000${canonicalJson(call.input ?? null)}`;
    if (!failed) {
      this.counts.delete(callKey);
      return 0;
    }
    let byResult = this.counts.get(callKey);
    if (byResult === undefined) {
      byResult = new Map();
      this.counts.set(callKey, byResult);
    }
    const count = (byResult.get(resultText) ?? 0) + 1;
    byResult.set(resultText, count);
    if (count >= this.max) this.last = { tool: call.name, text: resultText };
    return count;
  }

  /** Something new reached the member (mail): every count starts again. */
  reset(): void {
    this.counts.clear();
  }
}
