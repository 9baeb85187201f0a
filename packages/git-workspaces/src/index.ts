export type { CommitPathsOptions, CommitPathsResult } from './commit-paths.js';
export { commitPaths, MAX_COMMIT_MESSAGE_BYTES, MAX_COMMIT_PATHS } from './commit-paths.js';
export { FORCED_GIT_CONFIG } from './git-runner.js';
export type { GitWorkspacesOptions } from './git-workspaces.js';
export {
  createGitWorkspaces,
  DEFAULT_ROOT_DIR,
  GIT_WORKSPACES_NAME,
  repositoryCapability,
} from './git-workspaces.js';
export { BRANCH_PREFIX, memberBranch } from './member-place.js';
export type { MergeBranchOptions, MergeConflict, MergeResult } from './merge-branch.js';
export { MAX_CONFLICTS, mergeBranch } from './merge-branch.js';
export { MIN_GIT_FOR_WORKTREES } from './repository.js';
export type { ResolveInsideOptions } from './resolve-inside.js';
export { MAX_PATH_BYTES, resolveInside } from './resolve-inside.js';
export { MAX_CHANGED_FILES } from './worktree-status.js';
