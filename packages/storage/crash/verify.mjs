// The crash test's checks: what must hold in a team folder after any kill, and after the final
// clean run drained the mailbox. Reads the folder without taking its lock or repairing anything.

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  foldTeam,
  isCompaction,
  parseTranscriptEntry,
  repairTranscript,
  transcriptContext,
} from '@teamwire/core';
import { LOG_FILE, readTeamLog, TRANSCRIPTS_DIR, verifyTeam } from '../dist/index.js';

/**
 * The message ids of the acknowledgement file, one per complete line. An unterminated last
 * line (never expected: lines are written whole) is not counted.
 */
export function readAcknowledged(path) {
  if (!existsSync(path)) return [];
  const text = readFileSync(path, 'utf8');
  const lines = text.split('\n');
  lines.pop();
  return lines.filter((line) => line !== '');
}

/**
 * The team-message ids of one transcript file, in order. Complete lines must be valid entries;
 * an unterminated final line counts when it is a valid entry (the store keeps it on open) and is
 * a torn write otherwise. The entries must fold to a context (`transcriptContext`, after the
 * repair a load applies): every compaction fits the context before it, and the ids it lists as
 * replaced are messages the file holds before it.
 */
export function readTranscriptIds(path) {
  const ids = [];
  const problems = [];
  const parsed = [];
  let entries = 0;
  let torn = 0;
  let compactions = 0;
  const lines = readFileSync(path, 'utf8').split('\n');
  const last = lines.pop();
  const take = (line, number, complete) => {
    let entry;
    try {
      entry = parseTranscriptEntry(JSON.parse(line));
    } catch (error) {
      if (!complete) {
        torn++;
        return;
      }
      problems.push(`${path}:${number} is not a valid transcript entry: ${error.message}`);
      return;
    }
    entries++;
    parsed.push(entry);
    if (entry.message.source?.kind === 'team-message') ids.push(entry.message.source.messageId);
    if (isCompaction(entry.message)) {
      compactions++;
      const before = new Set(ids);
      for (const id of entry.message.source.deliveredIds) {
        if (!before.has(id)) {
          problems.push(
            `${path}:${number}: compaction replaces message ${id}, which no earlier line holds`,
          );
        }
      }
    }
  };
  lines.forEach((line, i) => {
    take(line, i + 1, true);
  });
  if (last !== undefined && last !== '') take(last, lines.length + 1, false);
  try {
    transcriptContext(repairTranscript(parsed));
  } catch (error) {
    problems.push(`${path} does not fold to a context: ${error.message}`);
  }
  return { ids, entries, torn, compactions, problems };
}

/**
 * Checks a team folder. Always: the log reads and folds strictly; every task's revisions run
 * 1, 2, 3, ... in log order and an in-progress task never changes hands without being released
 * first; every acknowledged send is queued; no transcript holds a message id twice or a message
 * meant for someone else; every message marked delivered is in its target's transcript.
 * With `final` (after a drain): no mail is pending for a live member, and every message queued
 * for a live member, acknowledged ones first of all, is in its target's transcript exactly once.
 *
 * Returns `{violations: string[], counts}`; never throws for a bad folder.
 */
export async function checkTeamFolder({ dir, teamId, acknowledged, final = false }) {
  const violations = [];
  const counts = {
    records: 0,
    tornLogBytes: 0,
    segments: 0, // log segment files
    snapshots: 0, // snapshot files equal to the full fold
    invalidSnapshots: 0, // snapshot files a kill tore (skipped on open)
    queued: 0,
    delivered: 0,
    acknowledged: acknowledged.length,
    tasks: 0,
    taskRecords: 0,
    transcriptEntries: 0,
    transcriptMessages: 0,
    tornTranscriptLines: 0,
    compactions: 0, // compaction entries in the transcripts
    // What the kill left for recovery to settle:
    heldUndelivered: 0, // in the target's transcript, not yet marked delivered
    pending: 0, // queued for a live member, not in its transcript
    inProgress: 0, // tasks a teammate must resume
    provisioning: 0, // members recovery must settle
    undeliverable: 0, // queued for a member that never started (its spawn was cut by a kill)
  };
  const result = () => ({ violations, counts });

  let snapshot;
  try {
    snapshot = await readTeamLog(dir);
  } catch (error) {
    violations.push(`the log ${join(dir, LOG_FILE)} does not read: ${describe(error)}`);
    return result();
  }
  counts.records = snapshot.records.length;
  counts.tornLogBytes = snapshot.tornBytes;
  counts.segments = snapshot.segments.length;
  let folded;
  try {
    folded = foldTeam(snapshot.records, { teamId });
  } catch (error) {
    violations.push(`the log does not fold: ${describe(error)}`);
    return result();
  }
  // Every snapshot on disk is either skipped on open (torn by a kill) or equal to the full fold,
  // at its seq and brought up to date with the records after it.
  try {
    const verified = await verifyTeam(dir, { teamId });
    for (const checked of verified.snapshots) {
      if (checked.status === 'differs') {
        violations.push(`snapshot ${checked.path} differs from the full fold: ${checked.problem}`);
      }
      if (checked.status === 'invalid') counts.invalidSnapshots++;
      else counts.snapshots++;
    }
  } catch (error) {
    violations.push(`the snapshots do not verify: ${describe(error)}`);
  }

  const queued = new Map();
  const delivered = new Set();
  const tasks = new Map();
  for (const record of snapshot.records) {
    if (record.type === 'message.queued') queued.set(record.message.id, record.message);
    else if (record.type === 'message.delivered') delivered.add(record.messageId);
    else if (record.type === 'task') {
      counts.taskRecords++;
      checkTaskStep(tasks.get(record.task.id), record, violations);
      tasks.set(record.task.id, record.task);
    }
  }
  counts.queued = queued.size;
  counts.delivered = delivered.size;
  counts.tasks = tasks.size;

  for (const id of acknowledged) {
    if (!queued.has(id)) violations.push(`acknowledged send ${id} is not queued in the log`);
  }

  // Transcripts: which member holds which message, and how often.
  const members = new Map(folded.roster.map((m) => [m.id, m]));
  const held = new Map(); // memberId -> Map(messageId -> count)
  const transcriptsDir = join(dir, TRANSCRIPTS_DIR);
  const files = existsSync(transcriptsDir) ? readdirSync(transcriptsDir) : [];
  for (const file of files.sort()) {
    if (!file.endsWith('.jsonl')) continue;
    const memberId = file.slice(0, -'.jsonl'.length);
    const member = members.get(memberId);
    if (member === undefined) {
      violations.push(`transcript ${file} belongs to no member of the log`);
      continue;
    }
    const read = readTranscriptIds(join(transcriptsDir, file));
    violations.push(...read.problems);
    counts.transcriptEntries += read.entries;
    counts.transcriptMessages += read.ids.length;
    counts.tornTranscriptLines += read.torn;
    counts.compactions += read.compactions;
    const seen = new Map();
    for (const id of read.ids) {
      const times = (seen.get(id) ?? 0) + 1;
      seen.set(id, times);
      if (times === 2)
        violations.push(`message ${id} appears twice in ${member.name}'s transcript`);
      const message = queued.get(id);
      if (message === undefined) {
        // Runners only deliver mail whose `message.queued` record is durable, so a transcript can
        // never hold a message the log lost.
        violations.push(
          `message ${id} is in ${member.name}'s transcript but not queued in the log`,
        );
      } else if (message.targetId !== memberId) {
        violations.push(
          `message ${id} for ${nameOf(members, message.targetId)} is in ${member.name}'s transcript`,
        );
      }
    }
    held.set(memberId, seen);
  }
  const timesHeld = (message) => held.get(message.targetId)?.get(message.id) ?? 0;

  for (const id of delivered) {
    const message = queued.get(id);
    if (message !== undefined && timesHeld(message) === 0) {
      violations.push(
        `message ${id} is marked delivered but ${nameOf(members, message.targetId)}'s transcript does not hold it`,
      );
    }
  }
  for (const message of folded.pendingMail) {
    if (members.get(message.targetId)?.phase !== 'active') {
      counts.undeliverable++;
      continue;
    }
    if (timesHeld(message) > 0) counts.heldUndelivered++;
    else counts.pending++;
  }
  counts.inProgress = folded.tasks.filter((task) => task.status === 'in_progress').length;
  counts.provisioning = folded.roster.filter((m) => m.phase === 'provisioning').length;

  if (final) {
    const live = (id) => members.get(id)?.phase === 'active';
    const stuck = folded.pendingMail.filter((m) => live(m.targetId));
    if (stuck.length > 0) {
      violations.push(
        `${stuck.length} message(s) still pending after the drain, first ${stuck[0].id} for ${nameOf(members, stuck[0].targetId)}`,
      );
    }
    for (const id of acknowledged) {
      const message = queued.get(id);
      if (message === undefined) continue; // reported above
      const times = timesHeld(message);
      if (times !== 1) {
        violations.push(
          `acknowledged send ${id} is in ${nameOf(members, message.targetId)}'s transcript ${times} times, not once`,
        );
      }
    }
    for (const message of queued.values()) {
      if (!live(message.targetId)) continue;
      const times = timesHeld(message);
      if (times !== 1) {
        violations.push(
          `message ${message.id} (${message.kind}) is in ${nameOf(members, message.targetId)}'s transcript ${times} times, not once`,
        );
      }
    }
  }
  return result();
}

/**
 * One task record against the previous record of the same task: revisions grow by exactly one
 * from 1, and a task that is in progress is never taken over by another owner in one step (the
 * team under test never reassigns, so ownership changes only through pending).
 */
function checkTaskStep(previous, record, violations) {
  const { task } = record;
  const expected = previous === undefined ? 1 : previous.revision + 1;
  if (task.revision !== expected) {
    violations.push(
      `task ${task.id} goes to revision ${task.revision} at seq ${record.seq}, expected ${expected}`,
    );
  }
  if (
    previous !== undefined &&
    task.status === 'in_progress' &&
    previous.ownerId !== undefined &&
    previous.ownerId !== task.ownerId
  ) {
    violations.push(
      `task ${task.id} passes from owner ${previous.ownerId} to ${task.ownerId} at seq ${record.seq}`,
    );
  }
}

function nameOf(members, id) {
  return members.get(id)?.name ?? id;
}

function describe(error) {
  return error?.code === undefined
    ? String(error?.message ?? error)
    : `${error.code}: ${error.message}`;
}
