import type { TranscriptEntry } from './chat.js';
import { TERMINATED_TOOL_RESULT } from './chat.js';

/**
 * Makes a loaded transcript consistent: every assistant tool call gets a result (a synthetic
 * "interrupted by a process termination" one when missing) and results with no call are dropped.
 */
export function repairTranscript(entries: TranscriptEntry[]): TranscriptEntry[] {
  const out: TranscriptEntry[] = [];
  let open = new Map<string, string>();
  const closeOpen = (at: number) => {
    for (const [id, name] of open) {
      out.push({
        schemaVersion: 1,
        at,
        message: {
          role: 'tool',
          toolCallId: id,
          toolName: name,
          content: [{ type: 'text', text: TERMINATED_TOOL_RESULT }],
          isError: true,
        },
      });
    }
    open = new Map();
  };
  for (const entry of entries) {
    const message = entry.message;
    if (message.role === 'tool') {
      if (open.has(message.toolCallId)) {
        open.delete(message.toolCallId);
        out.push(entry);
      }
      continue;
    }
    closeOpen(entry.at);
    out.push(entry);
    if (message.role === 'assistant') {
      for (const call of message.toolCalls) open.set(call.id, call.name);
    }
  }
  closeOpen(out.at(-1)?.at ?? 0);
  return out;
}
