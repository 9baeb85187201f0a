// Runs one `acquire` of the built package in its own process, so a test can SIGKILL it at any
// moment: `node acquire-child.mjs <repoDir> <teamId> <memberId> <memberName>`.
import { createGitWorkspaces } from '../dist/index.js';

const [repoDir, teamId, id, name] = process.argv.slice(2);
const workspace = await createGitWorkspaces({ repoDir }).acquire({ teamId, member: { id, name } });
process.stdout.write(`${JSON.stringify(workspace)}\n`);
