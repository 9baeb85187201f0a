#!/usr/bin/env node
import { main } from './main.js';

/*
 * The `teamwire` bin. The first SIGINT / SIGTERM asks the command to stop (a worker hands its
 * members back, a server closes); a second one ends the process at once.
 */
const controller = new AbortController();
let signals = 0;
const onSignal = () => {
  signals++;
  if (signals > 1) process.exit(130);
  controller.abort();
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  cwd: process.cwd(),
  env: process.env,
  signal: controller.signal,
}).then(
  (code) => {
    process.exitCode = code;
    // nothing may keep a finished command alive (a closed stdin stream, a pool's timer)
    setImmediate(() => process.exit(code)).unref();
  },
  (error: unknown) => {
    process.stderr.write(`teamwire: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
