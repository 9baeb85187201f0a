import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  type ChatMessage,
  contentText,
  parseTranscriptEntry,
  repairTranscript,
  type TranscriptEntry,
} from '@teamwire/core';
import { readTeamState, TRANSCRIPTS_DIR, verifyTeam } from '@teamwire/storage';
import type { Command } from './args.js';

/**
 * Prints a team's roster, task board and every member's transcript, without taking its lock. With
 * `verify`, it also folds the whole log and checks every snapshot against it (`ok` false when one
 * differs).
 */
export async function inspectTeam(
  command: Extract<Command, { command: 'inspect' }>,
  options: { cwd: string },
): Promise<{ text: string; ok: boolean }> {
  const teamDir = path.join(path.resolve(options.cwd, command.stateDir), 'teams', command.teamId);
  const reading = await readTeamState(teamDir, { teamId: command.teamId });
  const state = {
    roster: reading.state.members(),
    tasks: reading.state.allTasks(),
    pendingMail: reading.state.pendingMail(),
  };
  const names = new Map(state.roster.map((m) => [m.id, m.name]));
  const from = reading.snapshotSeq > 0 ? `, from the snapshot at seq ${reading.snapshotSeq}` : '';
  const out: string[] = [
    `Team ${command.teamId} (${reading.state.lastSeq} records${from}, ${teamDir})`,
    '',
    'Roster:',
  ];
  for (const m of state.roster) {
    out.push(
      `  ${m.name.padEnd(14)} ${m.phase.padEnd(12)} ${m.agentType}${m.error ? `  error: ${m.error}` : ''}`,
    );
  }
  out.push('', 'Board:');
  for (const t of state.tasks) {
    const owner = t.ownerId ? (names.get(t.ownerId) ?? t.ownerId) : '-';
    out.push(
      `  ${t.id.padEnd(8)} ${t.status.padEnd(12)} ${owner.padEnd(12)} r${t.revision} ${t.subject}`,
    );
  }
  out.push('', `Pending mail: ${state.pendingMail.length}`);
  const dead = reading.state.deadLetters();
  out.push('', `Dead letters: ${dead.length}`);
  for (const d of dead) {
    const to = names.get(d.message.targetId) ?? d.message.targetId;
    const what = d.message.summary ?? `${d.message.kind} ${d.message.id}`;
    out.push(
      `  ${d.message.senderName} -> ${to}: ${what}  ${d.reason}${d.detail ? ` (${d.detail})` : ''}`,
    );
  }
  for (const m of state.roster) {
    const entries = await readTranscript(path.join(teamDir, TRANSCRIPTS_DIR, `${m.id}.jsonl`));
    out.push('', `Transcript of ${m.name} (${entries.length} entries):`);
    for (const entry of entries) out.push(`  ${describe(entry.message)}`);
  }
  let ok = true;
  if (command.verify) {
    const verified = await verifyTeam(teamDir, { teamId: command.teamId });
    ok = verified.ok;
    out.push('', `Verification: a full fold of ${verified.records} records`);
    if (verified.snapshots.length === 0) out.push('  no snapshots');
    for (const s of verified.snapshots) {
      out.push(`  snapshot at seq ${s.seq}: ${s.status}${s.problem ? ` (${s.problem})` : ''}`);
    }
    out.push(ok ? '  ok: every snapshot equals the full fold' : '  FAILED: a snapshot differs');
  }
  return { text: `${out.join('\n')}\n`, ok };
}

async function readTranscript(file: string): Promise<TranscriptEntry[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return [];
  }
  const lines = text.split('\n');
  const torn = lines.pop();
  const entries: TranscriptEntry[] = [];
  for (const line of lines) {
    if (line.trim()) entries.push(parseTranscriptEntry(JSON.parse(line)));
  }
  if (torn?.trim()) {
    try {
      entries.push(parseTranscriptEntry(JSON.parse(torn)));
    } catch {
      // an unterminated last line being written right now
    }
  }
  return repairTranscript(entries);
}

function describe(message: ChatMessage): string {
  const clip = (s: string) => {
    const flat = s.replace(/\s+/g, ' ').trim();
    return flat.length > 160 ? `${flat.slice(0, 159)}…` : flat;
  };
  if (message.role === 'user' && message.source?.kind === 'compaction') {
    const { reason, policy, tokensBefore, tokensAfter } = message.source;
    return `compaction (${reason}, ${policy}, ${tokensBefore} -> ${tokensAfter} tokens): ${clip(contentText(message.content))}`;
  }
  if (message.role === 'user') {
    const from =
      message.source?.kind === 'team-message' ? ` from ${message.source.senderName}` : '';
    return `user${from}: ${clip(contentText(message.content))}`;
  }
  if (message.role === 'assistant') {
    const calls = message.toolCalls.map(
      (c) => `${c.name}(${clip(JSON.stringify(c.input)).slice(0, 60)})`,
    );
    return `assistant: ${clip(contentText(message.content))}${calls.length ? ` -> ${calls.join(', ')}` : ''}`;
  }
  return `tool ${message.toolName}${message.isError ? ' (error)' : ''}: ${clip(contentText(message.content))}`;
}
