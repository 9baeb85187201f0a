import type { ChatMessage } from '../chat.js';
import type { ContentBlock } from '../content.js';
import { textContent } from '../content.js';
import { textLength, utf8Length } from '../limits.js';

/**
 * Where the whole text of a cut idle notice can still be found, for the marker: a reply stays in
 * the teammate's transcript, a failure in its member listing, a retired member's kept work in
 * the `workspace` event (and in the workspace itself).
 */
export type CutTextHome = 'transcript' | 'failure' | 'workspace';

/**
 * The line that ends a cut idle notice. `omitted` counts characters as every other text limit
 * does: Unicode code points ({@link textLength}), so an emoji is one.
 */
export function truncationMarker(omitted: number, memberName: string, home: CutTextHome): string {
  const where =
    home === 'transcript'
      ? `full reply in ${memberName}'s transcript`
      : home === 'failure'
        ? `full error in list_members (${memberName}'s failure)`
        : `full list in ${memberName}'s workspace (git status)`;
  return `\n… [truncated: ${omitted} more characters; ${where}]`;
}

/** UTF-8 bytes of the JSON of `value`, measured as the mailbox measures a message. */
export function jsonBytes(value: unknown): number {
  return utf8Length(JSON.stringify(value) ?? '');
}

/** The bytes of what a model reads of rendered entries: their content and any tool calls. */
export function renderedBytes(entries: readonly ChatMessage[]): number {
  let bytes = 0;
  for (const entry of entries) {
    bytes += jsonBytes(entry.content);
    if (entry.role === 'assistant') bytes += jsonBytes(entry.toolCalls);
  }
  return bytes;
}

/**
 * The longest start of `text` that, ended with the marker, passes `fits`; `text` itself when it
 * fits whole. A cut never splits a surrogate pair; `marker` gets the code points cut off. `undefined` when not even the marker alone fits.
 *
 * Binary search over the kept length: `fits` is expected to be monotonic in it (a longer start
 * never measures smaller), which holds for any format that does not shrink its input.
 */
export function fitText(
  text: string,
  fits: (candidate: string) => boolean,
  marker: (omitted: number) => string,
): string | undefined {
  if (fits(text)) return text;
  const cut = (kept: number) => {
    let end = kept;
    const last = text.charCodeAt(end - 1);
    if (end > 0 && last >= 0xd800 && last <= 0xdbff) end--;
    return text.slice(0, end) + marker(textLength(text.slice(end)));
  };
  if (!fits(cut(0))) return undefined;
  let lo = 0;
  let hi = text.length - 1;
  while (lo < hi) {
    const mid = lo + Math.ceil((hi - lo) / 2);
    if (fits(cut(mid))) lo = mid;
    else hi = mid - 1;
  }
  return cut(lo);
}

/**
 * The content of an idle notification carrying `text`, cut so that it fits `limit` twice over:
 * as the queued message (what the mailbox measures) and as the notice the lead will read, once
 * `render` (the protocol's idle line and envelope) has added whatever it adds. So a long reply
 * always reaches the lead, shortened with a marker, and never makes the teammate fail. Empty when
 * not even the marker fits: the lead then reads the protocol's fallback line.
 */
export function idleNoticeContent(options: {
  text: string;
  limit: number;
  memberName: string;
  home: CutTextHome;
  render: (content: ContentBlock[]) => readonly ChatMessage[];
}): ContentBlock[] {
  const { text, limit, render } = options;
  if (text === '') return [];
  const fitted = fitText(
    text,
    (candidate) => {
      const content = textContent(candidate);
      return jsonBytes(content) <= limit && renderedBytes(render(content)) <= limit;
    },
    (omitted) => truncationMarker(omitted, options.memberName, options.home),
  );
  return fitted === undefined ? [] : textContent(fitted);
}
