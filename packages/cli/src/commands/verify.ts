import { TeamError } from '@teamwire/core';
import { openStore } from '../stores.js';
import { SOURCE_HELP, SOURCE_OPTIONS, teamSource } from '../team-source.js';
import { type Verification, verifyJsonl, verifyPorts } from '../verify-records.js';
import type { CliCommand } from './command.js';

const HELP = `teamwire verify — check a team's durable records

Usage:
  teamwire verify --dir <state folder> --team <id> [--json]
  teamwire verify --store postgres://… --team <id> [--json]

Folds the whole log strictly with core's rules (a record that breaks an invariant fails it),
holds every snapshot against that fold (the record it names, the state it holds) and reads every
member's transcript. Exits 0 when all is sound, 1 naming what is wrong (a broken log fails with
its code: CORRUPT_LOG, LOG_INVARIANT, ...). Changes nothing; a JSONL folder is read without its
lock.

Options:
${SOURCE_HELP}
  --json                one JSON object on stdout instead of text
  -h, --help            this text
`;

function formatText(v: Verification): string {
  const out = [`Team ${v.teamId}: ${v.records} records folded strictly`];
  if (v.snapshots.length === 0) out.push('  no snapshots');
  for (const s of v.snapshots) {
    out.push(`  snapshot at seq ${s.seq}: ${s.status}${s.problem ? ` (${s.problem})` : ''}`);
  }
  out.push(`  transcripts read: ${v.transcripts}`);
  out.push(v.problems.length === 0 ? 'ok' : `FAILED: ${v.problems.length} problem(s)`);
  for (const p of v.problems) out.push(`  ${p.code}: ${p.message}`);
  return `${out.join('\n')}\n`;
}

export const verifyCommand: CliCommand = {
  name: 'verify',
  summary: "check a team's durable records (log, snapshots, transcripts)",
  help: HELP,
  options: { ...SOURCE_OPTIONS, json: { type: 'boolean' } },
  async run(values, io) {
    const source = await teamSource(values, io.cwd);
    let verification: Verification;
    if (source.kind === 'jsonl') {
      verification = await verifyJsonl(source.teamDir, source.teamId);
    } else {
      const store = await openStore(source, {
        runs: { lead: false, agentTypes: [] },
        role: 'verify',
      });
      try {
        verification = await verifyPorts(source.teamId, store.log, store.transcripts);
      } finally {
        await store.close();
      }
    }
    io.stdout.write(
      values.json === true
        ? `${JSON.stringify(verification, null, 2)}\n`
        : formatText(verification),
    );
    const [first] = verification.problems;
    if (first === undefined) return 0;
    const more =
      verification.problems.length > 1 ? ` (and ${verification.problems.length - 1} more)` : '';
    throw new TeamError(first.code, `${first.message}${more}`);
  },
};
