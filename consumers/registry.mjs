// A throwaway npm registry for the consumer test: verdaccio with consumers/verdaccio.yaml, its
// storage in a fresh temporary folder, listening on 127.0.0.1 at a free port.
//
// `startRegistry()` runs it in a child process (so the test can block on npm and pnpm without
// blocking the server) and resolves once it answers; `stop()` ends it. The child also exits when
// its parent goes away, so a killed test never leaves a registry running.
import { fork } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CONFIG = fileURLToPath(new URL('./verdaccio.yaml', import.meta.url));

/** The only registry URLs anything in the consumer test may publish to or install from. */
export const LOCAL_REGISTRY = /^http:\/\/(127\.0\.0\.1|localhost):\d+\/$/;

/**
 * Starts verdaccio with its storage under `dir`.
 * @param {string} dir an empty temporary folder
 * @returns {Promise<{ url: string, stop: () => Promise<void> }>}
 */
export async function startRegistry(dir) {
  const child = fork(fileURLToPath(import.meta.url), ['--serve', dir], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const port = await new Promise((resolve, reject) => {
    child.once('message', (message) => resolve(message.port));
    child.once('exit', (code) => reject(new Error(`the registry exited (code ${code}) on start`)));
  });
  const url = `http://127.0.0.1:${port}/`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  try {
    await waitUntilAnswering(url);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, stop };
}

async function waitUntilAnswering(url) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const response = await fetch(`${url}-/ping`);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the registry at ${url} did not answer in 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The child: run verdaccio until told to stop or orphaned. */
async function serve(dir) {
  const { parseConfigFile, runServer } = await import('verdaccio');
  const config = parseConfigFile(CONFIG);
  config.self_path = CONFIG;
  config.storage = join(dir, 'storage');
  config.auth = { htpasswd: { file: join(dir, 'htpasswd'), max_users: -1 } };
  await mkdir(config.storage, { recursive: true });
  const server = await runServer(config);
  server.listen(0, '127.0.0.1', () => process.send?.({ port: server.address().port }));
  const close = () => {
    server.close();
    server.closeAllConnections?.();
    process.exit(0);
  };
  process.on('SIGTERM', close);
  process.on('SIGINT', close);
  process.on('disconnect', close);
}

if (process.argv[2] === '--serve') await serve(process.argv[3]);
