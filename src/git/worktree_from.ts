/**
 * What a session's new worktree holds (`--worktree-from`): a light module, read at start-up by
 * the config.
 *
 * @module
 */

/** The values of `--worktree-from`: the checkout's `HEAD`, or its working tree too. */
export const WORKTREE_FROM = ["head", "working-tree"] as const;

/** Where a new worktree's files come from: see {@link WORKTREE_FROM}. */
export type WorktreeFrom = typeof WORKTREE_FROM[number];
