import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminPool, describePg, dropSchema, freshSchema, PG_URL } from './pg-test-support.js';
import {
  CLI,
  FIXTURE_EXPECTED,
  makeFixtureRepo,
  parseReportTable,
  tempDir,
} from './test-support.js';

describePg('a worker that joins a team by itself', () => {
  const db = freshSchema();
  let admin: pg.Pool;
  beforeAll(() => {
    admin = adminPool();
  });
  afterAll(async () => {
    await dropSchema(admin, db.schema);
    await admin.end();
  });

  it('keeps the review going when every worker the main process started dies', async () => {
    const work = tempDir('joined');
    makeFixtureRepo(path.join(work, 'repo'));
    const env = { ...process.env, ...db.env, INIT_CWD: work };
    const main = spawn(
      process.execPath,
      [
        CLI,
        '--dir',
        'repo',
        '--teammates',
        '2',
        '--plain',
        '--store',
        PG_URL,
        '--workers',
        '1',
        '--pace',
        '150',
        '--report',
        'joined.md',
      ],
      { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let joined: ReturnType<typeof spawn> | undefined;
    let joinedOut = '';
    let killed = false;
    const exited = new Promise<number | null>((resolve) => main.on('close', resolve));
    main.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const team = /— team (\S+)/.exec(stdout)?.[1];
      const worker = /started worker 1 \(pid (\d+), process \S+\)/.exec(stdout)?.[1];
      if (joined === undefined && team !== undefined && worker !== undefined) {
        joined = spawn(process.execPath, [CLI, 'worker', '--store', PG_URL, '--team', team], {
          cwd: work,
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        joined.stdout?.on('data', (d: Buffer) => {
          joinedOut += d.toString();
        });
      }
      // once a reviewer works in the started worker, and the joined one is up: kill the former
      if (
        !killed &&
        worker !== undefined &&
        joinedOut.length > 0 &&
        / reviewer-\d+ turn on /.test(stdout)
      ) {
        killed = true;
        process.kill(Number(worker), 'SIGKILL');
      }
    });
    const code = await exited;
    const joinedCode = await new Promise<number | null>((resolve) => {
      if (joined === undefined || joined.exitCode !== null) resolve(joined?.exitCode ?? null);
      else joined.on('close', resolve);
    });
    expect(killed, stdout).toBe(true);
    expect(stdout).toMatch(
      /the workers this process started exited; \d+ other process\(es\) of the team go on/,
    );
    expect(code, stdout).toBe(0);
    expect(joinedCode, joinedOut).toBe(0);
    const report = readFileSync(path.join(work, 'joined.md'), 'utf8');
    expect(
      Object.fromEntries(
        parseReportTable(report).map((r) => [
          r.unit,
          { files: r.files, lines: r.lines, todo: r.todo, exports: r.exports },
        ]),
      ),
    ).toEqual(FIXTURE_EXPECTED);
  }, 120_000);
});
