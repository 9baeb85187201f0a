import type { AgentEvent, EventHub } from '@teamwire/core';
import type { AppIo } from './app-io.js';
import { BoardModel, createBoardScreen, plainLine, renderBoard } from './board.js';

/** The board of a running team: drawn in place on a terminal, timestamped lines elsewhere. */
export interface TeamObserver {
  readonly board: BoardModel;
  /**
   * Shows a line from elsewhere (a worker process, `--chaos`): printed as it is in plain output
   * (`stderr` there for a worker's stderr), a line of the board's feed on a terminal.
   */
  print(line: string, options?: { stderr?: boolean }): void;
  /** Stops watching (after the hub is closed) and draws the board one last time. */
  close(): Promise<void>;
}

/** Subscribes to the team's hub and shows what happens; shared by the review and the fix job. */
export function observeTeam(options: {
  hub: EventHub;
  io: AppIo;
  plain: boolean;
  title: string;
  started: number;
  /** Called with every hub event, e.g. to collect workspace events. */
  onEvent?: ((agent: string, event: AgentEvent) => void) | undefined;
}): TeamObserver {
  const { hub, io, title, started } = options;
  const board = new BoardModel();
  const tty = io.stdout.isTTY === true && !options.plain;
  const screen = tty ? createBoardScreen(io.stdout) : undefined;
  // Ctrl-C prints below the board; the board starts afresh under that line
  io.signal?.addEventListener('abort', () => screen?.done(), { once: true });
  let dirty = true;
  const draw = () => {
    if (!dirty || !screen) return;
    dirty = false;
    screen.draw(
      renderBoard(board, {
        title,
        width: io.stdout.columns ?? 100,
        elapsedMs: Date.now() - started,
      }),
    );
  };
  const subscription = hub.subscribe({});
  const consumer = (async () => {
    for await (const item of subscription) {
      if (item.type === 'gap') {
        if (!tty)
          io.stdout.write(`${plainLine(Date.now(), `(board skipped ${item.lost} events)`)}\n`);
        continue;
      }
      if (item.type !== 'event') continue;
      options.onEvent?.(item.agent, item.event);
      const line = board.apply(item.agent, item.event);
      if (tty) dirty = true;
      else if (line) io.stdout.write(`${plainLine(item.at, line)}\n`);
    }
  })();
  const ticker = tty ? setInterval(draw, 100) : undefined;
  return {
    board,
    print(line, printOptions) {
      if (tty) {
        board.note(line);
        dirty = true;
      } else {
        (printOptions?.stderr ? io.stderr : io.stdout).write(`${line}\n`);
      }
    },
    async close() {
      subscription.close();
      await consumer;
      if (ticker) clearInterval(ticker);
      if (screen) {
        dirty = true;
        draw();
        screen.done();
      }
    },
  };
}
