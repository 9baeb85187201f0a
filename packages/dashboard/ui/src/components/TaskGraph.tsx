import { Graph, layout } from '@dagrejs/dagre';
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
import { memo, useEffect, useMemo, useRef } from 'react';
import type { DashboardState, TaskView } from '../../../src/view-model.js';

/** Every task node has this size: dagre lays them out with it and React Flow draws them so. */
const NODE_WIDTH = 220;
const NODE_HEIGHT = 72;

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

interface Structure {
  ids: string[];
  /** [blocker, blocked] pairs. */
  edges: [string, string][];
}

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

/** Top-left positions of the nodes, laid out top to bottom by dagre. */
function layoutOf(structure: Structure): Map<string, { x: number; y: number }> {
  const graph = new Graph();
  graph.setGraph({ rankdir: 'TB', nodesep: 28, ranksep: 56, marginx: 16, marginy: 16 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const id of structure.ids) graph.setNode(id, { width: NODE_WIDTH, height: NODE_HEIGHT });
  for (const [from, to] of structure.edges) graph.setEdge(from, to);
  layout(graph);
  const positions = new Map<string, { x: number; y: number }>();
  for (const id of structure.ids) {
    const node = graph.node(id);
    positions.set(id, {
      x: (node.x ?? 0) - NODE_WIDTH / 2,
      y: (node.y ?? 0) - NODE_HEIGHT / 2,
    });
  }
  return positions;
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
  // Re-layout only when the set of tasks or edges changes, not on a status or owner change.
  const structureKey = JSON.stringify(structure);
  const positions = useMemo(() => layoutOf(JSON.parse(structureKey) as Structure), [structureKey]);

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
      <div className="graph">
        <ReactFlowProvider>
          <ReactFlow
            nodes={nodes}
            edges={edges}
            nodeTypes={nodeTypes}
            fitView
            fitViewOptions={{ padding: 0.15, maxZoom: 1.1 }}
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
            <FitOnChange structureKey={structureKey} />
          </ReactFlow>
        </ReactFlowProvider>
        {structure.ids.length === 0 ? <p className="graph-empty">No tasks yet.</p> : null}
      </div>
    </section>
  );
});

/** Fits the view again after a re-layout (the `fitView` prop only fits the first time). */
function FitOnChange({ structureKey }: { structureKey: string }) {
  const { fitView } = useReactFlow();
  const last = useRef(structureKey);
  useEffect(() => {
    if (last.current === structureKey) return;
    last.current = structureKey;
    // two frames: new nodes are measured in the first, and fitView counts only measured ones
    let frame = requestAnimationFrame(() => {
      frame = requestAnimationFrame(() => {
        void fitView({ padding: 0.15, maxZoom: 1.1, duration: 200 });
      });
    });
    return () => cancelAnimationFrame(frame);
  }, [structureKey, fitView]);
  return null;
}
