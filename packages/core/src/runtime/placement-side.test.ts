import { describe, expect, it } from 'vitest';
import type { MemberActivity, MemberPlacement } from '../ports/placement.js';
import type { TeamRecord } from '../records.js';
import type { TeamState } from '../state/index.js';
import { PlacementSide } from './placement-side.js';

/** A placement that records every report it is given. */
function recordingPlacement() {
  const reports: { activity: Map<string, MemberActivity>; through: number | undefined }[] = [];
  const placement = {
    report(activity: ReadonlyMap<string, MemberActivity>, through?: number) {
      reports.push({ activity: new Map(activity), through });
    },
  } as unknown as MemberPlacement;
  return { placement, reports };
}

function side(placement: MemberPlacement, state: { lastSeq: number }) {
  return new PlacementSide({
    placement,
    state: state as unknown as TeamState,
    isExternal: () => false,
    serveExternal: () => false,
    acquired: () => {},
    lost: () => {},
    release: async () => {},
  });
}

const delivered = (seq: number, targetId: string) =>
  ({ type: 'message.delivered', seq, targetId, messageId: `msg-${seq}` }) as unknown as TeamRecord;

describe('PlacementSide.report', () => {
  it('reports only what moved: not an unchanged activity in another order, nor records of members elsewhere', () => {
    const { placement, reports } = recordingPlacement();
    const state = { lastSeq: 10 };
    const placing = side(placement, state);

    placing.report(new Map());
    expect(reports).toEqual([]); // nothing runs here, nothing to tell

    placing.report(
      new Map<string, MemberActivity>([
        ['a', 'idle'],
        ['b', 'running'],
      ]),
    );
    expect(reports).toEqual([
      {
        activity: new Map([
          ['a', 'idle'],
          ['b', 'running'],
        ]),
        through: 10,
      },
    ]);

    // the same members doing the same, listed in another order, after records of a member that
    // runs elsewhere: nothing new to tell
    state.lastSeq = 12;
    placing.noteDurable([delivered(11, 'c'), delivered(12, 'c')]);
    placing.report(
      new Map<string, MemberActivity>([
        ['b', 'running'],
        ['a', 'idle'],
      ]),
    );
    expect(reports).toHaveLength(1);

    // a member changed: reported, through the seq applied now
    placing.report(
      new Map<string, MemberActivity>([
        ['a', 'running'],
        ['b', 'running'],
      ]),
    );
    expect(reports).toHaveLength(2);
    expect(reports[1]).toEqual({
      activity: new Map([
        ['a', 'running'],
        ['b', 'running'],
      ]),
      through: 12,
    });

    // a member leaves this process: reported
    placing.report(new Map<string, MemberActivity>([['a', 'running']]));
    expect(reports).toHaveLength(3);
  });

  it('reports an unchanged activity again once a record started one of its members', () => {
    const { placement, reports } = recordingPlacement();
    const state = { lastSeq: 4 };
    const placing = side(placement, state);
    const activity = new Map<string, MemberActivity>([['a', 'idle']]);
    placing.report(activity);
    expect(reports).toHaveLength(1);

    state.lastSeq = 5;
    placing.noteDurable([delivered(5, 'a')]);
    placing.report(activity);
    expect(reports).toHaveLength(2);
    expect(reports[1]?.through).toBe(5);

    placing.report(activity);
    expect(reports).toHaveLength(2);
  });
});
