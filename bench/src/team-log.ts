import {
  type Clock,
  type Member,
  RECORD_SCHEMA_VERSIONS,
  TeamError,
  type TeamRecord,
  TeamState,
  textContent,
} from '@teamwire/core';
import { createRandom, createUlidLike, prose, type Random } from './random.js';

/** The team every generated log belongs to; also a safe folder name for the JSONL store. */
export const BENCH_TEAM_ID = '01JC0BENCH0TEAM0000000000A';
/** The agent type of generated teammates (the bench registers it in every team it opens). */
export const WORKER_TYPE = 'worker';
/** The lead's agent type. */
export const LEAD_TYPE = 'lead-agent';

/** What a generated log holds, by record type. */
export interface LogStats {
  records: number;
  bytes: number;
  byType: Record<TeamRecord['type'], number>;
  members: number;
  tasks: number;
  messages: number;
}

/**
 * What a generated log is made of: `tasks`, a small team working through the task board (about
 * ten records per task, messages of a few hundred ASCII characters), `chat`, a large team that
 * mostly talks (long message bodies with non-ASCII text and JSON escapes, few tasks), or `board`,
 * a large team with a high turnover that coordinates through the board alone (tasks with several
 * blockers, reassigned and reopened; only control mail).
 */
export type LogMix = 'tasks' | 'chat' | 'board';

/** Options of {@link generateTeamLog}. */
export interface GenerateOptions {
  /** Records to generate; the log ends at the first work-cycle boundary at or after this. */
  records: number;
  /** The record mix (default `tasks`). */
  mix?: LogMix;
  seed?: number;
  /** Live teammates at any time (default 6 for `tasks`, 16 for `chat`, 48 for `board`). */
  teammates?: number;
  /**
   * Work cycles between two retirements (default 1000; 20 for `board`, where one teammate is
   * retired and replaced every 20 cycles).
   */
  cyclesPerTeammate?: number;
}

const COLORS = ['blue', 'green', 'yellow', 'purple', 'orange', 'pink', 'cyan', 'red'];
const SCOPES = [
  'src/http/',
  'src/store/',
  'packages/core/src/',
  'docs/',
  'test/fixtures/',
  'bench/',
];

/**
 * Generates a realistic team log through `TeamState`'s own commands, so every record is one the
 * runtime could have written and the default limits hold throughout. A work cycle is what a team
 * does most: the lead files a task and messages a teammate (queued, then delivered), the teammate
 * claims it, sometimes edits it, reports back (queued, delivered), completes it and goes idle
 * (idle notification queued, delivered); old completed tasks are deleted to keep the board near
 * 100 tasks. Every `cyclesPerTeammate` cycles one teammate is shut down and a new one spawned.
 * A cycle is about ten records; the log always ends between cycles, with no pending mail, no task
 * in progress and no ready task, so a team opened on it revives nobody.
 *
 * Records are handed to `onRecord` as they are made and not kept, so a million-record log costs
 * no more memory than its consumer keeps.
 */
export function generateTeamLog(
  options: GenerateOptions,
  onRecord: (record: TeamRecord) => void,
): LogStats {
  if (options.mix === 'chat') return generateChatLog(options, onRecord);
  if (options.mix === 'board') return generateBoardLog(options, onRecord);
  const { random, ids, state, stats, emit, leadId } = startGeneratedLog(
    options.seed ?? 0x7ea3,
    onRecord,
  );

  let spawned = 0;
  const deliver = (messageId: string) => emit(state.markDelivered({ messageId }));
  const send = (
    from: string,
    to: string,
    kind: 'message' | 'idle_notification' | 'shutdown_request',
    text: string,
    summary?: string,
  ) => {
    const record = state.queueMessage({
      id: ids.next(),
      senderId: from,
      targetId: to,
      kind,
      delivery: 'wakeup',
      content: text === '' ? [] : textContent(text),
      ...(summary === undefined ? {} : { summary }),
    });
    emit(record);
    return record.message.id;
  };
  const spawn = (): Member => {
    spawned++;
    const id = ids.next();
    const name = `worker-${spawned}`;
    emit(
      state.spawnMember(leadId, {
        id,
        name,
        description: `Implements and tests changes in area ${spawned % 7}.`,
        agentType: WORKER_TYPE,
        provider: 'scripted:scripted-1',
        context: 'fresh',
        color: COLORS[spawned % COLORS.length] as string,
      }),
    );
    const prompt = send(leadId, id, 'message', prose(random, random.int(200, 900)));
    emit(state.setMemberPhase(id, 'active'));
    deliver(prompt);
    return state.member(id) as Member;
  };
  const retire = (member: Member) => {
    deliver(send(leadId, member.id, 'shutdown_request', 'The work of this area is done.'));
    for (const record of state.releaseTasksOf(member.id)) emit(record);
    emit(state.setMemberPhase(member.id, 'retired'));
  };

  const teammates: Member[] = [];
  for (let i = 0; i < (options.teammates ?? 6); i++) teammates.push(spawn());
  const cyclesPerTeammate = options.cyclesPerTeammate ?? 1000;
  const completed: string[] = [];
  let previousTask: string | undefined;
  let cycle = 0;

  while (stats.records < options.records) {
    cycle++;
    if (cycle % cyclesPerTeammate === 0) {
      retire(teammates.shift() as Member);
      teammates.push(spawn());
    }
    const worker = teammates[cycle % teammates.length] as Member;
    const blockedBy =
      previousTask !== undefined &&
      state.task(previousTask)?.status !== 'deleted' &&
      random.chance(0.2)
        ? [previousTask]
        : [];
    const created = state.createTask(leadId, {
      subject: prose(random, random.int(20, 70)).slice(0, 200),
      description: prose(random, random.int(80, 500)),
      blockedBy,
      writeScopes: random.chance(0.5) ? [random.pick(SCOPES)] : [],
    });
    emit(created);
    const taskId = created.task.id;
    deliver(
      send(
        leadId,
        worker.id,
        'message',
        `Please take ${taskId}. ${prose(random, random.int(60, 500))}`,
      ),
    );
    emit(state.updateTask(worker.id, { taskId, action: { type: 'claim' } }));
    if (random.chance(0.3)) {
      emit(
        state.updateTask(worker.id, {
          taskId,
          action: { type: 'edit', description: prose(random, random.int(80, 500)) },
        }),
      );
    }
    deliver(
      send(
        worker.id,
        leadId,
        'message',
        prose(random, random.int(100, 1500)),
        random.chance(0.4) ? prose(random, 40).slice(0, 60) : undefined,
      ),
    );
    emit(state.updateTask(worker.id, { taskId, action: { type: 'complete' } }));
    deliver(
      send(worker.id, leadId, 'idle_notification', random.chance(0.7) ? prose(random, 60) : ''),
    );
    completed.push(taskId);
    previousTask = taskId;
    if (state.taskCount() > 100) deleteOldest(state, leadId, completed, emit);
  }
  return stats;
}

/** Deletes the oldest completed task nothing depends on any more (FIFO, skipping blockers). */
function deleteOldest(
  state: TeamState,
  leadId: string,
  completed: string[],
  emit: (record: TeamRecord) => void,
): void {
  for (let tries = 0; tries < completed.length; tries++) {
    const taskId = completed.shift() as string;
    try {
      emit(state.updateTask(leadId, { taskId, action: { type: 'delete' } }));
      return;
    } catch (error) {
      if (!TeamError.hasCode(error, 'TASK_HAS_DEPENDENTS')) throw error;
      completed.push(taskId);
    }
  }
}

/** Words of chat bodies beyond ASCII prose: accents, Cyrillic, CJK, emoji, typography. */
const UNICODE_WORDS = [
  'naïve',
  'café',
  'Größe',
  'déjà vu',
  'résumé',
  'façade',
  'проверка',
  'ошибка в логе',
  'テストが通りました',
  '日本語',
  '数据库迁移',
  '已修复',
  '✅',
  '🚀',
  '😀',
  '👍🏽',
  '→',
  '≤ 2×',
  '—',
  '“quoted”',
  '½',
  '€42',
];

/** Snippets that JSON must escape: quotes, backslashes, newlines, tabs, a control character. */
const ESCAPED_SNIPPETS = [
  '\n\n```ts\nconst path = "C:\\\\work\\\\main";\n\tif (line.endsWith("\\n")) return;\n```\n\n',
  '\n- first point\n- second point, with a "quote"\n',
  '\n\t{"seq": 12, "type": "task", "note": "a \\"nested\\" quote"}\n',
  ' `grep -rn "foo\\\\|bar" src/` ',
  '\r\n> quoted reply\r\n',
  ' (bell \u0007 in captured output) ',
];

/** Chat text of about `length` characters: prose mixed with non-ASCII words and escapes. */
function chatText(random: Random, length: number): string {
  const parts: string[] = [];
  let size = 0;
  while (size < length) {
    const roll = random.next();
    const part =
      roll < 0.72
        ? prose(random, random.int(20, 120))
        : roll < 0.93
          ? random.pick(UNICODE_WORDS)
          : random.pick(ESCAPED_SNIPPETS);
    parts.push(part);
    size += part.length + 1;
  }
  return parts.join(' ');
}

/**
 * The `chat` mix: a team of `teammates` (default 16, limits raised to hold them) that mostly
 * talks. A cycle is one to four messages between random live members (the lead included), each
 * with a body of 100 to 1,800 characters (prose with non-ASCII words, emoji and text JSON must
 * escape; a summary on half of them), delivered a few cycles later so mail is pending across many
 * inboxes; a teammate sends an idle notification now and then; every 25th cycle the lead files a
 * task that a teammate claims and completes. Teammates are retired and replaced as in the `tasks`
 * mix. The log ends between cycles with every message delivered and no task open.
 */
function generateChatLog(
  options: GenerateOptions,
  onRecord: (record: TeamRecord) => void,
): LogStats {
  const teammateCount = options.teammates ?? 16;
  const { random, ids, state, stats, emit, leadId } = startGeneratedLog(
    options.seed ?? 0xc4a7,
    onRecord,
    teammateCount + 1,
  );
  /** Queued and not yet delivered, oldest first. */
  const pending: string[] = [];
  const send = (
    from: string,
    to: string,
    kind: 'message' | 'idle_notification' | 'shutdown_request',
    text: string,
    summary?: string,
  ) => {
    const record = state.queueMessage({
      id: ids.next(),
      senderId: from,
      targetId: to,
      kind,
      delivery: random.chance(0.8) ? 'wakeup' : 'quiet',
      content: text === '' ? [] : textContent(text),
      ...(summary === undefined ? {} : { summary }),
    });
    emit(record);
    pending.push(record.message.id);
  };
  const deliverOldest = () => {
    const id = pending.shift();
    if (id !== undefined) emit(state.markDelivered({ messageId: id }));
  };
  let spawned = 0;
  const spawn = (): Member => {
    spawned++;
    const id = ids.next();
    emit(
      state.spawnMember(leadId, {
        id,
        name: `peer-${spawned}`,
        description: `Owns area ${spawned % 11}: ${chatText(random, random.int(40, 300))}`.slice(
          0,
          1000,
        ),
        agentType: WORKER_TYPE,
        provider: 'scripted:scripted-1',
        context: random.chance(0.3) ? 'fork' : 'fresh',
        color: COLORS[spawned % COLORS.length] as string,
      }),
    );
    send(leadId, id, 'message', chatText(random, random.int(300, 2000)));
    emit(state.setMemberPhase(id, 'active'));
    return state.member(id) as Member;
  };
  const teammates: Member[] = [];
  for (let i = 0; i < teammateCount; i++) teammates.push(spawn());
  const cyclesPerTeammate = options.cyclesPerTeammate ?? 1000;
  let cycle = 0;
  while (stats.records < options.records) {
    cycle++;
    if (cycle % cyclesPerTeammate === 0) {
      // its mail is delivered before it goes, as a shutdown waits for the teammate's turn
      while (pending.length > 0) deliverOldest();
      const leaving = teammates.shift() as Member;
      send(leadId, leaving.id, 'shutdown_request', 'Your area is done, thank you.');
      deliverOldest();
      emit(state.setMemberPhase(leaving.id, 'retired'));
      teammates.push(spawn());
    }
    const members = [leadId, ...teammates.map((m) => m.id)];
    for (let n = random.int(1, 4); n > 0; n--) {
      const from = random.pick(members);
      let to = random.pick(members);
      while (to === from) to = random.pick(members);
      send(
        from,
        to,
        'message',
        chatText(random, random.int(100, 1800)),
        random.chance(0.5) ? chatText(random, 80).slice(0, 120) : undefined,
      );
    }
    if (random.chance(0.1)) {
      const idle = random.pick(teammates);
      send(idle.id, leadId, 'idle_notification', random.chance(0.5) ? chatText(random, 80) : '');
    }
    if (cycle % 25 === 0) {
      const worker = random.pick(teammates);
      const created = state.createTask(leadId, {
        subject: prose(random, random.int(20, 70)).slice(0, 200),
        description: chatText(random, random.int(80, 800)),
        blockedBy: [],
        writeScopes: random.chance(0.5) ? [random.pick(SCOPES)] : [],
      });
      emit(created);
      const taskId = created.task.id;
      emit(state.updateTask(worker.id, { taskId, action: { type: 'claim' } }));
      emit(state.updateTask(worker.id, { taskId, action: { type: 'complete' } }));
      if (state.taskCount() > 100) {
        const oldest = state.allTasks().find((task) => task.status === 'completed');
        if (oldest !== undefined) {
          emit(state.updateTask(leadId, { taskId: oldest.id, action: { type: 'delete' } }));
        }
      }
    }
    // mail waits a few cycles: about a dozen messages are pending across the inboxes
    while (pending.length > 12) deliverOldest();
  }
  while (pending.length > 0) deliverOldest();
  return stats;
}

/** Non-deleted tasks the `board` mix keeps on its board (old completed ones are deleted). */
const BOARD_TASKS = 200;
/** Tasks the `board` mix's lead keeps filed ahead of the work. */
const BOARD_BACKLOG = 6;
/** Recently created tasks a new `board` task may be blocked by. */
const BLOCKER_WINDOW = 12;

/**
 * The `board` mix: a team of `teammates` (default 48, limits raised to hold them) that
 * coordinates through the task board and sends no chat. A cycle: the lead files a task blocked
 * by zero to three of the last dozen tasks (most by at least one), and sometimes rewires the
 * blockers of a pending one (`set_dependencies`); the oldest open task goes to a teammate, by a
 * claim or by the lead's `reassign`; it is often reassigned to another teammate, or released by
 * its owner and claimed by another, before its owner completes it; some completed tasks are
 * reopened and completed again; the worker's idle notification (empty) is queued and delivered.
 * Every `cyclesPerTeammate` cycles (default 20) a teammate is retired (its shutdown request
 * queued and delivered) and a new one spawned with a one-sentence brief, so the roster ends up
 * holding thousands of retired members. The oldest completed task is deleted whenever more than 200
 * are on the board, after the lead drops it from the blockers of the tasks that still name it. Tasks are worked in creation order, so a task's blockers are
 * complete when its turn comes; the log ends between cycles with no mail pending and every task
 * completed or deleted.
 */
function generateBoardLog(
  options: GenerateOptions,
  onRecord: (record: TeamRecord) => void,
): LogStats {
  const teammateCount = options.teammates ?? 48;
  const { random, ids, state, stats, emit, leadId } = startGeneratedLog(
    options.seed ?? 0xb0a2,
    onRecord,
    teammateCount + 1,
  );
  const sendAndDeliver = (
    from: string,
    to: string,
    kind: 'message' | 'idle_notification' | 'shutdown_request',
    text: string,
  ) => {
    const record = state.queueMessage({
      id: ids.next(),
      senderId: from,
      targetId: to,
      kind,
      delivery: 'wakeup',
      content: text === '' ? [] : textContent(text),
    });
    emit(record);
    emit(state.markDelivered({ messageId: record.message.id }));
  };
  let spawned = 0;
  const spawn = (): Member => {
    spawned++;
    const id = ids.next();
    emit(
      state.spawnMember(leadId, {
        id,
        name: `builder-${spawned}`,
        description: `Builds and tests area ${spawned % 13}.`,
        agentType: WORKER_TYPE,
        provider: 'scripted:scripted-1',
        context: 'fresh',
        color: COLORS[spawned % COLORS.length] as string,
      }),
    );
    sendAndDeliver(leadId, id, 'message', `Take tasks from the board in area ${spawned % 13}.`);
    emit(state.setMemberPhase(id, 'active'));
    return state.member(id) as Member;
  };
  const teammates: Member[] = [];
  for (let i = 0; i < teammateCount; i++) teammates.push(spawn());
  const cyclesPerTeammate = options.cyclesPerTeammate ?? 20;
  /** Tasks not yet worked on, oldest first. */
  const open: string[] = [];
  /** Tasks created lately, newest last: the blockers new tasks choose from. */
  const recent: string[] = [];
  const completed: string[] = [];
  /** Tasks not deleted, in creation order. */
  const onBoard = new Set<string>();
  const other = (member: Member) => {
    let next = random.pick(teammates);
    while (next.id === member.id) next = random.pick(teammates);
    return next;
  };
  let cycle = 0;
  while (stats.records < options.records || open.length > 0) {
    cycle++;
    if (cycle % cyclesPerTeammate === 0) {
      const leaving = teammates.shift() as Member;
      sendAndDeliver(leadId, leaving.id, 'shutdown_request', '');
      for (const record of state.releaseTasksOf(leaving.id)) emit(record);
      emit(state.setMemberPhase(leaving.id, 'retired'));
      teammates.push(spawn());
    }
    while (open.length < BOARD_BACKLOG && stats.records < options.records) {
      const candidates = recent.filter((id) => state.task(id)?.status !== 'deleted');
      const blockedBy: string[] = [];
      for (let n = random.chance(0.8) ? random.int(1, 3) : 0; n > 0; n--) {
        const blocker = random.pick(candidates);
        if (blocker !== undefined && !blockedBy.includes(blocker)) blockedBy.push(blocker);
      }
      const created = state.createTask(leadId, {
        subject: prose(random, random.int(20, 70)).slice(0, 200),
        description: prose(random, random.int(40, 240)),
        blockedBy,
        writeScopes: random.chance(0.5) ? [random.pick(SCOPES)] : [],
      });
      emit(created);
      onBoard.add(created.task.id);
      open.push(created.task.id);
      recent.push(created.task.id);
      if (recent.length > BLOCKER_WINDOW) recent.shift();
    }
    // Now and then the lead rewires the blockers of a waiting task, to tasks older than it.
    if (open.length > 1 && random.chance(0.3)) {
      const rewired = random.pick(open.slice(1));
      const older = recent.filter(
        (id) => taskNumber(id) < taskNumber(rewired) && state.task(id)?.status !== 'deleted',
      );
      const blockedBy: string[] = [];
      for (let n = random.int(0, 3); n > 0 && older.length > 0; n--) {
        const blocker = random.pick(older);
        if (!blockedBy.includes(blocker)) blockedBy.push(blocker);
      }
      emit(
        state.updateTask(leadId, {
          taskId: rewired,
          action: { type: 'set_dependencies', blockedBy },
        }),
      );
    }
    const taskId = open.shift() as string;
    let owner = random.pick(teammates);
    emit(
      random.chance(0.5)
        ? state.updateTask(owner.id, { taskId, action: { type: 'claim' } })
        : state.updateTask(leadId, { taskId, action: { type: 'reassign', ownerId: owner.id } }),
    );
    for (let moves = random.chance(0.6) ? random.int(1, 3) : 0; moves > 0; moves--) {
      const next = other(owner);
      if (random.chance(0.7)) {
        emit(state.updateTask(leadId, { taskId, action: { type: 'reassign', ownerId: next.id } }));
      } else {
        emit(state.updateTask(owner.id, { taskId, action: { type: 'release' } }));
        emit(state.updateTask(next.id, { taskId, action: { type: 'claim' } }));
      }
      owner = next;
    }
    emit(state.updateTask(owner.id, { taskId, action: { type: 'complete' } }));
    if (random.chance(0.1)) {
      emit(state.updateTask(leadId, { taskId, action: { type: 'reopen' } }));
      emit(state.updateTask(owner.id, { taskId, action: { type: 'complete' } }));
    }
    sendAndDeliver(owner.id, leadId, 'idle_notification', '');
    completed.push(taskId);
    while (state.taskCount() > BOARD_TASKS) {
      deleteUnblocking(state, leadId, completed, onBoard, emit);
    }
  }
  return stats;
}

/**
 * Deletes the oldest completed task; first, the lead drops it from the blockers of every task
 * that still depends on it (`set_dependencies`), as a lead clearing finished work does.
 */
function deleteUnblocking(
  state: TeamState,
  leadId: string,
  completed: string[],
  onBoard: Set<string>,
  emit: (record: TeamRecord) => void,
): void {
  const taskId = completed.shift() as string;
  onBoard.delete(taskId);
  for (const id of onBoard) {
    const dependent = state.task(id);
    if (dependent === undefined || !dependent.blockedBy.includes(taskId)) continue;
    emit(
      state.updateTask(leadId, {
        taskId: dependent.id,
        action: {
          type: 'set_dependencies',
          blockedBy: dependent.blockedBy.filter((id) => id !== taskId),
        },
      }),
    );
  }
  emit(state.updateTask(leadId, { taskId, action: { type: 'delete' } }));
}

/** The number of a `task-<n>` id. */
function taskNumber(id: string): number {
  return Number(id.slice('task-'.length));
}

/** A generated log as JSONL bytes, exactly as the JSONL store keeps it on disk. */
export interface JsonlLog {
  bytes: Buffer;
  /** Byte offset where line `i` starts; the last entry is the total length. */
  offsets: Uint32Array | Float64Array;
  stats: LogStats;
}

/** Generates a log and serializes it as JSONL, one record per line. */
export function generateJsonlLog(options: GenerateOptions): JsonlLog {
  const chunks: Buffer[] = [];
  const lengths: number[] = [];
  let pending: string[] = [];
  let pendingBytes = 0;
  const flush = () => {
    if (pending.length === 0) return;
    chunks.push(Buffer.from(pending.join(''), 'utf8'));
    pending = [];
    pendingBytes = 0;
  };
  const stats = generateTeamLog(options, (record) => {
    const line = `${JSON.stringify(record)}\n`;
    const size = Buffer.byteLength(line, 'utf8');
    lengths.push(size);
    pending.push(line);
    pendingBytes += size;
    if (pendingBytes > 1 << 22) flush();
  });
  flush();
  const bytes = Buffer.concat(chunks);
  stats.bytes = bytes.length;
  const offsets =
    bytes.length < 2 ** 32
      ? new Uint32Array(lengths.length + 1)
      : new Float64Array(lengths.length + 1);
  let at = 0;
  lengths.forEach((length, i) => {
    offsets[i] = at;
    at += length;
  });
  offsets[lengths.length] = at;
  return { bytes, offsets, stats };
}

/** The line `i` of a JSONL log, without its newline. */
export function lineAt(log: JsonlLog, i: number): string {
  return log.bytes.toString('utf8', log.offsets[i] as number, (log.offsets[i + 1] as number) - 1);
}

/**
 * What every generated mix starts from: a seeded random source, a clock that each record moves on
 * by 5 ms to 4 s, ULID-like ids on that clock, the team's state (with room for `maxMembers` when
 * given), its counts, and the lead, already emitted.
 */
function startGeneratedLog(
  seed: number,
  onRecord: (record: TeamRecord) => void,
  maxMembers?: number,
) {
  const random = createRandom(seed);
  let time = Date.UTC(2026, 0, 5, 9, 0, 0);
  const clock: Clock = { now: () => time, setTimer: () => () => {} };
  const ids = createUlidLike(random, () => time);
  const state = new TeamState({
    teamId: BENCH_TEAM_ID,
    clock,
    ...(maxMembers === undefined ? {} : { limits: { maxMembers } }),
  });
  const stats: LogStats = {
    records: 0,
    bytes: 0,
    byType: noRecords(),
    members: 0,
    tasks: 0,
    messages: 0,
  };
  const emit = (record: TeamRecord) => {
    stats.records++;
    stats.byType[record.type]++;
    if (record.type === 'member' && record.member.phase === 'provisioning') stats.members++;
    if (record.type === 'task' && record.task.revision === 1) stats.tasks++;
    if (record.type === 'message.queued') stats.messages++;
    time += random.int(5, 4000);
    onRecord(record);
  };
  const leadId = BENCH_TEAM_ID;
  for (const record of state.createLead({
    id: leadId,
    agentType: LEAD_TYPE,
    provider: 'scripted:scripted-1',
    description: 'Plans the work and reviews what the team hands in.',
  })) {
    emit(record);
  }
  return { random, ids, state, stats, emit, leadId };
}

/** A count of zero for every record type core has (its schema versions list them all). */
function noRecords(): LogStats['byType'] {
  return Object.fromEntries(
    Object.keys(RECORD_SCHEMA_VERSIONS).map((type) => [type, 0]),
  ) as LogStats['byType'];
}
