import assert from 'node:assert/strict';
import type { TranscriptEntry } from '../../chat.js';
import { TERMINATED_TOOL_RESULT } from '../../chat.js';
import { TeamError } from '../../errors.js';
import type { TranscriptStore } from '../../ports/transcript-store.js';
import type { ConformanceTestApi } from './api.js';
import { assistantEntry, jsonCopy, toolEntry, userEntry } from './api.js';

/** One transcript store under test, fresh and empty, with how to reach its data again. */
export interface TranscriptStoreConformanceSubject {
  /** The store under test, fresh and empty. */
  store: TranscriptStore;
  /**
   * Returns a new store over the same durable data. Called only after `store.close()` resolved.
   * Leave it out for stores without durable data; the reopen tests are then skipped.
   */
  reopen?: () => Promise<TranscriptStore>;
  /** Releases what the subject holds (temporary folders, connections). Runs after every test. */
  cleanup?: () => Promise<void>;
}

/** How the suite obtains a fresh subject for every test. */
export interface TranscriptStoreConformanceOptions {
  /** Returns a fresh subject; called once per test. */
  create: () => Promise<TranscriptStoreConformanceSubject>;
}

const ALICE = '01JALICE0000000000000000AA';
const BOB = '01JBOB000000000000000000BB';

function terminated(at: number, toolCallId: string, toolName: string): TranscriptEntry {
  return {
    schemaVersion: 1,
    at,
    message: {
      role: 'tool',
      toolCallId,
      toolName,
      content: [{ type: 'text', text: TERMINATED_TOOL_RESULT }],
      isError: true,
    },
  };
}

/**
 * The behaviour every {@link TranscriptStore} implementation must show: per-member ordered
 * conversations returned as JSON-equal copies, tool calls without a result answered with
 * `TERMINATED_TOOL_RESULT` on load (without changing what is stored), orphan results dropped,
 * refusal after close and survival across a reopen.
 *
 * Register it inside a test file: `defineTranscriptStoreConformance({ describe, it }, { create })`.
 */
export function defineTranscriptStoreConformance(
  test: ConformanceTestApi,
  options: TranscriptStoreConformanceOptions,
): void {
  const { describe, it } = test;

  const withStore =
    (
      body: (
        subject: TranscriptStoreConformanceSubject,
        opened: TranscriptStore[],
      ) => Promise<void>,
    ) =>
    async () => {
      const subject = await options.create();
      const opened: TranscriptStore[] = [subject.store];
      try {
        await body(subject, opened);
      } finally {
        for (const store of opened) await store.close().catch(() => undefined);
        await subject.cleanup?.();
      }
    };

  describe('TranscriptStore conformance', () => {
    it(
      'loads an empty conversation for a member without one',
      withStore(async ({ store }) => {
        assert.equal(store.specificationVersion, 'v1');
        assert.deepEqual(await store.load({ memberId: ALICE }), []);
      }),
    );

    it(
      'keeps one ordered conversation per member',
      withStore(async ({ store }) => {
        const alice = [userEntry(1, 'hi alice', 'msg-1'), assistantEntry(2, 'hello')];
        const bob = [userEntry(3, 'hi bob'), assistantEntry(4, 'hey'), userEntry(5, 'more')];
        await store.append({ memberId: ALICE, entries: alice.slice(0, 1) });
        await store.append({ memberId: BOB, entries: bob.slice(0, 2) });
        await store.append({ memberId: ALICE, entries: alice.slice(1) });
        await store.append({ memberId: BOB, entries: bob.slice(2) });
        assert.deepEqual(await store.load({ memberId: ALICE }), jsonCopy(alice));
        assert.deepEqual(await store.load({ memberId: BOB }), jsonCopy(bob));
      }),
    );

    it(
      'writes concurrent appends in call order',
      withStore(async ({ store }) => {
        const entries = Array.from({ length: 40 }, (_, i) => userEntry(i, `entry ${i}`));
        await Promise.all([
          ...entries.map((entry) => store.append({ memberId: ALICE, entries: [entry] })),
          store.append({ memberId: BOB, entries: entries.slice(0, 3) }),
        ]);
        assert.deepEqual(await store.load({ memberId: ALICE }), jsonCopy(entries));
        assert.deepEqual(await store.load({ memberId: BOB }), jsonCopy(entries.slice(0, 3)));
      }),
    );

    it(
      'resolves an empty append',
      withStore(async ({ store }) => {
        await store.append({ memberId: ALICE, entries: [] });
        assert.deepEqual(await store.load({ memberId: ALICE }), []);
      }),
    );

    it(
      'answers a tool call left without a result with TERMINATED_TOOL_RESULT',
      withStore(async ({ store }) => {
        const call = assistantEntry(10, 'reading', [
          { id: 'call-1', name: 'read_file' },
          { id: 'call-2', name: 'write_file' },
        ]);
        const result = toolEntry(11, 'call-1', 'read_file');
        await store.append({ memberId: ALICE, entries: [call, result] });
        assert.deepEqual(await store.load({ memberId: ALICE }), [
          jsonCopy(call),
          jsonCopy(result),
          terminated(11, 'call-2', 'write_file'),
        ]);

        const next = userEntry(20, 'next message', 'msg-9');
        await store.append({ memberId: ALICE, entries: [next] });
        assert.deepEqual(await store.load({ memberId: ALICE }), [
          jsonCopy(call),
          jsonCopy(result),
          terminated(20, 'call-2', 'write_file'),
          jsonCopy(next),
        ]);
      }),
    );

    it(
      'drops a tool result that answers no call',
      withStore(async ({ store }) => {
        const entries = [
          userEntry(1, 'start'),
          toolEntry(2, 'ghost', 'read_file'),
          assistantEntry(3, 'call', [{ id: 'call-1', name: 'read_file' }]),
          toolEntry(4, 'call-1', 'read_file'),
          toolEntry(5, 'call-1', 'read_file'),
          assistantEntry(6, 'done'),
        ];
        await store.append({ memberId: ALICE, entries });
        assert.deepEqual(
          await store.load({ memberId: ALICE }),
          jsonCopy([entries[0], entries[2], entries[3], entries[5]]),
        );
      }),
    );

    it(
      'repairs on load without changing what is stored',
      withStore(async ({ store }) => {
        const call = assistantEntry(1, 'working', [{ id: 'call-1', name: 'run' }]);
        await store.append({ memberId: ALICE, entries: [call] });
        assert.equal((await store.load({ memberId: ALICE })).length, 2);
        const result = toolEntry(2, 'call-1', 'run');
        await store.append({ memberId: ALICE, entries: [result] });
        assert.deepEqual(await store.load({ memberId: ALICE }), jsonCopy([call, result]));
      }),
    );

    it(
      'keeps its own copy: changing an appended entry or a loaded one changes nothing',
      withStore(async ({ store }) => {
        const entry = userEntry(1, 'original');
        const expected = jsonCopy(entry);
        await store.append({ memberId: ALICE, entries: [entry] });
        entry.message.content = [{ type: 'text', text: 'changed afterwards' }];
        const loaded = await store.load({ memberId: ALICE });
        assert.deepEqual(loaded, [expected]);
        loaded[0]!.at = 999;
        assert.deepEqual(await store.load({ memberId: ALICE }), [expected]);
      }),
    );

    it(
      'refuses appends after close with STORE_CLOSED; close is idempotent',
      withStore(async ({ store }) => {
        await store.close();
        await store.close();
        await assert.rejects(
          store.append({ memberId: ALICE, entries: [userEntry(1, 'late')] }),
          (error: unknown) => TeamError.hasCode(error, 'STORE_CLOSED'),
        );
      }),
    );

    it(
      'keeps every conversation across a reopen',
      withStore(async (subject, opened) => {
        if (!subject.reopen) return;
        const alice = [
          userEntry(1, 'task', 'msg-1'),
          assistantEntry(2, 'calling', [{ id: 'call-1', name: 'bash' }]),
        ];
        const bob = [userEntry(3, 'hello bob')];
        await subject.store.append({ memberId: ALICE, entries: alice });
        await subject.store.append({ memberId: BOB, entries: bob });
        await subject.store.close();
        const again = await subject.reopen();
        opened.push(again);
        assert.deepEqual(await again.load({ memberId: ALICE }), [
          ...jsonCopy(alice),
          terminated(2, 'call-1', 'bash'),
        ]);
        assert.deepEqual(await again.load({ memberId: BOB }), jsonCopy(bob));
        await again.append({ memberId: BOB, entries: [assistantEntry(4, 'hi')] });
        assert.equal((await again.load({ memberId: BOB })).length, 2);
      }),
    );
  });
}
