import {
  Background,
  Controls,
  type Edge,
  Handle,
  MarkerType,
  type Node,
  type NodeProps,
  Position,
  ReactFlow,
  ReactFlowProvider,
  useReactFlow,
} from '@xyflow/react';
import { memo, type RefObject, useEffect, useMemo, useRef, useState } from 'react';
import type { DashboardState, TaskView } from '../../../src/view-model.js';
import {
  columnsFor,
  layoutTasks,
  NODE_HEIGHT,
  NODE_WIDTH,
  type Structure,
} from '../task-layout.js';

/** The graph's height bounds (px): it grows with its rows, then scrolls by dragging. */
const GRAPH_MIN_HEIGHT = 240;
const GRAPH_MAX_HEIGHT = 1400;
/** A graph whose width is not measured yet is laid out for this width. */
const DEFAULT_WIDTH = 1000;

type TaskNodeData = {
  id: string;
  subject: string;
  status: TaskView['status'];
  owner: string;
  ready: boolean;
  /** Blockers not completed yet. */
  openBlockers: number;
};
type TaskNode = Node<TaskNodeData, 'task'>;

/** The colour class of a task: `ready` is a pending task whose blockers are all done. */
function tone(task: { status: TaskView['status']; ready: boolean }): string {
  if (task.status === 'pending') return task.ready ? 'ready' : 'pending';
  return task.status;
}

function statusLabel(task: { status: TaskView['status']; ready: boolean }): string {
  const t = tone(task);
  return t === 'in_progress' ? 'in progress' : t;
}

function TaskNodeView({ data }: NodeProps<TaskNode>) {
  return (
    <>
      <Handle type="target" position={Position.Top} isConnectable={false} />
      <div
        className={`task-node tone-${tone(data)}`}
        data-testid="task"
        data-task-id={data.id}
        data-status={data.status}
        data-owner={data.owner}
        data-ready={data.ready ? 'true' : 'false'}
        title={data.subject}
      >
        <div className="task-node-head">
          <span className="task-id">{data.id}</span>
          <span className="task-status">{statusLabel(data)}</span>
        </div>
        <div className="task-subject">{data.subject}</div>
        <div className="task-foot">
          <span className="task-owner">{data.owner === '' ? 'unowned' : `@${data.owner}`}</span>
          {data.openBlockers > 0 ? (
            <span className="task-blocked">blocked by {data.openBlockers}</span>
          ) : null}
        </div>
      </div>
      <Handle type="source" position={Position.Bottom} isConnectable={false} />
    </>
  );
}

const nodeTypes = { task: TaskNodeView };

/** The tasks drawn (not deleted) and the blocker edges between them. */
function structureOf(state: DashboardState): Structure {
  const ids: string[] = [];
  const edges: [string, string][] = [];
  const visible = new Set<string>();
  for (const task of state.tasks.values()) {
    if (task.status === 'deleted') continue;
    ids.push(task.id);
    visible.add(task.id);
  }
  for (const task of state.tasks.values()) {
    if (!visible.has(task.id)) continue;
    for (const blocker of task.blockedBy) {
      if (visible.has(blocker) && blocker !== task.id) edges.push([blocker, task.id]);
    }
  }
  return { ids, edges };
}

/** The width of the element `ref` holds, kept up to date (rounded, to re-layout only on real changes). */
function useWidth(ref: RefObject<HTMLElement | null>): number | undefined {
  const [width, setWidth] = useState<number | undefined>(undefined);
  useEffect(() => {
    const element = ref.current;
    if (element === null) return;
    const measure = () => setWidth(Math.round(element.clientWidth / 10) * 10);
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, [ref]);
  return width;
}

/** A string that changes whenever anything the graph shows changes. */
export function taskGraphKey(state: DashboardState): string {
  let key = '';
  for (const t of state.tasks.values()) {
    key += `${t.id}\u0001${t.status}\u0001${t.owner ?? ''}\u0001${t.ready}\u0001${t.revision}\u0001${t.subject}\u0001${t.blockedBy.join(',')}\u0002`;
  }
  return key;
}

export interface TaskGraphProps {
  state: DashboardState;
  /** {@link taskGraphKey} of the state: the graph renders again only when it changes. */
  graphKey: string;
}

/** The task DAG: one node per task, an edge from each blocker to the task it blocks. */
export const TaskGraph = memo(function TaskGraph({ state }: TaskGraphProps) {
  const structure = structureOf(state);
  const box = useRef<HTMLDivElement>(null);
  const columns = columnsFor(useWidth(box) ?? DEFAULT_WIDTH);
  // Re-layout only when the set of tasks or edges changes (or the width), not on a status or
  // owner change.
  const structureKey = `${columns}:${JSON.stringify(structure)}`;
  const layout = useMemo(
    () => layoutTasks(JSON.parse(structureKey.slice(structureKey.indexOf(':') + 1)), columns),
    [structureKey, columns],
  );
  const positions = layout.positions;
  const [fitted, setFitted] = useState('');
  const height = Math.min(GRAPH_MAX_HEIGHT, Math.max(GRAPH_MIN_HEIGHT, layout.height));

  const nodes: TaskNode[] = structure.ids.map((id) => {
    const task = state.tasks.get(id) as TaskView;
    return {
      id,
      type: 'task',
      position: positions.get(id) ?? { x: 0, y: 0 },
      width: NODE_WIDTH,
      height: NODE_HEIGHT,
      draggable: false,
      selectable: false,
      connectable: false,
      data: {
        id,
        subject: task.subject,
        status: task.status,
        owner: task.owner ?? '',
        ready: task.ready,
        openBlockers: task.blockedBy.filter((b) => state.tasks.get(b)?.status !== 'completed')
          .length,
      },
    };
  });
  const edges: Edge[] = structure.edges.map(([from, to]) => {
    const done = state.tasks.get(from)?.status === 'completed';
    return {
      id: `${from}->${to}`,
      source: from,
      target: to,
      className: done ? 'edge-done' : 'edge-open',
      animated: !done && state.tasks.get(from)?.status === 'in_progress',
      markerEnd: { type: MarkerType.ArrowClosed, width: 16, height: 16 },
      selectable: false,
      focusable: false,
    };
  });

  return (
    <section className="panel graph-panel" aria-labelledby="tasks-title">
      <h2 id="tasks-title">
        Tasks <span className="count">{structure.ids.length}</span>
        <span className="legend">
          <span className="legend-item tone-pending">pending</span>
          <span className="legend-item tone-ready">ready</span>
          <span className="legend-item tone-in_progress">in progress</span>
          <span className="legend-item tone-completed">completed</span>
        </span>
      </h2>
      <div
        className="graph"
        ref={box}
        style={{ height }}
        data-testid="task-graph"
        data-fitted={fitted === structureKey ? 'true' : 'false'}
      >
        <ReactFlowProvider>
          <ReactFlow
            nodes={nodes}
            edges={edges}
            nodeTypes={nodeTypes}
            fitView
            fitViewOptions={FIT}
            minZoom={0.1}
            maxZoom={2}
            nodesDraggable={false}
            nodesConnectable={false}
            nodesFocusable={false}
            edgesFocusable={false}
            elementsSelectable={false}
            zoomOnDoubleClick={false}
            zoomOnScroll={false}
            panOnScroll={false}
            preventScrolling={false}
            deleteKeyCode={null}
          >
            <Background gap={20} size={1} />
            <Controls showInteractive={false} />
            <FitOnChange structureKey={structureKey} onFitted={setFitted} />
          </ReactFlow>
        </ReactFlowProvider>
        {structure.ids.length === 0 ? <p className="graph-empty">No tasks yet.</p> : null}
      </div>
    </section>
  );
});

/** The graph is laid out to fit its box: fitting keeps nodes near their size, never below 60%. */
const FIT = { padding: 0.04, minZoom: 0.6, maxZoom: 1 } as const;

/**
 * Fits the view to the layout, and again after every re-layout (the `fitView` prop only fits the
 * first time); `onFitted` is told the key of the layout once the view shows it.
 */
function FitOnChange({
  structureKey,
  onFitted,
}: {
  structureKey: string;
  onFitted: (key: string) => void;
}) {
  const { fitView } = useReactFlow();
  useEffect(() => {
    let live = true;
    // two frames: new nodes are measured in the first, and fitView counts only measured ones
    let frame = requestAnimationFrame(() => {
      frame = requestAnimationFrame(() => {
        void fitView({ ...FIT, duration: 200 }).then(() => {
          if (live) onFitted(structureKey);
        });
      });
    });
    return () => {
      live = false;
      cancelAnimationFrame(frame);
    };
  }, [structureKey, fitView, onFitted]);
  return null;
}
