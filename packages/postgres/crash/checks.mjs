// The PostgreSQL crash test's checks: what must hold in the database after every fault, and after
// the final drain (snapshots included: each restored plus the records after it must equal the
// strict fold). Reads the tables directly (never through a worker or the store under test) and
// incrementally: each check reads only the rows added since the previous one, so a check after
// kill 5000 costs what a check after kill 50 does. The final check adds full-table SQL scans.
//
// Placement constraints are checked from the same rows: a member whose agent type requires
// capabilities must only ever be written for (log rows it acts in, its transcript rows) by a
// process that has every one, must only be placed on such a process in the `placements` rows each
// check sees, and every process's `processes` row must declare the capabilities the driver gave it.
// The checker does not ask core which process may host what: it compares the lists itself.

import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { parseTranscriptEntry, TEAM_STATE_SNAPSHOT_VERSION, TeamState } from '@teamwire/core';

/** A double-quoted SQL identifier (schema names are generated, this is a second guard). */
function ident(name) {
  return `"${String(name).replaceAll('"', '""')}"`;
}

/** A short description of an error, for a violation line. */
function describe(error) {
  return error?.code === undefined
    ? String(error?.message ?? error)
    : `${error.code}: ${error.message}`;
}

/**
 * Follows one team in one schema. `check()` after every fault, `final()` once everything stopped.
 * `ackFiles()` lists every acknowledgement file written so far (one per worker process).
 * `requires` maps an agent type to the capabilities its members need (absent: none);
 * `capabilitiesOf(processId)` is what the driver gave that process.
 */
export class TeamChecker {
  #pool;
  #teamId;
  #t;
  #ackFiles;
  #requires;
  #capabilitiesOf;
  /** Set when the log no longer folds: nothing further can be checked. */
  #broken = false;

  // The log, folded incrementally.
  /** @type {TeamState | undefined} */
  #state;
  #lastSeq = 0;
  /** message id -> target member id, for every message.queued record. */
  #queued = new Map();
  /** message id -> how many message.delivered records name it. */
  #delivered = new Map();
  /** Delivered ids read by the previous check: their transcript rows must be visible now. */
  #deliveredBefore = [];
  /** task id -> its last snapshot, for revision and hand-over checks. */
  #tasks = new Map();
  /** In-progress task id -> owner id (kept from task records: the check stays O(in progress)). */
  #inProgress = new Map();

  // Fencing: who wrote for which member with which token.
  /** `${memberId}\u0000${token}` -> the process that wrote with it (log and transcripts). */
  #tokenOwner = new Map();
  /** member id -> {token (BigInt), where} of its last fenced write, per table. */
  #lastToken = { log: new Map(), transcript: new Map() };

  // Transcripts, read per member from the last idx seen.
  /** member id -> last idx read. */
  #cursor = new Map();
  /** member id -> Map(message id -> {batch, parts, idx}). */
  #held = new Map();
  #transcriptRows = 0;

  // Acknowledgements.
  /** ack file -> {offset, partial}. */
  #ackRead = new Map();
  /** ack id -> the file it came from. */
  #acked = new Map();

  counts = {
    checks: 0,
    records: 0,
    queued: 0,
    delivered: 0,
    acknowledged: 0,
    transcriptRows: 0,
    transcriptMessages: 0,
    compactions: 0,
    tasks: 0,
    inProgress: 0,
    pending: 0,
    fenceTokens: 0,
    unfencedWrites: 0,
    snapshots: 0,
    constrainedMembers: 0,
    constrainedWrites: 0,
    constrainedPlacements: 0,
    constrainedHosts: 0,
    placementRowsSeen: 0,
    processesChecked: 0,
  };

  // Placement constraints.
  /** Processes that wrote for a constrained member. */
  #constrainedHosts = new Set();
  /** `${memberId}\u0000${token}` of every write and placement row of a constrained member. */
  #constrainedTokens = new Set();
  /** Processes whose `processes` row a check compared with what the driver gave them. */
  #processesChecked = new Set();

  /** The newest snapshot checked. */
  #snapshotSeq = 0;

  constructor({ pool, schema, teamId, ackFiles, requires = {}, capabilitiesOf = () => [] }) {
    this.#pool = pool;
    this.#teamId = teamId;
    this.#ackFiles = ackFiles;
    this.#requires = requires;
    this.#capabilitiesOf = capabilitiesOf;
    this.#t = {
      log: `${ident(schema)}.team_log`,
      transcript: `${ident(schema)}.transcript`,
      placements: `${ident(schema)}.placements`,
      processes: `${ident(schema)}.processes`,
      snapshots: `${ident(schema)}.team_snapshots`,
    };
  }

  /** The folded state (undefined before the first check). */
  get state() {
    return this.#state;
  }

  /**
   * Reads what was added since the last check and checks it. Order matters and is chosen so that
   * nothing racy is ever flagged: acknowledgements first (an ack is written after its send was
   * durable, so its record is visible to the log read below), then transcripts (a transcript row
   * holds a message only after its message.queued record was durable), then the log.
   * Returns the violations found by this check.
   */
  async check() {
    const violations = [];
    if (this.#broken) return ['the log stopped folding at an earlier check'];
    this.counts.checks++;
    const newAcks = this.#readAcks();
    const deliveredBefore = this.#deliveredBefore;
    const heldNow = await this.#readTranscripts(violations);
    await this.#readLog(violations);
    if (this.#broken) return violations;
    await this.#checkPlacements(violations);
    await this.#checkSnapshots(violations);

    // 2. Transcripts hold only messages queued in the log for that very member.
    for (const { memberId, messageId, idx } of heldNow) {
      const target = this.#queued.get(messageId);
      if (target === undefined) {
        violations.push(
          `transcript row ${memberId}#${idx} holds message ${messageId}, which is not queued in the log`,
        );
      } else if (target !== memberId) {
        violations.push(
          `transcript row ${memberId}#${idx} holds message ${messageId}, queued for ${this.#name(target)}`,
        );
      }
    }
    // 3. Every acknowledged send is queued.
    for (const [id, file] of newAcks) {
      if (!this.#queued.has(id)) {
        violations.push(`acknowledged send ${id} (${file}) is not queued in the log`);
      }
    }
    // A message marked delivered by the previous check's read is in its target's transcript
    // (the transcript write comes first; this check's transcript read came after that log read).
    for (const id of deliveredBefore) {
      const target = this.#queued.get(id);
      if (!this.#held.get(target)?.has(id)) {
        violations.push(
          `message ${id} is marked delivered but ${this.#name(target)}'s transcript does not hold it`,
        );
      }
    }
    // 5. No task with two owners: every in-progress task has one owner, a live member.
    for (const [taskId, ownerId] of this.#inProgress) {
      const phase = this.#state.member(ownerId ?? '')?.phase;
      if (ownerId === undefined) violations.push(`task ${taskId} is in progress without an owner`);
      else if (phase !== 'active') {
        violations.push(
          `task ${taskId} is in progress, owned by ${this.#name(ownerId)} whose phase is ${phase}`,
        );
      }
    }
    this.counts.inProgress = this.#inProgress.size;
    this.counts.pending = this.#state.pendingMail().length;
    return violations;
  }

  /** Pending mail of live (active) members, from the last check: what the drain waits for. */
  pendingForLive() {
    if (this.#state === undefined) return [];
    return this.#state
      .pendingMail()
      .filter((message) => this.#state.member(message.targetId)?.phase === 'active');
  }

  /** Tasks not completed yet (pending or in progress), from the last check: the drain waits for them. */
  openTasks() {
    if (this.#state === undefined) return [];
    return this.#state.listTasks({ status: ['pending', 'in_progress'] });
  }

  /** Acknowledged ids whose message is still pending for a live member. */
  pendingAcknowledged() {
    return this.pendingForLive().filter((message) => this.#acked.has(message.id));
  }

  /** The last seq folded. */
  get lastSeq() {
    return this.#lastSeq;
  }

  /**
   * After the drain and a clean stop of every worker: a last incremental check, then exactly-once
   * (every acknowledged send delivered once and in its target's transcript once; every message
   * for a live member likewise) and full-table scans that do not trust the incremental reads.
   */
  async final() {
    const violations = await this.check();
    if (this.#broken) return violations;
    const state = this.#state;
    const live = (id) => state.member(id)?.phase === 'active';

    const stuck = this.pendingForLive();
    if (stuck.length > 0) {
      violations.push(
        `${stuck.length} message(s) still pending for live members after the drain, first ${stuck[0].id} (${stuck[0].kind}) for ${this.#name(stuck[0].targetId)}`,
      );
    }
    for (const [id, file] of this.#acked) {
      const target = this.#queued.get(id);
      if (target === undefined) continue; // reported when it was read
      const delivered = this.#delivered.get(id) ?? 0;
      if (delivered !== 1) {
        violations.push(
          `acknowledged send ${id} (${file}) has ${delivered} message.delivered records, not 1`,
        );
      }
      if (!this.#held.get(target)?.has(id)) {
        violations.push(
          `acknowledged send ${id} (${file}) is not in ${this.#name(target)}'s transcript`,
        );
      }
    }
    for (const [id, target] of this.#queued) {
      if (!live(target) || this.#acked.has(id)) continue;
      if (!this.#held.get(target)?.has(id)) {
        violations.push(`message ${id} for ${this.#name(target)} is not in its transcript`);
      }
    }
    await this.#fullScans(violations);
    return violations;
  }

  // ------------------------------------------------------------------------------------------

  /** New complete lines of every ack file: [[id, file]]. */
  #readAcks() {
    const fresh = [];
    for (const file of this.#ackFiles()) {
      let read = this.#ackRead.get(file);
      if (read === undefined) {
        read = { offset: 0, partial: '' };
        this.#ackRead.set(file, read);
      }
      let fd;
      try {
        fd = openSync(file, 'r');
      } catch (error) {
        if (error?.code === 'ENOENT') continue; // the worker has not opened it yet
        throw error;
      }
      try {
        const buffer = Buffer.alloc(64 * 1024);
        for (;;) {
          const n = readSync(fd, buffer, 0, buffer.length, read.offset);
          if (n === 0) break;
          read.offset += n;
          const lines = (read.partial + buffer.toString('utf8', 0, n)).split('\n');
          read.partial = lines.pop();
          for (const line of lines) {
            if (line === '') continue;
            if (!this.#acked.has(line)) fresh.push([line, file]);
            this.#acked.set(line, file);
          }
        }
      } finally {
        closeSync(fd);
      }
    }
    this.counts.acknowledged = this.#acked.size;
    return fresh;
  }

  /**
   * Transcript rows after each known member's cursor (members known from the log so far; a
   * member's first rows come after its member record). Checks each row on its own and returns the
   * team messages it found, to be checked against the log once that is read.
   */
  async #readTranscripts(violations) {
    const found = [];
    if (this.#state === undefined) return found;
    const ids = this.#state.members().map((m) => m.id);
    const result = await this.#pool.query(
      `SELECT c.member_id, t.idx::text AS idx_text, t.entry, t.message_id, t.message_part,
              t.process_id, t.fence::text AS fence, t.batch_id::text AS batch_id
         FROM unnest($2::text[], $3::bigint[]) AS c(member_id, last)
         CROSS JOIN LATERAL (
           SELECT * FROM ${this.#t.transcript} t
            WHERE t.team_id = $1 AND t.member_id = c.member_id AND t.idx > c.last
            ORDER BY t.idx) t
        ORDER BY c.member_id, t.idx`,
      [this.#teamId, ids, ids.map((id) => this.#cursor.get(id) ?? 0)],
    );
    for (const row of result.rows) {
      const memberId = row.member_id;
      const idx = Number(row.idx_text);
      const where = `transcript row ${this.#name(memberId)}#${idx}`;
      const expected = (this.#cursor.get(memberId) ?? 0) + 1;
      if (idx !== expected) violations.push(`${where} follows row #${expected - 1}: rows missing`);
      this.#cursor.set(memberId, idx);
      this.#transcriptRows++;
      let entry;
      try {
        entry = parseTranscriptEntry(JSON.parse(row.entry));
      } catch (error) {
        violations.push(`${where} is not a valid transcript entry: ${describe(error)}`);
        continue;
      }
      const source = entry.message.source;
      if (source?.kind === 'compaction') this.counts.compactions++;
      const sourceId = source?.kind === 'team-message' ? source.messageId : null;
      if (sourceId !== row.message_id) {
        violations.push(
          `${where}: column message_id ${row.message_id} but the entry renders ${sourceId}`,
        );
      }
      this.#fenced('transcript', memberId, row.fence, row.process_id, where, violations);
      this.#hosted(memberId, row.fence, row.process_id, true, `written (${where}) by`, violations);
      if (row.message_id === null) continue;
      const messageId = row.message_id;
      const part = row.message_part;
      let messages = this.#held.get(memberId);
      if (messages === undefined) {
        messages = new Map();
        this.#held.set(memberId, messages);
      }
      const held = messages.get(messageId);
      if (held === undefined) {
        if (part !== 0) violations.push(`${where}: message ${messageId} starts at part ${part}`);
        messages.set(messageId, { batch: row.batch_id, parts: 1, idx });
        found.push({ memberId, messageId, idx });
        continue;
      }
      if (held.batch !== row.batch_id) {
        violations.push(
          `${where}: message ${messageId} appears again (first at #${held.idx}, another append)`,
        );
      } else if (part !== held.parts) {
        violations.push(
          `${where}: message ${messageId} part ${part} after ${held.parts} part(s) (duplicate part)`,
        );
      }
      held.parts++;
    }
    this.counts.transcriptRows = this.#transcriptRows;
    let messages = 0;
    for (const held of this.#held.values()) messages += held.size;
    this.counts.transcriptMessages = messages;
    return found;
  }

  /**
   * 5. Snapshots written since the last check (up to the seq folded): the envelope checks out, and
   * the state restored from it plus the log's records after it equals the strict fold.
   */
  async #checkSnapshots(violations) {
    const found = await this.#pool.query(
      `SELECT seq::text AS seq, format_version, state, checksum, bytes::text AS bytes
         FROM ${this.#t.snapshots} WHERE team_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq`,
      [this.#teamId, this.#snapshotSeq, this.#lastSeq],
    );
    for (const row of found.rows) {
      const seq = Number(row.seq);
      this.#snapshotSeq = seq;
      this.counts.snapshots++;
      const where = `the snapshot at seq ${seq}`;
      if (createHash('sha256').update(row.state, 'utf8').digest('hex') !== row.checksum) {
        violations.push(`${where} does not match its checksum`);
        continue;
      }
      if (
        Buffer.byteLength(row.state, 'utf8') !== Number(row.bytes) ||
        row.format_version !== TEAM_STATE_SNAPSHOT_VERSION
      ) {
        violations.push(`${where} records ${row.bytes} bytes of format ${row.format_version}`);
        continue;
      }
      let restored;
      try {
        restored = TeamState.fromSnapshot(JSON.parse(row.state), { teamId: this.#teamId });
        const tail = await this.#pool.query(
          `SELECT record FROM ${this.#t.log} WHERE team_id = $1 AND seq > $2 AND seq <= $3
            ORDER BY seq`,
          [this.#teamId, seq, this.#lastSeq],
        );
        for (const { record } of tail.rows) restored.apply(JSON.parse(record));
      } catch (error) {
        violations.push(`${where} does not restore: ${describe(error)}`);
        continue;
      }
      const view = (state) => ({
        lastSeq: state.lastSeq,
        members: state.members(),
        tasks: state.allTasks(),
        pending: state.pendingMail(),
      });
      if (!isDeepStrictEqual(view(restored), view(this.#state))) {
        violations.push(`${where} plus the records after it differs from the strict fold`);
      }
    }
  }

  /** Log rows after the last seq folded: folds them strictly and checks fencing and tasks. */
  async #readLog(violations) {
    const result = await this.#pool.query(
      `SELECT l.seq::text AS seq_text, l.record, l.actor_id, l.process_id, l.fence::text AS fence
         FROM ${this.#t.log} l WHERE l.team_id = $1 AND l.seq > $2 ORDER BY l.seq`,
      [this.#teamId, this.#lastSeq],
    );
    const delivered = [];
    const records = [];
    /** [member, token, process, seq] of the rows a member acts in, checked once folded. */
    const acted = [];
    for (const row of result.rows) {
      const seq = Number(row.seq_text);
      if (seq !== this.#lastSeq + records.length + 1) {
        violations.push(
          `the log jumps from seq ${this.#lastSeq + records.length} to seq ${seq}: rows missing`,
        );
        this.#broken = true;
        return;
      }
      let record;
      try {
        record = JSON.parse(row.record);
      } catch (error) {
        violations.push(`log row seq ${seq} is not JSON: ${describe(error)}`);
        this.#broken = true;
        return;
      }
      if (record.seq !== seq || record.teamId !== this.#teamId) {
        violations.push(
          `log row seq ${seq} holds record seq ${record.seq} of team ${record.teamId}`,
        );
      }
      records.push(record);
      // 4. No member run by two processes at once.
      if (row.actor_id !== null) {
        this.#fenced('log', row.actor_id, row.fence, row.process_id, `seq ${seq}`, violations);
        acted.push([row.actor_id, row.fence, row.process_id, seq]);
      }
    }
    // 1. The log folds, strictly: the first batch with fromRecords, then record by record.
    try {
      if (this.#state === undefined) {
        this.#state = TeamState.fromRecords(records, { teamId: this.#teamId });
      } else {
        for (const record of records) this.#state.apply(record);
      }
    } catch (error) {
      violations.push(`the log does not fold: ${describe(error)}`);
      this.#broken = true;
      return;
    }
    // 7. A constrained member acts only in a process that has what it requires (checked after the
    // fold: a member's first records may come in the same read as the record that added it).
    for (const [memberId, token, processId, seq] of acted) {
      this.#hosted(memberId, token, processId, true, `written (log seq ${seq}) by`, violations);
    }
    for (const record of records) {
      if (record.type === 'message.queued') {
        this.#queued.set(record.message.id, record.message.targetId);
      } else if (record.type === 'message.delivered') {
        this.#delivered.set(record.messageId, (this.#delivered.get(record.messageId) ?? 0) + 1);
        delivered.push(record.messageId);
      } else if (record.type === 'task') {
        this.#taskStep(record, violations);
      }
    }
    this.#lastSeq += records.length;
    this.#deliveredBefore = delivered;
    this.counts.records = this.#lastSeq;
    this.counts.queued = this.#queued.size;
    this.counts.delivered = this.#delivered.size;
    this.counts.tasks = this.#tasks.size;
    this.counts.fenceTokens = this.#tokenOwner.size;
  }

  /**
   * One fenced write for `memberId` with `token` by `processId`: a token belongs to exactly one
   * process, and a member's tokens never go back in the order of its writes (a process that lost
   * the member can write nothing after the one that took it over).
   */
  #fenced(table, memberId, token, processId, where, violations) {
    if (token === null) {
      this.counts.unfencedWrites++;
      violations.push(
        `${table} ${where}: written for ${this.#name(memberId)} without a fence token`,
      );
      return;
    }
    const key = `${memberId}\u0000${token}`;
    const owner = this.#tokenOwner.get(key);
    if (owner === undefined) this.#tokenOwner.set(key, processId);
    else if (owner !== processId) {
      violations.push(
        `${table} ${where}: ${this.#name(memberId)}'s fence token ${token} used by two processes, ${owner} and ${processId}`,
      );
    }
    const last = this.#lastToken[table].get(memberId);
    const value = BigInt(token);
    if (last !== undefined && value < last.token) {
      violations.push(
        `${table} ${where}: ${this.#name(memberId)}'s fence token goes back from ${last.token} (${last.where}, ${last.processId}) to ${token} (${processId})`,
      );
    }
    if (last === undefined || value >= last.token) {
      this.#lastToken[table].set(memberId, { token: value, where, processId });
    }
  }

  /** The capabilities `memberId`'s agent type requires (none for an unknown member). */
  #required(memberId) {
    const type = this.#state?.member(memberId)?.agentType;
    return type !== undefined && Object.hasOwn(this.#requires, type) ? this.#requires[type] : [];
  }

  /**
   * 7. `processId` wrote for (`written`), or holds the placement of, `memberId` with `token`
   * (`how` says which row, ending in `by` or `on`): it must have every capability the member's
   * agent type requires.
   */
  #hosted(memberId, token, processId, written, how, violations) {
    const required = this.#required(memberId);
    if (required.length === 0) return;
    this.#constrainedTokens.add(`${memberId}\u0000${token}`);
    this.counts.constrainedPlacements = this.#constrainedTokens.size;
    if (written) {
      this.counts.constrainedWrites++;
      this.#constrainedHosts.add(processId);
      this.counts.constrainedHosts = this.#constrainedHosts.size;
    }
    const has = this.#capabilitiesOf(processId);
    const missing = required.filter((capability) => !has.includes(capability));
    if (missing.length > 0) {
      violations.push(
        `${this.#name(memberId)} (requires ${required.join(', ')}) was ${how} ${processId}, which lacks ${missing.join(', ')}`,
      );
    }
  }

  /**
   * 7. The `placements` rows now: a constrained member is placed only on a process that has what
   * it requires (rows of members the log has not shown yet are left to the next check). Then the
   * `processes` rows: each declares the capabilities the driver gave that process, so the
   * capabilities the checks hold a process to are the ones it has in the database.
   */
  async #checkPlacements(violations) {
    const placed = await this.#pool.query(
      `SELECT member_id, process_id, token::text AS token FROM ${this.#t.placements}
        WHERE team_id = $1`,
      [this.#teamId],
    );
    for (const row of placed.rows) {
      if (this.#required(row.member_id).length === 0) continue;
      this.counts.placementRowsSeen++;
      this.#hosted(
        row.member_id,
        row.token,
        row.process_id,
        false,
        `placed (placements row, token ${row.token}) on`,
        violations,
      );
    }
    const processes = await this.#pool.query(
      `SELECT process_id, capabilities FROM ${this.#t.processes} WHERE team_id = $1`,
      [this.#teamId],
    );
    for (const row of processes.rows) {
      this.#processesChecked.add(row.process_id);
      const declared = [...(row.capabilities ?? [])].sort();
      const given = [...this.#capabilitiesOf(row.process_id)].sort();
      if (!isDeepStrictEqual(declared, given)) {
        violations.push(
          `process ${row.process_id} declares capabilities [${declared.join(', ')}] in its processes row, but was given [${given.join(', ')}]`,
        );
      }
    }
    this.counts.processesChecked = this.#processesChecked.size;
    this.counts.constrainedMembers = this.#state
      .members()
      .filter((member) => this.#required(member.id).length > 0).length;
  }

  /**
   * One task record against the task's previous record: revisions grow by one from 1, and an
   * in-progress task never changes hands without going back to pending (nobody reassigns here).
   */
  #taskStep(record, violations) {
    const { task } = record;
    const previous = this.#tasks.get(task.id);
    const expected = previous === undefined ? 1 : previous.revision + 1;
    if (task.revision !== expected) {
      violations.push(
        `task ${task.id} goes to revision ${task.revision} at seq ${record.seq}, expected ${expected}`,
      );
    }
    if (
      previous !== undefined &&
      previous.status === 'in_progress' &&
      task.status === 'in_progress' &&
      previous.ownerId !== task.ownerId
    ) {
      violations.push(
        `task ${task.id} passes from ${this.#name(previous.ownerId)} to ${this.#name(task.ownerId)} at seq ${record.seq} while in progress`,
      );
    }
    this.#tasks.set(task.id, {
      revision: task.revision,
      status: task.status,
      ownerId: task.ownerId,
    });
    if (task.status === 'in_progress') this.#inProgress.set(task.id, task.ownerId);
    else this.#inProgress.delete(task.id);
  }

  /** Full-table checks for the end: they trust none of the incremental bookkeeping. */
  async #fullScans(violations) {
    const q = (text) => this.#pool.query(text, [this.#teamId]);
    const t = this.#t;
    const log = await q(
      `SELECT count(*)::int AS n, coalesce(max(seq), 0)::int AS last FROM ${t.log} WHERE team_id = $1`,
    );
    const { n, last } = log.rows[0];
    if (n !== last || last !== this.#lastSeq) {
      violations.push(
        `the log holds ${n} rows up to seq ${last}; the checks folded ${this.#lastSeq}`,
      );
    }
    const twice = await q(
      `SELECT member_id, message_id, message_part, count(*)::int AS n FROM ${t.transcript}
        WHERE team_id = $1 AND message_id IS NOT NULL
        GROUP BY member_id, message_id, message_part HAVING count(*) > 1 LIMIT 10`,
    );
    for (const row of twice.rows) {
      violations.push(
        `message ${row.message_id} part ${row.message_part} is ${row.n} times in ${this.#name(row.member_id)}'s transcript`,
      );
    }
    const split = await q(
      `SELECT member_id, message_id, count(DISTINCT batch_id)::int AS appends,
              min(message_part) AS first, max(message_part) AS last, count(*)::int AS parts
         FROM ${t.transcript} WHERE team_id = $1 AND message_id IS NOT NULL
        GROUP BY member_id, message_id
       HAVING count(DISTINCT batch_id) > 1 OR min(message_part) <> 0
           OR max(message_part) <> count(*) - 1
        LIMIT 10`,
    );
    for (const row of split.rows) {
      violations.push(
        `message ${row.message_id} in ${this.#name(row.member_id)}'s transcript: ${row.parts} part(s) ${row.first}..${row.last} from ${row.appends} append(s)`,
      );
    }
    const perMember = await q(
      `SELECT member_id, count(*)::int AS n, max(idx)::int AS last FROM ${t.transcript}
        WHERE team_id = $1 GROUP BY member_id`,
    );
    for (const row of perMember.rows) {
      if (this.#state.member(row.member_id) === undefined) {
        violations.push(`transcript of ${row.member_id} belongs to no member of the log`);
      }
      const read = this.#cursor.get(row.member_id) ?? 0;
      if (row.n !== row.last || row.last !== read) {
        violations.push(
          `${this.#name(row.member_id)}'s transcript holds ${row.n} rows up to #${row.last}; the checks read up to #${read}`,
        );
      }
    }
    const shared = await q(
      `SELECT member_id, fence::text AS fence, array_agg(DISTINCT process_id) AS processes FROM (
         SELECT actor_id AS member_id, fence, process_id FROM ${t.log}
          WHERE team_id = $1 AND actor_id IS NOT NULL
         UNION ALL
         SELECT member_id, fence, process_id FROM ${t.transcript} WHERE team_id = $1) w
        GROUP BY member_id, fence HAVING count(DISTINCT process_id) > 1 LIMIT 10`,
    );
    for (const row of shared.rows) {
      violations.push(
        `${this.#name(row.member_id)}'s fence token ${row.fence} was used by ${row.processes.join(', ')}`,
      );
    }
    // 7 again, from every row: each process that wrote for a constrained member has what it needs.
    const constrained = this.#state
      .members()
      .filter((member) => this.#required(member.id).length > 0)
      .map((member) => member.id);
    if (constrained.length === 0) {
      violations.push(
        'no member of an agent type that requires capabilities was added: the placement constraint was not exercised',
      );
    } else if (this.counts.constrainedWrites === 0) {
      violations.push(
        'nothing was written for a member of an agent type that requires capabilities: the placement constraint was not exercised',
      );
    }
    const writers = await this.#pool.query(
      `SELECT member_id, process_id, count(*)::int AS n FROM (
         SELECT actor_id AS member_id, process_id FROM ${t.log}
          WHERE team_id = $1 AND actor_id = ANY($2::text[])
         UNION ALL
         SELECT member_id, process_id FROM ${t.transcript}
          WHERE team_id = $1 AND member_id = ANY($2::text[])) w
        GROUP BY member_id, process_id`,
      [this.#teamId, constrained],
    );
    for (const row of writers.rows) {
      const required = this.#required(row.member_id);
      const has = this.#capabilitiesOf(row.process_id);
      const missing = required.filter((capability) => !has.includes(capability));
      if (missing.length > 0) {
        violations.push(
          `${this.#name(row.member_id)} (requires ${required.join(', ')}) has ${row.n} row(s) written by ${row.process_id}, which lacks ${missing.join(', ')}`,
        );
      }
    }
    const back = await q(
      `SELECT actor_id, seq, fence::text AS fence, previous::text AS previous FROM (
         SELECT actor_id, seq, fence, lag(fence) OVER (PARTITION BY actor_id ORDER BY seq) AS previous
           FROM ${t.log} WHERE team_id = $1 AND actor_id IS NOT NULL) w
        WHERE fence < previous LIMIT 10`,
    );
    for (const row of back.rows) {
      violations.push(
        `${this.#name(row.actor_id)}'s fence token goes back from ${row.previous} to ${row.fence} at seq ${row.seq}`,
      );
    }
  }

  #name(memberId) {
    if (memberId === undefined) return '(nobody)';
    return this.#state?.member(memberId)?.name ?? memberId;
  }
}
