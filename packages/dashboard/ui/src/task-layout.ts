/*
 * Where the task graph puts its nodes: a layered layout that wraps. Tasks linked by blockers are
 * drawn in layers (a task below every task it waits for), a layer wider than the graph wrapping
 * onto more rows; tasks linked to none come after them in a grid. However many tasks there are,
 * a node keeps its size and no two nodes overlap: the graph grows taller instead of shrinking
 * its nodes into one long row.
 */

/** Every task node has this size: the layout places them with it and React Flow draws them so. */
export const NODE_WIDTH = 200;
export const NODE_HEIGHT = 84;
/** Space between two nodes of a row. */
export const GAP_X = 20;
/** Space between the rows of one layer, and between the rows of the grid. */
const GAP_Y = 20;
/** Space between two layers (room for the edges' arrows), and before the grid. */
const LAYER_GAP = 48;
/** Space around the whole layout. */
const MARGIN = 16;

/** The tasks and their blockers, as the graph draws them. */
export interface Structure {
  /** Task ids, in creation order. */
  ids: string[];
  /** [blocker, blocked] pairs, both among `ids`. */
  edges: [string, string][];
}

/** Top-left positions of the nodes, and the size of the whole. */
export interface Layout {
  positions: Map<string, { x: number; y: number }>;
  width: number;
  height: number;
}

/** How many nodes fit in a row of a graph `width` pixels wide (at least one). */
export function columnsFor(width: number): number {
  return Math.max(1, Math.floor((width - 2 * MARGIN + GAP_X) / (NODE_WIDTH + GAP_X)));
}

/** Lays out `structure` in rows of at most `columns` nodes. */
export function layoutTasks(structure: Structure, columns: number): Layout {
  const perRow = Math.max(1, Math.floor(columns));
  const blockers = new Map<string, string[]>(structure.ids.map((id) => [id, []]));
  const linked = new Set<string>();
  for (const [from, to] of structure.edges) {
    blockers.get(to)?.push(from);
    linked.add(from);
    linked.add(to);
  }
  // a task's layer: one below the deepest of its blockers (a cycle, which the board refuses,
  // is cut where it is met)
  const layerOf = new Map<string, number>();
  const visiting = new Set<string>();
  const layer = (id: string): number => {
    const known = layerOf.get(id);
    if (known !== undefined) return known;
    if (visiting.has(id)) return 0;
    visiting.add(id);
    let depth = 0;
    for (const blocker of blockers.get(id) ?? []) depth = Math.max(depth, layer(blocker) + 1);
    visiting.delete(id);
    layerOf.set(id, depth);
    return depth;
  };
  const layers: string[][] = [];
  const alone: string[] = [];
  for (const id of structure.ids) {
    if (!linked.has(id)) {
      alone.push(id);
      continue;
    }
    const depth = layer(id);
    while (layers.length <= depth) layers.push([]);
    layers[depth]?.push(id);
  }

  // rows: each layer in creation order, except that a task sits near the tasks it waits for
  const order = new Map<string, number>();
  const rows: { ids: string[]; gapBefore: number }[] = [];
  for (const [index, ids] of layers.entries()) {
    const place = (id: string) => {
      const of = (blockers.get(id) ?? []).map((b) => order.get(b) ?? 0);
      return of.length === 0 ? 0 : of.reduce((a, b) => a + b, 0) / of.length;
    };
    const sorted = index === 0 ? ids : [...ids].sort((a, b) => place(a) - place(b));
    sorted.forEach((id, position) => {
      order.set(id, position % perRow);
    });
    for (let start = 0; start < sorted.length; start += perRow) {
      rows.push({
        ids: sorted.slice(start, start + perRow),
        gapBefore: rows.length === 0 ? 0 : start === 0 ? LAYER_GAP : GAP_Y,
      });
    }
  }
  for (let start = 0; start < alone.length; start += perRow) {
    rows.push({
      ids: alone.slice(start, start + perRow),
      gapBefore: rows.length === 0 ? 0 : start === 0 ? LAYER_GAP : GAP_Y,
    });
  }

  const widest = Math.max(1, ...rows.map((row) => row.ids.length));
  const innerWidth = widest * NODE_WIDTH + (widest - 1) * GAP_X;
  const positions = new Map<string, { x: number; y: number }>();
  let y = MARGIN;
  for (const row of rows) {
    y += row.gapBefore;
    const rowWidth = row.ids.length * NODE_WIDTH + (row.ids.length - 1) * GAP_X;
    // layers are centred under one another; the grid of unlinked tasks starts at the left
    const linkedRow = row.ids.every((id) => linked.has(id));
    let x = MARGIN + (linkedRow ? (innerWidth - rowWidth) / 2 : 0);
    for (const id of row.ids) {
      positions.set(id, { x, y });
      x += NODE_WIDTH + GAP_X;
    }
    y += NODE_HEIGHT;
  }
  return { positions, width: innerWidth + 2 * MARGIN, height: y + MARGIN };
}
