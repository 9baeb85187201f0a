/** Where the app writes and what it knows of the terminal. */
export interface AppIo {
  stdout: { write(text: string): unknown; isTTY?: boolean; columns?: number; rows?: number };
  stderr: { write(text: string): unknown };
  /** Base for relative paths (the directory the user ran the command in). */
  cwd: string;
  env: NodeJS.ProcessEnv;
  /**
   * Where the user's answers come from (`fix --approve` reads its decisions here, one a line);
   * absent: nobody answers from the terminal.
   */
  stdin?: NodeJS.ReadableStream | undefined;
  /** Aborted on Ctrl-C: the team is stopped cleanly and can be resumed. */
  signal?: AbortSignal;
}
