import type { ChatMessage, MessageSource } from '../chat.js';
import type { ContentBlock } from '../content.js';
import { contentText, textContent } from '../content.js';
import type { TeamPolicy } from '../ports/team-policy.js';
import type { Member, MessageQueuedRecord, QueuedMessage, TeamRecord } from '../records.js';
import type { Conversation } from './conversation.js';
import { type CutTextHome, idleNoticeContent } from './idle-notice.js';
import type { RunnerHost } from './runner-host.js';

/** The part of the runner host that mail needs. */
export type MailHost = Pick<RunnerHost, 'state' | 'format' | 'policy' | 'ids' | 'guard' | 'commit'>;

/**
 * The policy's pick from `pending`. A policy that picks nothing, or a message that is not
 * pending, gets `fallback` instead: a buggy policy can reorder mail, never invent or lose it.
 */
export function pickWith(
  policy: TeamPolicy,
  pending: readonly QueuedMessage[],
  leadId: string,
  fallback: QueuedMessage | undefined,
): QueuedMessage | undefined {
  if (pending.length === 0) return undefined;
  const picked = policy.pickNext({ pending, leadId });
  return picked !== undefined && pending.includes(picked) ? picked : fallback;
}

/** All of `pending` in the order of repeated policy picks (the step-boundary order). */
export function orderByPolicy(
  policy: TeamPolicy,
  pending: readonly QueuedMessage[],
  leadId: string,
): QueuedMessage[] {
  const ordered: QueuedMessage[] = [];
  let rest = pending;
  while (rest.length > 0) {
    const next = pickWith(policy, rest, leadId, rest[0]) as QueuedMessage;
    ordered.push(next);
    rest = rest.filter((m) => m !== next);
  }
  return ordered;
}

/** The wire format's rendering of `message`, as its target's model will read it. */
function format(host: MailHost, message: QueuedMessage): ChatMessage[] {
  const senderColor = host.state.member(message.senderId)?.color;
  return host.format.formatMessage({
    message,
    sender: { name: message.senderName, ...(senderColor ? { color: senderColor } : {}) },
  });
}

/** An idle notification carrying `content`, through the policy's idle line and the format. */
function formatIdleNotice(
  host: MailHost,
  message: QueuedMessage,
  content: ContentBlock[],
): ChatMessage[] {
  const text = contentText(content);
  const notice = host.policy.formatIdleNotice({
    from: message.senderName,
    text: text === '' ? undefined : text,
  });
  return format(host, { ...message, content: textContent(notice) });
}

/** The transcript entries of one message, each carrying its `team-message` source. */
export function renderMessage(host: MailHost, message: QueuedMessage): ChatMessage[] {
  let entries: readonly ChatMessage[];
  if (message.kind === 'idle_notification') {
    // Queued notices were cut to fit already; this re-check only bites on one queued under
    // another format or policy (a reopened team), so the lead never reads a notice over the limit.
    const content = idleNoticeContent({
      text: contentText(message.content),
      limit: host.state.limits.maxMessageBytes,
      memberName: message.senderName,
      home: 'transcript',
      render: (fitted) => formatIdleNotice(host, message, fitted),
    });
    entries = formatIdleNotice(host, message, content);
  } else {
    entries = format(host, message);
  }
  const source: MessageSource = {
    kind: 'team-message',
    messageId: message.id,
    senderId: message.senderId,
    senderName: message.senderName,
  };
  return entries.map((entry): ChatMessage => Object.assign({}, entry, { source }));
}

/** Messages' transcript entries already rendered (to measure them), by message id. */
export type RenderedMail = ReadonlyMap<string, readonly ChatMessage[]>;

/**
 * Records messages in the transcript (skipping any it already holds, e.g. after a crash between
 * the transcript write and the log's `message.delivered`), then appends `message.delivered`.
 * `rendered` holds the entries of messages the caller rendered already; the rest are rendered here.
 */
export async function deliverMessages(
  host: MailHost,
  conversation: Conversation,
  actor: Member,
  messages: readonly QueuedMessage[],
  rendered?: RenderedMail,
): Promise<void> {
  await appendToTranscript(host, conversation, messages, rendered);
  await host.commit(actor, () => deliveredRecords(host, messages));
}

/** Appends `messages` to the conversation, skipping those it holds already (exactly once). */
export async function appendToTranscript(
  host: MailHost,
  conversation: Conversation,
  messages: readonly QueuedMessage[],
  rendered?: RenderedMail,
): Promise<void> {
  const fresh: ChatMessage[] = [];
  for (const message of messages) {
    if (conversation.holds(message.id)) continue;
    for (const entry of rendered?.get(message.id) ?? renderMessage(host, message)) {
      fresh.push(entry);
    }
  }
  await conversation.append(fresh);
  host.guard();
}

/** The `message.delivered` records of those of `messages` still pending, applied to the state. */
export function deliveredRecords(host: MailHost, messages: readonly QueuedMessage[]): TeamRecord[] {
  const records: TeamRecord[] = [];
  for (const message of messages) {
    if (host.state.isPending(message.id)) {
      records.push(host.state.markDelivered({ messageId: message.id }));
    }
  }
  return records;
}

/**
 * Tells the lead `member` is idle, with `text` (the turn's last text, or why it stopped), unless
 * a notice from it is still undelivered (the lead holds at most one per teammate). A text too
 * long for one message is cut to fit, with a marker saying where the rest is: a long reply must
 * reach the lead, never make the teammate fail. `id`: the notice's own id (see `idleNoticeId`);
 * nothing is written when a message of that id was ever queued.
 */
export async function queueIdleNotice(
  host: MailHost,
  member: Member,
  text: string,
  home: CutTextHome,
  id?: string,
): Promise<void> {
  const { state } = host;
  const leadId = state.leadId;
  if (leadId === undefined || !state.isLive(member.id)) return;
  if (id !== undefined && state.wasQueued(id)) return;
  const holding = state
    .pending(leadId)
    .some((m) => m.kind === 'idle_notification' && m.senderId === member.id);
  if (holding) return;
  host.guard();
  await host.commit(member, () => {
    // decided again at commit time: another process may have written this notice meanwhile
    if (id !== undefined && state.wasQueued(id)) return [];
    const notice = idleNoticeRecord(host, member, text, home, id);
    return notice === undefined ? [] : [notice];
  });
}

/**
 * The `idle_notification` record from live `member` to the lead carrying `text`, cut to fit (see
 * {@link queueIdleNotice}; `id` when the notice has one of its own, see `idleNoticeId`), applied to the state and not yet committed: the caller commits it
 * (the runtime's feed routes it once durable). Undefined when the team has no lead or the member is not live.
 */
export function idleNoticeRecord(
  host: MailHost,
  member: Member,
  text: string,
  home: CutTextHome,
  id?: string,
): MessageQueuedRecord | undefined {
  const { state } = host;
  const leadId = state.leadId;
  if (leadId === undefined || !state.isLive(member.id)) return undefined;
  const draft: QueuedMessage = {
    id: id ?? host.ids.next(),
    senderId: member.id,
    senderName: member.name,
    targetId: leadId,
    kind: 'idle_notification',
    delivery: 'wakeup',
    content: [],
  };
  const content = idleNoticeContent({
    text,
    limit: state.limits.maxMessageBytes,
    memberName: member.name,
    home,
    render: (fitted) => formatIdleNotice(host, draft, fitted),
  });
  return state.queueMessage({
    id: draft.id,
    senderId: draft.senderId,
    targetId: draft.targetId,
    kind: draft.kind,
    delivery: draft.delivery,
    content,
  });
}
