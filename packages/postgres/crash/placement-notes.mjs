// Notes what a store's placement tells the runtime, for the tests that check where members run
// (src/rebalance.test.ts, src/handover.test.ts and its forked crash/handover-worker.mjs).

/**
 * Wraps `store.placement` so that every notice it gives whoever starts it (a test, or the runtime
 * of a team opened on the store) is passed to `note` first: `+m` acquired m, `-m` lost it, `?m`
 * asked to release it. Call before the placement starts.
 */
export function notePlacement(store, note) {
  const placement = store.placement;
  const start = placement.start.bind(placement);
  placement.start = (options) => {
    const { listener } = options;
    return start({
      ...options,
      listener: {
        ...listener,
        acquired: (memberId) => {
          note(`+${memberId}`);
          listener.acquired(memberId);
        },
        lost: (memberId) => {
          note(`-${memberId}`);
          listener.lost(memberId);
        },
        ...(listener.release === undefined
          ? {}
          : {
              release: (memberId) => {
                note(`?${memberId}`);
                return listener.release(memberId);
              },
            }),
      },
    });
  };
}
