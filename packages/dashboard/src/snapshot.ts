import type { TeamLog, TranscriptEntry, TranscriptStore } from '@teamwire/core';
import { cutRecord, type MessageBody, messageText } from './snapshot-record.js';
import type { DashboardSnapshot } from './view-model.js';

/** A snapshot's JSON is at most this many bytes (default of `maxSnapshotBytes`). */
export const SNAPSHOT_BYTES_DEFAULT = 8 * 1024 * 1024;
/** A snapshot holds at most this many records besides the member records (default). */
export const SNAPSHOT_RECORDS_DEFAULT = 20_000;
/** Room kept in the byte bound for the digits of `truncated`, known only at the end. */
const TRUNCATED_DIGITS = 16;

/** One record of a snapshot, serialized. */
interface Entry {
  seq: number;
  json: string;
  /** UTF-8 bytes of `json` and the comma before it. */
  bytes: number;
}

/** Entries in seq order that drop their oldest in O(1). */
class Window {
  private entries: Entry[] = [];
  private start = 0;
  bytes = 0;

  get size(): number {
    return this.entries.length - this.start;
  }

  push(entry: Entry): void {
    this.entries.push(entry);
    this.bytes += entry.bytes;
  }

  /** Drops the oldest entry. */
  shift(): void {
    const entry = this.entries[this.start++] as Entry;
    this.bytes -= entry.bytes;
    // compact now and then, never one splice per entry
    if (this.start > 1024 && this.start * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.start);
      this.start = 0;
    }
  }

  list(): Entry[] {
    return this.entries.slice(this.start);
  }
}

/** What a snapshot says besides its records. */
export type SnapshotEnvelope = Omit<DashboardSnapshot, 'records' | 'truncated'>;

/**
 * A {@link DashboardSnapshot} as JSON of at most `maxBytes` UTF-8 bytes: every record cut (see
 * `cutRecord`), the member records first, then the newest other records, at most `maxRecords`
 * of them, that fit the rest. What is left out is counted in `truncated`. The log is read once,
 * and what it holds past the bound is dropped as it is read, so the memory used is a small
 * multiple of `maxBytes` however long the log is. Everything is serialized before the caller writes a status:
 * a record that cannot be serialized throws here.
 */
export async function snapshotJson(options: {
  log: Pick<TeamLog, 'read' | 'lastSeq'>;
  envelope: SnapshotEnvelope;
  maxBytes: number;
  maxRecords: number;
  /** The snapshot's `usage`, given the members its log names (see {@link transcriptUsage}). */
  usage?: (members: readonly { id: string; name: string }[]) => Promise<SnapshotEnvelope['usage']>;
}): Promise<string> {
  const { log, maxRecords } = options;
  let envelope = options.envelope;
  let budget = options.maxBytes - envelopeBytes(envelope);
  if (budget < 0 && envelope.statuses !== undefined) {
    // Statuses are a hint the records also give (by phase): they go before any record does.
    const { statuses: _statuses, ...rest } = envelope;
    envelope = rest;
    budget = options.maxBytes - envelopeBytes(envelope);
  }
  budget = Math.max(0, budget);
  const members = new Window();
  const others = new Window();
  const roster = new Map<string, string>();
  let truncated = 0;
  const last = log.lastSeq();
  for await (const record of log.read()) {
    if (record.seq > last) break;
    const json = JSON.stringify(cutRecord(record));
    const entry = { seq: record.seq, json, bytes: Buffer.byteLength(json) + 1 };
    if (record.type === 'member') {
      roster.set(record.member.id, record.member.name);
      members.push(entry);
      for (; members.bytes > budget; truncated++) members.shift();
    } else {
      others.push(entry);
      for (; others.bytes > budget || others.size > maxRecords; truncated++) others.shift();
    }
  }
  if (options.usage !== undefined) {
    const usage = await options.usage([...roster].map(([id, name]) => ({ id, name })));
    if (usage !== undefined) {
      // the figures take their room from the newest records' share, never past the bound
      const before = envelopeBytes(envelope);
      envelope = { ...envelope, usage };
      budget = Math.max(0, budget - (envelopeBytes(envelope) - before));
    }
  }
  for (; others.bytes > budget - members.bytes; truncated++) others.shift();
  const records = merge(members.list(), others.list());
  const head = JSON.stringify({ ...envelope, truncated }).slice(0, -1);
  return `${head},"records":[${records.map((entry) => entry.json).join(',')}]}`;
}

/** The bytes of the snapshot without records, with room for any count of `truncated`. */
function envelopeBytes(envelope: SnapshotEnvelope): number {
  const empty: DashboardSnapshot = { ...envelope, truncated: 0, records: [] };
  return Buffer.byteLength(JSON.stringify(empty)) + TRUNCATED_DIGITS;
}

function merge(a: Entry[], b: Entry[]): Entry[] {
  const out: Entry[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const x = a[i];
    const y = b[j];
    if (y === undefined || (x !== undefined && x.seq < y.seq)) {
      out.push(x as Entry);
      i++;
    } else {
      out.push(y);
      j++;
    }
  }
  return out;
}

/**
 * The message queued at `seq`, its text cut so that the text's JSON is at most `maxBytes` UTF-8
 * bytes (a legal message's whole content is, so only a log written under larger limits is cut);
 * `undefined` when no message is queued there.
 */
export async function messageBody(
  log: Pick<TeamLog, 'read' | 'lastSeq'>,
  seq: number,
  maxBytes: number,
): Promise<MessageBody | undefined> {
  if (seq > log.lastSeq()) return undefined;
  for await (const record of log.read({ fromSeq: seq })) {
    if (record.seq !== seq || record.type !== 'message.queued') return undefined;
    const content = record.message.content as { type: string; text?: unknown }[];
    // A character is at least one byte of JSON: no more than `maxBytes` of them can fit.
    const { text: head, length } = messageText(content, maxBytes);
    const text = fitJson(head, maxBytes);
    return { seq, id: record.message.id, text, more: length - text.length };
  }
  return undefined;
}

/** The longest start of `text` whose JSON is at most `maxBytes` UTF-8 bytes. */
function fitJson(text: string, maxBytes: number): string {
  const bytes = (s: string) => Buffer.byteLength(JSON.stringify(s));
  if (bytes(text) <= maxBytes) return text;
  let low = 0;
  let high = text.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (bytes(text.slice(0, mid)) <= maxBytes) low = mid;
    else high = mid - 1;
  }
  const end = low > 0 && (text.charCodeAt(low - 1) & 0xfc00) === 0xd800 ? low - 1 : low;
  return text.slice(0, end);
}

/** One member's figures of `DashboardSnapshot.usage`. */
type MemberUsage = NonNullable<DashboardSnapshot['usage']>[string];

/**
 * The turns and tokens of each member in `members`, read from their transcripts, by name: the
 * `usage` of a snapshot whose page gets no model events from its hub (a read-only page that
 * follows a log written elsewhere). A member without a transcript counts zero.
 */
export async function transcriptUsage(
  transcripts: Pick<TranscriptStore, 'load'>,
  members: readonly { id: string; name: string }[],
): Promise<Record<string, MemberUsage>> {
  const usage: Record<string, MemberUsage> = {};
  for (const member of members) {
    usage[member.name] = usageOf(await transcripts.load({ memberId: member.id }));
  }
  return usage;
}

/**
 * Tokens are the sum of the model answers' `usage`. A turn starts with a model answer that does
 * not follow a tool result of the model's own call: one after input (a prompt, mail, a task), not
 * one that goes on with the results of the previous step (an answer without tool calls ends the
 * turn). Compaction summaries, which come in the
 * middle of a turn, neither start nor end one.
 */
export function usageOf(entries: readonly TranscriptEntry[]): MemberUsage {
  const usage: MemberUsage = { turns: 0, inputTokens: 0, outputTokens: 0, through: 0 };
  let afterStep = false;
  for (const { message, at } of entries) {
    usage.through = Math.max(usage.through, at);
    if (message.role === 'assistant' && message.source === undefined) {
      if (!afterStep) usage.turns++;
      usage.inputTokens += message.usage?.inputTokens ?? 0;
      usage.outputTokens += message.usage?.outputTokens ?? 0;
      // an answer without tool calls ends its turn
      afterStep = message.toolCalls.length > 0;
    } else if (message.role === 'tool' && message.source === undefined) {
      // the result of the model's own call: the turn goes on
    } else if (message.role === 'user' && message.source?.kind === 'compaction') {
      // a summary replaces history in the middle of a turn
    } else {
      afterStep = false;
    }
  }
  return usage;
}
