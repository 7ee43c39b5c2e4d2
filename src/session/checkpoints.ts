/**
 * A session's checkpoints: taken before a turn's first change to the files (`turn`) and before
 * `/undo` or `/restore` change them (`restore`), recorded as `checkpoint` events in the session's
 * log, their files in the session's shadow store (`<dataDir>/checkpoints/<id>`); and the
 * `/checkpoints`, `/undo` and `/restore N` commands over them.
 *
 * @module
 */
import type { LlmContentPart } from "../llm/provider.ts";
import type { Logger } from "../log/logger.ts";
import type { StoredCheckpointRoot, StoredEvent } from "../store/session_store.ts";
import type { SessionCommand } from "../tools/session_commands.ts";
import {
  checkpointDir,
  CheckpointStore,
  DEFAULT_CHECKPOINT_MAX_FILE_SIZE,
  type RestoreOutcome,
  type RootSnapshot,
} from "../git/checkpoint_store.ts";
import type { Conversation } from "./conversation.ts";
import type { Outbox } from "./outbox.ts";
import type { SessionServices } from "./session_services.ts";

/** The commands of a session with checkpoints on. */
export const CHECKPOINT_COMMANDS: readonly SessionCommand[] = [
  { name: "checkpoints", description: "List the checkpoints of the files, taken before each turn" },
  { name: "undo", description: "Restore the files to before the last turn that changed them" },
  {
    name: "restore",
    description: "Restore the files to checkpoint N (see /checkpoints)",
    hint: "N",
  },
];

/** A `checkpoint` event as the log has it. */
export type CheckpointRecord = Extract<StoredEvent, { type: "checkpoint" }> & {
  /** ISO 8601 (empty when unknown). */
  readonly time: string;
};

/** What a session's checkpoints are built from. */
export interface SessionCheckpointsOptions {
  readonly services: Pick<SessionServices, "host" | "dataDir" | "settings" | "now">;
  readonly sessionId: string;
  /** The roots, the cwd first. */
  readonly roots: readonly string[];
  readonly outbox: Outbox;
  readonly conversation: Conversation;
  readonly logger: Logger;
  /** The checkpoints of the log so far (a restored session's). */
  readonly restored?: readonly CheckpointRecord[];
}

/** The most characters of a prompt a checkpoint keeps. */
const PROMPT_LENGTH = 60;
/** The most paths a reply or the model's note lists. */
const LISTED = 20;

/**
 * Takes and restores a session's checkpoints. Off without a data directory or with
 * `checkpoints: false`; a snapshot that fails (git missing) turns them off for the session, with
 * one warning, and never fails the turn.
 */
export class SessionCheckpoints {
  readonly #options: SessionCheckpointsOptions;
  readonly #list: CheckpointRecord[];
  #store: CheckpointStore | undefined;
  /** Why checkpoints are not taken (set on the first failure). */
  #broken: string | undefined;

  /** @param options The session's parts */
  constructor(options: SessionCheckpointsOptions) {
    this.#options = options;
    this.#list = [...options.restored ?? []];
  }

  /** Whether the session has checkpoints (its commands are offered). */
  get enabled(): boolean {
    const { services } = this.#options;
    return services.settings.checkpoints !== false && services.dataDir !== undefined;
  }

  /**
   * The hook of one turn: takes a checkpoint the first time it is called (later calls wait for
   * the same one). Never rejects.
   *
   * @param content The turn's user message
   * @returns The hook, or `undefined` when checkpoints are off
   */
  turnHook(
    content: readonly LlmContentPart[],
  ): ((signal: AbortSignal) => Promise<void>) | undefined {
    if (!this.enabled) return undefined;
    let taken: Promise<void> | undefined;
    return (signal) => taken ??= this.#take("turn", abridged(content), signal).then(() => {});
  }

  /** `/checkpoints`: the list, numbered, newest last. */
  async list(signal: AbortSignal): Promise<string> {
    if (this.#list.length === 0) return this.#none("No checkpoints yet");
    const lines: string[] = [];
    for (const [index, checkpoint] of this.#list.entries()) {
      const previous = this.#list[index - 1];
      const changed = previous ? await this.#countChanged(previous, checkpoint, signal) : undefined;
      const what = checkpoint.kind === "restore"
        ? `before ${checkpoint.prompt}`
        : `"${checkpoint.prompt}"`;
      const change = index === 0
        ? "first"
        : changed === undefined
        ? "files unknown"
        : changed === 0
        ? "no change"
        : `${changed} file${changed === 1 ? "" : "s"} changed`;
      lines.push(`${index + 1}. ${timeOf(checkpoint)} ${what} (${change})`);
    }
    return `Checkpoints (/restore N goes back to one):\n${lines.join("\n")}`;
  }

  /** `/undo`: back to the newest turn checkpoint whose files differ from the files now. */
  async undo(signal: AbortSignal): Promise<string> {
    if (this.#list.length === 0) return this.#none("Nothing to undo: no checkpoint yet");
    const now = await this.#snapshot(signal);
    if (typeof now === "string") return now;
    // The files may be a turn checkpoint's already (an earlier /undo went there): older ones next.
    const turns = [...this.#list.keys()].filter((index) => this.#list[index]?.kind === "turn");
    const at = turns.findLast((index) => !differs(this.#list[index] as CheckpointRecord, now));
    for (const index of turns.reverse()) {
      if (at !== undefined && index >= at) continue;
      if (!differs(this.#list[index] as CheckpointRecord, now)) continue;
      return await this.#restore(index, now, "/undo", signal);
    }
    return "Nothing to undo: the files are as the oldest checkpoint has them.";
  }

  /** `/restore N`. */
  async restoreTo(input: string, signal: AbortSignal): Promise<string> {
    const count = this.#list.length;
    if (count === 0) return this.#none("Nothing to restore: no checkpoint yet");
    const number = /^\d+$/.test(input) ? Number(input) : NaN;
    if (!(number >= 1 && number <= count)) {
      return `Not a checkpoint: "${input}". Give a number from 1 to ${count} (see /checkpoints).`;
    }
    const now = await this.#snapshot(signal);
    if (typeof now === "string") return now;
    const checkpoint = this.#list[number - 1] as CheckpointRecord;
    if (!differs(checkpoint, now)) return `The files are as checkpoint ${number} has them already.`;
    return await this.#restore(number - 1, now, `/restore ${number}`, signal);
  }

  /** Why there is nothing: checkpoints are off, broken, or none was taken yet. */
  #none(text: string): string {
    if (this.#broken !== undefined) return `Checkpoints are off for this session: ${this.#broken}`;
    return `${text}. A checkpoint is taken before each turn's first change to the files.`;
  }

  #storeOf(): CheckpointStore {
    const { services, sessionId } = this.#options;
    this.#store ??= new CheckpointStore({
      host: services.host,
      dir: checkpointDir(services.dataDir as string, sessionId),
      maxFileSize: services.settings.checkpointMaxFileSize ?? DEFAULT_CHECKPOINT_MAX_FILE_SIZE,
      exclude: [services.dataDir as string],
    });
    return this.#store;
  }

  /** A snapshot of the roots now, or why there is none. */
  async #snapshot(signal: AbortSignal): Promise<RootSnapshot[] | string> {
    if (this.#broken !== undefined) return this.#none("");
    try {
      return await this.#storeOf().snapshot(this.#options.roots, signal);
    } catch (error) {
      signal.throwIfAborted();
      return `Cannot read the files' state: ${messageOf(error)}`;
    }
  }

  /** Takes and records a checkpoint; a failure turns checkpoints off (logged once). */
  async #take(
    kind: "turn" | "restore",
    prompt: string,
    signal: AbortSignal,
    roots?: readonly RootSnapshot[],
  ): Promise<number | undefined> {
    if (this.#broken !== undefined) return undefined;
    const { outbox, logger, sessionId, services } = this.#options;
    let snapshots: readonly RootSnapshot[];
    try {
      snapshots = roots ?? await this.#storeOf().snapshot(this.#options.roots, signal);
    } catch (error) {
      if (signal.aborted) return undefined;
      this.#broken = messageOf(error);
      logger.warn("cannot take a checkpoint: the session goes on without checkpoints", {
        sessionId,
        error: this.#broken,
      });
      return undefined;
    }
    const event: Extract<StoredEvent, { type: "checkpoint" }> = {
      type: "checkpoint",
      checkpointId: crypto.randomUUID(),
      kind,
      prompt,
      roots: snapshots.map(storedRoot),
    };
    outbox.record([event], true);
    this.#list.push({ ...event, time: new Date(services.now()).toISOString() });
    // In the log before anything changes the files (a crash then a load still has it).
    try {
      await outbox.acknowledged(signal);
    } catch {
      // The turn's own records fail it (or it was cancelled).
    }
    return this.#list.length;
  }

  /** Records the files now as a checkpoint, restores checkpoint `index`, tells the model. */
  async #restore(
    index: number,
    now: readonly RootSnapshot[],
    command: string,
    signal: AbortSignal,
  ): Promise<string> {
    const target = this.#list[index] as CheckpointRecord;
    const number = index + 1;
    const saved = await this.#take("restore", command, signal, now);
    const outcomes: Array<{ root: string; outcome: RestoreOutcome }> = [];
    const problems: string[] = [];
    for (const stored of target.roots) {
      if (stored.tree === undefined) {
        problems.push(`${stored.root} was not recorded (${stored.tooMany} files)`);
        continue;
      }
      try {
        outcomes.push({
          root: stored.root,
          outcome: await this.#storeOf().restore(stored.root, stored.tree, signal),
        });
      } catch (error) {
        signal.throwIfAborted();
        problems.push(`${stored.root}: ${messageOf(error)}`);
      }
    }
    const cwd = this.#options.roots[0] ?? "";
    const name = (root: string, path: string): string => root === cwd ? path : `${root}/${path}`;
    const restored = outcomes.flatMap(({ root, outcome }) =>
      outcome.restored.map((p) => name(root, p))
    );
    const removed = outcomes.flatMap(({ root, outcome }) =>
      outcome.removed.map((p) => name(root, p))
    );
    const large = outcomes.flatMap(({ root, outcome }) =>
      outcome.skipped.large.map((p) => name(root, p))
    );
    const ignored = outcomes.flatMap(({ root, outcome }) =>
      outcome.skipped.ignored.map((p) => name(root, p))
    );
    const when = `${timeOf(target)}, ${
      target.kind === "turn" ? `before "${target.prompt}"` : `before ${target.prompt}`
    }`;
    const lines = [`Restored the files to checkpoint ${number} (${when}).`];
    if (restored.length > 0) lines.push(`Written back: ${listed(restored)}.`);
    if (removed.length > 0) lines.push(`Removed: ${listed(removed)}.`);
    if (restored.length + removed.length === 0) lines.push("No file had to change.");
    if (large.length > 0) {
      const max = this.#options.services.settings.checkpointMaxFileSize ??
        DEFAULT_CHECKPOINT_MAX_FILE_SIZE;
      lines.push(`Left alone (over ${max} bytes): ${listed(large)}.`);
    }
    if (ignored.length > 0) lines.push(`Left alone (ignored by .gitignore): ${listed(ignored)}.`);
    lines.push(
      "Ignored files, files over the size limit and files outside the session's directories are " +
        "never restored; what commands did beyond the files is not undone.",
    );
    if (problems.length > 0) lines.push(`Not restored: ${problems.join("; ")}.`);
    if (saved !== undefined) {
      lines.push(`Checkpoint ${saved} holds the files as they were: /restore ${saved} goes back.`);
    }
    this.#tellModel(target, number, [...restored, ...removed]);
    return lines.join("\n");
  }

  /** Tells the model (a user message in its conversation, recorded for a restart). */
  #tellModel(target: CheckpointRecord, number: number, paths: readonly string[]): void {
    const text = `[The user restored the workspace files to checkpoint ${number}, taken ` +
      `${target.kind === "turn" ? `before the turn "${target.prompt}"` : "earlier"}` +
      (paths.length > 0 ? `; changed: ${listed(paths)}` : "") +
      ". Changes made to the files after that checkpoint, yours included, are gone: read a file " +
      "again before relying on what you remember of it.]";
    this.#options.outbox.record([{
      type: "files_restored",
      checkpointId: target.checkpointId,
      number,
      text,
    }], true);
    this.#options.conversation.messages.push({ role: "user", content: [{ type: "text", text }] });
  }

  /** How many files differ between two checkpoints (`undefined` when the store cannot say). */
  async #countChanged(
    from: CheckpointRecord,
    to: CheckpointRecord,
    signal: AbortSignal,
  ): Promise<number | undefined> {
    if (!this.enabled) return undefined;
    let count = 0;
    for (const root of to.roots) {
      const before = from.roots.find((stored) => stored.root === root.root);
      if (before?.tree === undefined || root.tree === undefined) return undefined;
      try {
        count += (await this.#storeOf().changedFiles(before.tree, root.tree, signal)).length;
      } catch {
        signal.throwIfAborted();
        return undefined;
      }
    }
    return count;
  }
}

/**
 * Deletes the checkpoint stores of deleted sessions (`session/delete`).
 *
 * @param services The host and the data directory
 * @param ids The sessions
 */
export async function removeCheckpoints(
  services: Pick<SessionServices, "host" | "dataDir">,
  ids: readonly string[],
): Promise<void> {
  const { dataDir, host } = services;
  if (dataDir === undefined) return;
  await Promise.all(ids.map((id) => host.remove(checkpointDir(dataDir, id))));
}

function storedRoot(snapshot: RootSnapshot): StoredCheckpointRoot {
  return {
    root: snapshot.root,
    ...(snapshot.tree === undefined ? {} : { tree: snapshot.tree }),
    ...(snapshot.skipped.large.length > 0 ? { large: snapshot.skipped.large } : {}),
    ...(snapshot.skipped.tooMany === undefined ? {} : { tooMany: snapshot.skipped.tooMany }),
  };
}

/** Whether the files now differ from a checkpoint's (in a root both recorded). */
function differs(checkpoint: CheckpointRecord, now: readonly RootSnapshot[]): boolean {
  return checkpoint.roots.some((stored) => {
    const current = now.find((snapshot) => snapshot.root === stored.root);
    return stored.tree !== undefined && current?.tree !== undefined && current.tree !== stored.tree;
  });
}

/** The prompt's first text, on one line, abridged. */
function abridged(content: readonly LlmContentPart[]): string {
  const text = content.map((part) => part.type === "text" ? part.text : `[${part.type}]`).join(" ")
    .replace(/\s+/g, " ").trim();
  return text.length > PROMPT_LENGTH ? `${text.slice(0, PROMPT_LENGTH)}…` : text;
}

/** A checkpoint's time, as `YYYY-MM-DD HH:MM:SS` UTC. */
function timeOf(checkpoint: CheckpointRecord): string {
  return checkpoint.time === ""
    ? "(time unknown)"
    : `${checkpoint.time.slice(0, 19).replace("T", " ")} UTC`;
}

function listed(paths: readonly string[]): string {
  const shown = paths.slice(0, LISTED).join(", ");
  return paths.length > LISTED ? `${shown} and ${paths.length - LISTED} more` : shown;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
