// What a finished run must show in its durable records: the team log (folded with core's
// foldTeam), every member's transcript and the report file. Read through the stores' own APIs
// (@teamwire/storage, @teamwire/postgres) after every process of the run has exited.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { contentText, DEFAULT_MAX_REPEATED_FAILURES, foldTeam } from '@teamwire/core';
import { openPostgresTeamStore } from '@teamwire/postgres';
import { openJsonlTeamStore } from '@teamwire/storage';
import { expectedFolder, folderName, reportRows } from './fixtures.mjs';
import { MAX_COMMIT_REFUSALS } from './scenario.mjs';

/** The team log and every member's transcript, from the store the run used. */
export async function readTeam({ teamId, teamDir, url, schema }) {
  const store =
    url === undefined
      ? await openJsonlTeamStore({ teamId, dir: teamDir, create: false, snapshots: false })
      : await openPostgresTeamStore({
          teamId,
          connectionString: url,
          schema,
          processId: `liveness-check-${process.pid}`,
          runs: { lead: false, agentTypes: [] },
          snapshots: false,
        });
  try {
    const records = [];
    for await (const record of store.log.read()) records.push(record);
    const team = foldTeam(records, { teamId });
    const transcripts = new Map();
    for (const member of team.roster) {
      transcripts.set(member.id, await store.transcripts.load({ memberId: member.id }));
    }
    return { records, team, transcripts };
  } finally {
    await store.close();
  }
}

/**
 * The model calls each member made, as its transcript holds them: one assistant message per call
 * whose answer was recorded (a call cut off by an interrupt or a kill before its answer was
 * recorded leaves nothing, so it is not counted).
 */
export function modelCalls(team, transcripts) {
  const byName = new Map();
  for (const member of team.roster) {
    const entries = transcripts.get(member.id) ?? [];
    const calls = entries.filter(
      (e) => e.message.role === 'assistant' && e.message.source === undefined,
    ).length;
    byName.set(member.name, calls);
  }
  return byName;
}

/** JSON with sorted keys, so the same input is the same key however its fields were ordered. */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * The longest run of one tool call (name and input) failing the same way (result text) in a
 * member's transcript with no new mail for it in between (mail is something new to go on, as
 * core's guard counts); a success of that call ends its run.
 */
export function longestRepeatedFailure(entries) {
  const calls = new Map();
  let counts = new Map();
  let worst = { count: 0 };
  for (const { message } of entries) {
    if (message.role === 'user' && message.source?.kind === 'team-message') {
      counts = new Map();
    } else if (message.role === 'assistant') {
      for (const call of message.toolCalls) calls.set(call.id, call);
    } else if (message.role === 'tool' && message.source === undefined) {
      const call = calls.get(message.toolCallId);
      if (call === undefined) continue;
      const key = `${call.name}\u0000${canonical(call.input)}`;
      if (message.isError !== true) {
        counts.delete(key);
        continue;
      }
      const text = contentText(message.content);
      const byText = counts.get(key) ?? new Map();
      counts.set(key, byText);
      const count = (byText.get(text) ?? 0) + 1;
      byText.set(text, count);
      if (count > worst.count) worst = { count, tool: call.name, text };
    }
  }
  return worst;
}

/**
 * Every violation of the liveness properties in a finished run (an empty list: it holds), with
 * what was measured.
 */
export function checkRun({ plan, read, reportFile }) {
  const violations = [];
  const { team, transcripts } = read;
  const names = new Map(team.roster.map((m) => [m.id, m.name]));
  const name = (id) => names.get(id) ?? id;

  // every task completed or deleted
  const open = team.tasks.filter((t) => t.status !== 'completed' && t.status !== 'deleted');
  for (const t of open) {
    violations.push(
      `${t.id} "${t.subject}" ended ${t.status}${t.ownerId ? ` (owner ${name(t.ownerId)})` : ''}`,
    );
  }
  if (team.tasks.length === 0) violations.push('the team has no task at all');

  // every message delivered or dead-lettered with a reason
  for (const m of team.pendingMail) {
    const target = team.roster.find((r) => r.id === m.targetId);
    violations.push(
      `message ${m.id} (${m.kind}) from ${name(m.senderId)} to ${name(m.targetId)} (${target?.phase ?? 'unknown'}) was neither delivered nor dead-lettered`,
    );
  }
  for (const d of team.deadLetters) {
    if (typeof d.reason !== 'string' || d.reason === '') {
      violations.push(`message ${d.message.id} was dead-lettered without a reason`);
    }
  }

  // `fix --approve`: every request decided, every approved commit run once, and a folder never
  // approved refused exactly as often as its reviewer takes before giving it up
  const approvals = commitApprovals(read.records);
  violations.push(...approvals.violations);

  // the report written, with every folder
  if (!existsSync(reportFile)) {
    violations.push(`no report at ${reportFile}`);
  } else {
    const markdown = readFileSync(reportFile, 'utf8');
    violations.push(...checkReport(plan, markdown, approvals.refused));
  }

  // no identical failing tool call repeated past core's bound
  for (const member of team.roster) {
    const worst = longestRepeatedFailure(transcripts.get(member.id) ?? []);
    if (worst.count > DEFAULT_MAX_REPEATED_FAILURES) {
      violations.push(
        `${member.name} made the same failing ${worst.tool} call ${worst.count} times in a row (bound ${DEFAULT_MAX_REPEATED_FAILURES}): ${worst.text.slice(0, 160)}`,
      );
    }
  }

  const calls = modelCalls(team, transcripts);
  const deadLetters = new Map();
  for (const d of team.deadLetters) deadLetters.set(d.reason, (deadLetters.get(d.reason) ?? 0) + 1);
  return {
    violations,
    calls,
    totalCalls: [...calls.values()].reduce((a, b) => a + b, 0),
    records: read.records.length,
    refused: approvals.refused,
    approvals: { requests: approvals.requests, refusals: approvals.refusals },
    deadLetters,
    failedMembers: team.roster.filter((m) => m.phase === 'failed').map((m) => m.name),
  };
}

/**
 * The commit approvals of a fix team (`fix --approve`), from its log: how many were asked for and
 * refused (rejected or expired), the folders refused for good (never approved: folder -> refusals)
 * and what breaks the rules (one left pending, an approved commit not run exactly once, a folder
 * given up before its reviewer's bound of refusals).
 */
export function commitApprovals(records) {
  const asked = new Map();
  const decided = new Map();
  const started = new Map();
  for (const r of records) {
    if (r.type === 'approval.requested' && r.approval.toolName === 'commit_changes') {
      let folder;
      try {
        folder = JSON.parse(r.approval.input ?? 'null')?.paths?.[0];
      } catch {
        folder = undefined;
      }
      asked.set(r.approval.id, folder ?? '(unknown)');
    } else if (r.type === 'approval.decided') {
      decided.set(r.approvalId, r.decision);
    } else if (r.type === 'approval.started') {
      started.set(r.approvalId, (started.get(r.approvalId) ?? 0) + 1);
    }
  }
  const violations = [];
  const byFolder = new Map();
  let refusals = 0;
  for (const [id, folder] of asked) {
    const decision = decided.get(id);
    if (decision === undefined)
      violations.push(`the commit approval ${id} of ${folder} is pending`);
    if (decision === 'rejected' || decision === 'expired') refusals++;
    const runs = started.get(id) ?? 0;
    if (decision === 'approved' && runs !== 1) {
      violations.push(`the approved commit ${id} of ${folder} ran ${runs} times, not once`);
    }
    const list = byFolder.get(folder) ?? [];
    list.push(decision);
    byFolder.set(folder, list);
  }
  const refused = new Map();
  for (const [folder, decisions] of byFolder) {
    if (decisions.includes('approved')) continue;
    const n = decisions.filter((d) => d === 'rejected' || d === 'expired').length;
    if (n === MAX_COMMIT_REFUSALS) refused.set(folder, n);
    else {
      violations.push(
        `${folder}'s commit was never approved, refused ${n} time(s) (${decisions.join(', ')}); its reviewer gives it up after ${MAX_COMMIT_REFUSALS}`,
      );
    }
  }
  return { requests: asked.size, refusals, refused, violations };
}

/**
 * The exit of a `fix --approve` run against its decisions: 1 and each refused folder named in the
 * summary's missing work when a folder was refused for good, else 0.
 */
export function checkExit({ exit, lines, refused }) {
  if (exit === undefined) return []; // it timed out or was killed: reported already
  const out = [];
  const want = refused.size > 0 ? 1 : 0;
  if (exit.code !== want) {
    const why =
      refused.size > 0
        ? `${[...refused.keys()].join(', ')} refused for good`
        : 'no folder refused for good';
    out.push(
      `the main process exited with ${exit.signal ?? `code ${exit.code}`}, expected ${want} (${why})`,
    );
  }
  const named = new Set();
  for (const line of lines) {
    const m = /^ {4}- (\S+): its commit was refused /.exec(line);
    if (m) named.add(m[1]);
  }
  const expected = [...refused.keys()].sort().join(', ');
  const said = [...named].sort().join(', ');
  if (said !== expected) {
    out.push(`the summary names ${said || 'no folder'} as refused, the log ${expected || 'none'}`);
  }
  return out;
}

function checkReport(plan, markdown, refused = new Map()) {
  const out = [];
  const folders = Array.from({ length: plan.team.folders }, (_, i) => folderName(i));
  if (plan.team.kind === 'fix') {
    // | folder | reviewer | branch | result | commits | files changed |
    const results = new Map();
    for (const line of markdown.split('\n')) {
      const m = /^\| (unit\d+) \| [^|]+ \| [^|]+ \| ([^|]+?) \|/.exec(line);
      if (m) results.set(m[1], m[2]);
    }
    for (const f of folders) {
      const result = results.get(f);
      // a folder refused for good is reported as such, every other one merged
      const want = refused.has(f) ? 'not committed' : 'merged';
      if (result !== want) {
        out.push(`the report says ${f}: ${result ?? '(missing)'}, expected ${want}`);
      }
    }
    return out;
  }
  const rows = reportRows(markdown);
  folders.forEach((f, i) => {
    const row = rows.get(f);
    const want = expectedFolder(i);
    if (row === undefined) out.push(`the report has no row for ${f}`);
    else if (JSON.stringify(row) !== JSON.stringify(want)) {
      out.push(`the report says ${f}: ${JSON.stringify(row)}, expected ${JSON.stringify(want)}`);
    }
  });
  if (markdown.includes('not reviewed')) out.push('the report lists a folder as not reviewed');
  return out;
}

/** The team folder of a JSONL run. */
export const teamFolder = (stateDir, teamId) => join(stateDir, 'teams', teamId);
