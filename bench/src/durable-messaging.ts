import { type FileHandle, mkdir, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type ChatMessage,
  type Clock,
  type TeamRecord,
  TeamState,
  TRANSCRIPT_SCHEMA_VERSION,
  textContent,
} from '@teamwire/core';
import { xmlFormat } from '@teamwire/protocol';
import {
  JOURNAL_CHECKPOINT_BYTES,
  type JsonlTeamStore,
  nodeFs,
  openJsonlTeamStore,
  type StorageFileHandle,
  type StorageFs,
} from '@teamwire/storage';
import type { Bench } from './context.js';
import { type Figure, figure } from './report.js';
import { median, now } from './stats.js';
import { BENCH_TEAM_ID, LEAD_TYPE, WORKER_TYPE } from './team-log.js';

const MESSAGE_TEXT =
  'The retry test fails because the fixture clock never advances; I switched it to the manual ' +
  'clock and the suite passes 200 runs in a row. Pushed to fix/retry-clock, ready for review.';

/**
 * The physical ceiling of an append-only file: write whole lines at the end and fdatasync, with
 * the same group commit as the store (appends that arrive while a write+sync is in flight share
 * the next one), and nothing else: no JSON, no validation, no bookkeeping.
 */
class BareAppender {
  /** fdatasync calls made by every bare appender. */
  static syncs = 0;
  position = 0;
  private queue: { bytes: Buffer; resolve: () => void }[] = [];
  flushing: Promise<void> | undefined;

  /** `sync: false`: written without a flush (a member file behind the journal). */
  constructor(
    readonly handle: FileHandle,
    private readonly sync = true,
  ) {}

  static async open(path: string, sync = true): Promise<BareAppender> {
    return new BareAppender(await open(path, 'w'), sync);
  }

  append(bytes: Buffer): Promise<void> {
    return new Promise((resolve) => {
      this.queue.push({ bytes, resolve });
      this.flushing ??= this.writeQueued();
    });
  }

  private async writeQueued(): Promise<void> {
    await Promise.resolve();
    while (this.queue.length > 0) {
      const group = this.queue.splice(0);
      const bytes =
        group.length === 1
          ? (group[0] as { bytes: Buffer }).bytes
          : Buffer.concat(group.map((g) => g.bytes));
      let written = 0;
      while (written < bytes.length) {
        const { bytesWritten } = await this.handle.write(
          bytes,
          written,
          bytes.length - written,
          this.position + written,
        );
        written += bytesWritten;
      }
      this.position += bytes.length;
      if (this.sync) {
        await this.handle.datasync();
        BareAppender.syncs++;
      }
      for (const item of group) item.resolve();
    }
    this.flushing = undefined;
  }

  /** Waits for the writes in flight, then flushes the file. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    await this.handle.datasync();
    BareAppender.syncs++;
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/**
 * The physical ceiling of the store's transcript layout: one journal file for every member,
 * appended with the same group commit as {@link BareAppender}; once a group is durable, each
 * append's lines are written to its member's file without a flush, and the append resolves after
 * that write. Past {@link JOURNAL_CHECKPOINT_BYTES} the member files written since are flushed and
 * the journal is cut back to its header, as the store does. No JSON, no validation.
 */
class BareJournal {
  private readonly journal: BareAppender;
  private readonly header: number;
  private dirty = new Set<BareAppender>();

  private constructor(journal: BareAppender, header: number) {
    this.journal = journal;
    this.header = header;
  }

  static async open(path: string): Promise<BareJournal> {
    const journal = await BareAppender.open(path);
    const header = Buffer.from('{"format":"teamwire.transcript-journal","version":1}\n');
    await journal.append(header);
    return new BareJournal(journal, header.length);
  }

  /** Appends `line` to the journal, then `lines` to `file` once it is durable. */
  async append(file: BareAppender, line: Buffer, lines: Buffer): Promise<void> {
    if (this.journal.position >= JOURNAL_CHECKPOINT_BYTES && !this.checkpointing) {
      this.checkpointing = this.checkpoint();
    }
    while (this.checkpointing) await this.checkpointing;
    await this.journal.append(line);
    this.dirty.add(file);
    await file.append(lines);
  }

  private checkpointing: Promise<void> | undefined;

  private async checkpoint(): Promise<void> {
    while (this.journal.flushing) await this.journal.flushing;
    for (const file of this.dirty) await file.flush();
    this.dirty = new Set();
    await this.journal.handle.truncate(this.header);
    this.journal.position = this.header;
    await this.journal.handle.datasync();
    BareAppender.syncs++;
    this.checkpointing = undefined;
  }

  close(): Promise<void> {
    return this.journal.close();
  }
}

/** The real file system, counting the store's fdatasync calls. */
function countingFs(counter: { syncs: number }): StorageFs {
  return {
    ...nodeFs,
    async open(path, flags) {
      const handle = await nodeFs.open(path, flags);
      const counted: StorageFileHandle = {
        read: (buffer, offset, length, position) => handle.read(buffer, offset, length, position),
        write: (buffer, offset, length, position) => handle.write(buffer, offset, length, position),
        datasync: () => {
          counter.syncs++;
          return handle.datasync();
        },
        sync: () => handle.sync(),
        truncate: (length) => handle.truncate(length),
        stat: () => handle.stat(),
        close: () => handle.close(),
      };
      return counted;
    },
  };
}

/** How senders pick targets: all message one member, or each messages its own. */
export type Layout = 'fan-in' | 'pairs';

/**
 * A team of senders `s<i>` and their targets: one member `t0` for `fan-in` (teammates reporting
 * to one reviewer), or `t<i>` per sender for `pairs` (independent conversations, so every
 * delivery lands in a different transcript file).
 */
interface Senders {
  state: TeamState;
  senders: { id: string; name: string }[];
  /** `targets[i]` is the target of `senders[i]`. */
  targets: { id: string; name: string }[];
  /** The distinct targets (one transcript file each). */
  files: { id: string; name: string }[];
}

function buildTeam(
  count: number,
  layout: Layout,
  clock: Clock,
): { team: Senders; setup: TeamRecord[] } {
  const state = new TeamState({
    teamId: BENCH_TEAM_ID,
    clock,
    limits: { maxMembers: 2 * count + 1, maxPendingPerMember: 1_000_000 },
  });
  const setup: TeamRecord[] = state.createLead({
    id: BENCH_TEAM_ID,
    agentType: LEAD_TYPE,
    provider: 'bench',
  });
  const member = (name: string) => {
    const id = `m-${name}`;
    setup.push(
      state.spawnMember(BENCH_TEAM_ID, {
        id,
        name,
        description: 'bench',
        agentType: WORKER_TYPE,
        provider: 'bench',
        context: 'fresh',
      }),
    );
    setup.push(state.setMemberPhase(id, 'active'));
    return { id, name };
  };
  const team: Senders = { state, senders: [], targets: [], files: [] };
  for (let i = 0; i < count; i++) {
    team.senders.push(member(`s${i}`));
    if (layout === 'pairs' || i === 0) team.files.push(member(`t${i}`));
    team.targets.push(team.files[layout === 'pairs' ? i : 0] as { id: string; name: string });
  }
  return { team, setup };
}

let messageCounter = 0;

/** Ulid-sized (26 characters), unique within the run. */
function messageId(n: number): string {
  return `01JC0MSG${String(n).padStart(18, '0')}`;
}

/**
 * One message, end to end, as the runtime does it: `message.queued` made durable (the send's
 * answer), the target's transcript line made durable, then `message.delivered` made durable.
 */
async function sendAndDeliver(
  store: JsonlTeamStore,
  state: TeamState,
  sender: { id: string; name: string },
  target: { id: string },
  clock: Clock,
): Promise<void> {
  const queued = state.queueMessage({
    id: messageId(++messageCounter),
    senderId: sender.id,
    targetId: target.id,
    kind: 'message',
    delivery: 'wakeup',
    content: textContent(MESSAGE_TEXT),
  });
  await store.log.append({ records: [queued] });
  const source = {
    kind: 'team-message' as const,
    messageId: queued.message.id,
    senderId: sender.id,
    senderName: sender.name,
  };
  const rendered: ChatMessage[] = xmlFormat
    .formatMessage({ message: queued.message, sender: { name: sender.name } })
    .map((entry): ChatMessage => Object.assign({}, entry, { source }));
  await store.transcripts.append({
    memberId: target.id,
    entries: rendered.map((message) => ({
      schemaVersion: TRANSCRIPT_SCHEMA_VERSION,
      at: clock.now(),
      message,
    })),
  });
  await store.log.append({ records: [state.markDelivered({ messageId: queued.message.id })] });
}

/** The bytes the store writes for one message, so the bare loop writes exactly as many. */
interface MessageBytes {
  queued: Buffer;
  transcript: Buffer;
  /** The transcript append's journal line (the same entries, for its member, at its offset). */
  journal: Buffer;
  delivered: Buffer;
}

function sampleBytes(clock: Clock): MessageBytes {
  const { team } = buildTeam(1, 'pairs', clock);
  const sender = team.senders[0] as { id: string; name: string };
  const target = team.targets[0] as { id: string };
  const queued = team.state.queueMessage({
    id: messageId(999_999_999),
    senderId: sender.id,
    targetId: target.id,
    kind: 'message',
    delivery: 'wakeup',
    content: textContent(MESSAGE_TEXT),
  });
  const source = {
    kind: 'team-message' as const,
    messageId: queued.message.id,
    senderId: sender.id,
    senderName: sender.name,
  };
  const entries = xmlFormat
    .formatMessage({ message: queued.message, sender: { name: sender.name } })
    .map((message) => ({
      schemaVersion: TRANSCRIPT_SCHEMA_VERSION,
      at: clock.now(),
      message: { ...message, source },
    }));
  const delivered = team.state.markDelivered({ messageId: queued.message.id });
  const line = (value: unknown) => Buffer.from(`${JSON.stringify(value)}\n`);
  const lines = entries.map((e) => JSON.stringify(e));
  return {
    queued: line(queued),
    transcript: Buffer.from(lines.map((l) => `${l}\n`).join('')),
    // an offset of a file some hundred appends long
    journal: Buffer.from(
      `{"member":"${target.id}","offset":45400,"entries":[${lines.join(',')}]}\n`,
    ),
    delivered: line(delivered),
  };
}

/** Runs `senders` concurrent loops of `perSender` messages each; returns messages per second. */
async function runStore(
  store: JsonlTeamStore,
  team: Senders,
  perSender: number,
  clock: Clock,
): Promise<number> {
  const start = now();
  await Promise.all(
    team.senders.map(async (sender, i) => {
      const target = team.targets[i] as { id: string };
      for (let k = 0; k < perSender; k++) {
        await sendAndDeliver(store, team.state, sender, target, clock);
      }
    }),
  );
  return (team.senders.length * perSender * 1000) / (now() - start);
}

/**
 * The same loops on bare appenders: `transcripts[i]` is the file of sender `i`'s target, written
 * behind the journal as the store writes it.
 */
async function runBare(
  log: BareAppender,
  journal: BareJournal,
  transcripts: BareAppender[],
  bytes: MessageBytes,
  perSender: number,
): Promise<number> {
  const start = now();
  await Promise.all(
    transcripts.map(async (transcript) => {
      for (let k = 0; k < perSender; k++) {
        await log.append(bytes.queued);
        await journal.append(transcript, bytes.journal, bytes.transcript);
        await log.append(bytes.delivered);
      }
    }),
  );
  return (transcripts.length * perSender * 1000) / (now() - start);
}

interface Config {
  senders: number;
  perSender: number;
}

interface Rates {
  store: number;
  bare: number;
  /** fdatasync calls per message. */
  storeSyncs: number;
  bareSyncs: number;
  /**
   * Process CPU time per message (µs, user + system, the I/O threads included): the part of the
   * gap that is work rather than waiting, and far steadier than a rate on a shared machine.
   */
  storeCpu: number;
  bareCpu: number;
}

/** Process CPU time so far, in µs (user + system, every thread). */
function cpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/** Measures one layout and sender count: `repeats` paired runs after one unmeasured warm-up. */
async function measure(
  root: string,
  layout: Layout,
  config: Config,
  repeats: number,
  bytes: MessageBytes,
  clock: Clock,
): Promise<Rates> {
  const name = `${layout}-${config.senders}`;
  const bareDir = join(root, `bare-${name}`);
  await mkdir(bareDir, { recursive: true });
  const counter = { syncs: 0 };
  const store = await openJsonlTeamStore({
    teamId: BENCH_TEAM_ID,
    dir: join(root, `store-${name}`),
    durability: 'fsync',
    fs: countingFs(counter),
  });
  const { team, setup } = buildTeam(config.senders, layout, clock);
  await store.log.append({ records: setup });
  const log = await BareAppender.open(join(bareDir, 'log.jsonl'));
  const journal = await BareJournal.open(join(bareDir, 'transcript-journal.jsonl'));
  const files = new Map<string, BareAppender>();
  for (const target of team.files) {
    files.set(target.id, await BareAppender.open(join(bareDir, `${target.id}.jsonl`), false));
  }
  const transcripts = team.targets.map((target) => files.get(target.id) as BareAppender);
  const storeRates: number[] = [];
  const bareRates: number[] = [];
  let storeSyncs = 0;
  let bareSyncs = 0;
  let storeCpu = 0;
  let bareCpu = 0;
  try {
    // Round 0 opens every transcript file and warms both paths; it is not counted.
    for (let round = 0; round <= repeats; round++) {
      const order = round % 2 === 0 ? ['bare', 'store'] : ['store', 'bare'];
      for (const side of order) {
        const syncsBefore = side === 'store' ? counter.syncs : BareAppender.syncs;
        const cpuBefore = cpuMicros();
        const rate =
          side === 'store'
            ? await runStore(store, team, config.perSender, clock)
            : await runBare(log, journal, transcripts, bytes, config.perSender);
        const cpu = cpuMicros() - cpuBefore;
        if (round === 0) continue;
        if (side === 'store') {
          storeRates.push(rate);
          storeSyncs += counter.syncs - syncsBefore;
          storeCpu += cpu;
        } else {
          bareRates.push(rate);
          bareSyncs += BareAppender.syncs - syncsBefore;
          bareCpu += cpu;
        }
      }
    }
  } finally {
    await store.close();
    await log.close();
    await journal.close();
    await Promise.all([...files.values()].map((file) => file.close()));
  }
  const messages = repeats * config.senders * config.perSender;
  return {
    store: median(storeRates),
    bare: median(bareRates),
    storeSyncs: storeSyncs / messages,
    bareSyncs: bareSyncs / messages,
    storeCpu: storeCpu / messages,
    bareCpu: bareCpu / messages,
  };
}

const LAYOUT_LABEL: Record<Layout, string> = {
  'fan-in': 'all to one member',
  pairs: 'each to its own member',
};

/**
 * Durable messaging on the JSONL store with `fsync`: send -> delivered, the three durable writes
 * of one message (log, target transcript, log) as the runtime makes them, from 1, 8 and 64
 * concurrent senders, against a bare loop that appends the same bytes to the same files with the
 * same group commit. Two layouts: every sender messaging one member (its transcript appends
 * group-commit like the log's), and every sender messaging its own member (each delivery needs a
 * flush of a different file, which no group commit can share). The gap to the bare loop is the
 * store's own overhead; 64-vs-1 is what group commit buys.
 */
export const durableMessagingBench: Bench = {
  name: 'durable-messaging',
  title: 'send -> delivered on the fsync JSONL store vs bare appends with the same group commit',
  async run({ quick, log: say }) {
    const configs: Config[] = quick
      ? [
          { senders: 1, perSender: 30 },
          { senders: 8, perSender: 10 },
          { senders: 64, perSender: 3 },
        ]
      : [
          { senders: 1, perSender: 250 },
          { senders: 8, perSender: 120 },
          { senders: 64, perSender: 40 },
        ];
    const repeats = quick ? 3 : 7;
    const clock: Clock = { now: () => Date.now(), setTimer: () => () => {} };
    const bytes = sampleBytes(clock);
    const root = await mkdtemp(join(tmpdir(), 'teamwire-bench-durable-'));
    const figures: Figure[] = [];
    const row = (name: string, rate: Rates) =>
      figure({
        bench: 'durable-messaging',
        name,
        subject: { label: 'teamwire', value: rate.store, unit: 'msg/s' },
        baseline: { label: 'bare appends', value: rate.bare, unit: 'msg/s' },
        ratioOf: 'store / bare',
        ratio: rate.store / rate.bare,
        target: { op: '>=', value: 0.5 },
        note: `TeamState commands + JSONL store, fsync; 3 durable appends per message (${bytes.queued.length}+${bytes.transcript.length}+${bytes.delivered.length} bytes; the transcript's through the ${bytes.journal.length}-byte journal line, its member file written unflushed); fdatasync per message: store ${rate.storeSyncs.toFixed(2)}, bare ${rate.bareSyncs.toFixed(2)}; CPU per message: store ${rate.storeCpu.toFixed(0)} µs, bare ${rate.bareCpu.toFixed(0)} µs; median of ${repeats}`,
      });
    try {
      const [single, ...concurrent] = configs as [Config, ...Config[]];
      say(`durable-messaging: 1 sender × ${single.perSender} messages, ${repeats} runs`);
      // With one sender both layouts are the same thing.
      const one = await measure(root, 'pairs', single, repeats, bytes, clock);
      figures.push(row('send->delivered, 1 sender', one));
      for (const layout of ['fan-in', 'pairs'] as const) {
        let many: Rates | undefined;
        for (const config of concurrent) {
          say(
            `durable-messaging: ${config.senders} senders ${LAYOUT_LABEL[layout]} × ${config.perSender} messages, ${repeats} runs`,
          );
          many = await measure(root, layout, config, repeats, bytes, clock);
          figures.push(
            row(`send->delivered, ${config.senders} senders ${LAYOUT_LABEL[layout]}`, many),
          );
        }
        const last = concurrent.at(-1) as Config;
        const top = many as Rates;
        figures.push(
          figure({
            bench: 'durable-messaging',
            name: `group commit: ${last.senders} senders vs 1, ${LAYOUT_LABEL[layout]}`,
            subject: { label: `${last.senders} senders`, value: top.store, unit: 'msg/s' },
            baseline: { label: '1 sender', value: one.store, unit: 'msg/s' },
            ratioOf: `${last.senders} / 1`,
            ratio: top.store / one.store,
            target: { op: '>=', value: 10 },
            note: `the bare loop scales ${(top.bare / one.bare).toFixed(1)}x with the same batching`,
          }),
        );
      }
    } finally {
      await rm(root, { recursive: true, force: true });
    }
    return figures;
  },
};
