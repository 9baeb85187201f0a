import type { EventHub } from '@teamwire/core';
import { BoardModel, createBoardScreen, plainLine, renderBoard } from './board.js';
import type { AppIo } from './team-run.js';

/** The board of a running team: drawn in place on a terminal, timestamped lines elsewhere. */
export interface TeamObserver {
  readonly board: BoardModel;
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
  onEvent?: (agent: string, event: unknown) => void;
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
