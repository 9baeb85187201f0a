import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TranscriptEntry } from '@teamwire/core';
import { describe, expect, it } from 'vitest';
import { readTranscript } from './inspect.js';
import { openJsonlTeamStore, TRANSCRIPTS_DIR } from './team-store.js';
import { caught, eachTestInTempDir } from './test-support.js';

const TEAM = '01JTEAMREADTRANSCRIPT00000';

let dir: string;
eachTestInTempDir((path) => {
  dir = path;
});

const entry = (text: string, at: number): TranscriptEntry => ({
  schemaVersion: 1,
  at,
  message: { role: 'user', content: [{ type: 'text', text }] },
});

describe('readTranscript', () => {
  it('reads a member transcript while the store holds the lock, leaving a torn last line out', async () => {
    const store = await openJsonlTeamStore({ teamId: TEAM, dir, create: true });
    try {
      await store.transcripts.append({
        memberId: 'm-1',
        entries: [entry('one', 1), entry('two', 2)],
      });
      // a write cut short by a crash, as the owner may leave it for a moment
      await appendFile(join(dir, TRANSCRIPTS_DIR, 'm-1.jsonl'), '{"schemaVersion":1,"at":3,"mes');
      const read = await readTranscript(dir, 'm-1');
      expect(read).toEqual(await store.transcripts.load({ memberId: 'm-1' }));
      expect(read.map((e) => e.at)).toEqual([1, 2]);
      // a member that never had a turn has no file: nothing to read
      expect(await readTranscript(dir, 'm-2')).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('refuses a complete line that is not a transcript entry, naming it, and an unsafe member id', async () => {
    const store = await openJsonlTeamStore({ teamId: TEAM, dir, create: true });
    await store.transcripts.append({ memberId: 'm-1', entries: [entry('one', 1)] });
    await store.close();
    await appendFile(join(dir, TRANSCRIPTS_DIR, 'm-1.jsonl'), '{"not":"an entry"}\n');
    const error = await caught(readTranscript(dir, 'm-1'));
    expect(error.code).toBe('CORRUPT_LOG');
    expect(error.message).toContain('line 2');
    expect((await caught(readTranscript(dir, '../m-1'))).code).toBe('INVALID_ARGUMENT');
  });
});
