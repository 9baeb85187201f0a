import type { MemberPlacement, PlacementCandidate, PlacementListener } from '@teamwire/core';

/**
 * A placement for a team folder this process owns alone (JSONL): it runs only the members
 * `runs` accepts (the external member it serves, members of the agent types it was given) and
 * leaves the others where they are, stopped, their mail kept for the program that runs them.
 */
export function localPlacement(runs: (candidate: PlacementCandidate) => boolean): MemberPlacement {
  const here = new Set<string>();
  let current:
    | { candidates(): readonly PlacementCandidate[]; listener: PlacementListener }
    | undefined;
  const look = () => {
    if (current === undefined) return;
    const wanted = new Set(
      current
        .candidates()
        .filter(runs)
        .map((c) => c.memberId),
    );
    for (const id of [...here]) {
      if (wanted.has(id)) continue;
      here.delete(id);
      current.listener.lost(id);
    }
    for (const id of wanted) {
      if (here.has(id)) continue;
      here.add(id);
      current.listener.acquired(id);
    }
  };
  return {
    specificationVersion: 'v1',
    async start(options) {
      current = options;
      look();
    },
    runsHere: (memberId) => here.has(memberId),
    candidatesChanged: look,
    async close() {
      current = undefined;
      here.clear();
    },
  };
}
