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
import { GitError } from "../git/git_command.ts";
import {
  checkpointDir,
  CheckpointError,
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
  /** The id of the checkpoint the log's last `/undo` or `/restore` went to (see `cursor`). */
  readonly cursor?: string;
}

/** The most characters of a prompt a checkpoint keeps. */
const PROMPT_LENGTH = 60;
/** The most paths a reply or the model's note lists. */
const LISTED = 20;

/**
 * Takes and restores a session's checkpoints. Off without a data directory or with
 * `checkpoints: false`. A snapshot that fails never fails the turn: git missing turns them off
 * for the session (one warning); any other failure skips that checkpoint (logged) and the next
 * turn tries again.
 */
export class SessionCheckpoints {
  readonly #options: SessionCheckpointsOptions;
  readonly #list: CheckpointRecord[];
  #store: CheckpointStore | undefined;
  /** Why checkpoints are not taken (git missing). */
  #broken: string | undefined;
  /**
   * The id of the checkpoint the last `/undo` or `/restore` took the files to, until a turn's
   * checkpoint is taken: when the files are still as it has them, `/undo` goes on from there.
   */
  #cursor: string | undefined;

  /** @param options The session's parts */
  constructor(options: SessionCheckpointsOptions) {
    this.#options = options;
    this.#list = [...options.restored ?? []];
    this.#cursor = options.cursor;
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

  /**
   * `/undo`: back to the checkpoint taken before the last turn that changed the files (the newest
   * turn checkpoint whose files differ from now); when the files are still where the last
   * `/undo` or `/restore` took them, on from there (one more turn back).
   */
  async undo(signal: AbortSignal): Promise<string> {
    if (this.#list.length === 0) return this.#none("Nothing to undo: no checkpoint yet");
    const now = await this.#snapshot(signal);
    if (typeof now === "string") return now;
    const cursor = this.#list.findIndex((checkpoint) => checkpoint.checkpointId === this.#cursor);
    const at = this.#list[cursor];
    const from = at && !differs(at, now) ? cursor : this.#list.length;
    for (let index = from - 1; index >= 0; index--) {
      const checkpoint = this.#list[index] as CheckpointRecord;
      if (checkpoint.kind !== "turn" || !differs(checkpoint, now)) continue;
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
    if (this.#broken !== undefined) {
      return `Checkpoints are off for this session (git cannot be run): ${this.#broken}`;
    }
    return `${text}. A checkpoint is taken before each turn's first change to the files.`;
  }

  #storeOf(): CheckpointStore {
    if (this.#store) return this.#store;
    const { services, sessionId } = this.#options;
    const dataDir = services.dataDir as string;
    // A fork's copied checkpoints are in its source's store (and that one's sources').
    const borrowed = new Set(this.#list.map((checkpoint) => checkpoint.store ?? sessionId));
    borrowed.delete(sessionId);
    this.#store = new CheckpointStore({
      host: services.host,
      dir: checkpointDir(dataDir, sessionId),
      maxFileSize: services.settings.checkpointMaxFileSize ?? DEFAULT_CHECKPOINT_MAX_FILE_SIZE,
      exclude: [dataDir],
      borrow: [...borrowed].map((id) => checkpointDir(dataDir, id)),
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

  /**
   * Takes and records a checkpoint. A failed snapshot skips it (logged; git missing turns
   * checkpoints off); an event the store did not acknowledge is not listed (the tool runs all the
   * same: a checkpoint is best effort).
   *
   * @returns The checkpoint's number, or why there is none
   */
  async #take(
    kind: "turn" | "restore",
    prompt: string,
    signal: AbortSignal,
    roots?: readonly RootSnapshot[],
  ): Promise<number | string> {
    if (this.#broken !== undefined) return this.#broken;
    const { outbox, logger, sessionId, services } = this.#options;
    let snapshots: readonly RootSnapshot[];
    try {
      snapshots = roots ?? await this.#storeOf().snapshot(this.#options.roots, signal);
    } catch (error) {
      const why = messageOf(error);
      if (signal.aborted) return why;
      if (error instanceof GitError && error.code === undefined) {
        this.#broken = why;
        logger.warn("cannot run git: the session goes on without checkpoints", {
          sessionId,
          error: why,
        });
      } else {
        logger.warn("cannot take a checkpoint: skipped, the next turn tries again", {
          sessionId,
          error: why,
        });
      }
      return why;
    }
    const event: Extract<StoredEvent, { type: "checkpoint" }> = {
      type: "checkpoint",
      checkpointId: crypto.randomUUID(),
      kind,
      prompt,
      roots: snapshots.map(storedRoot),
      store: sessionId,
    };
    outbox.record([event], true);
    const record: CheckpointRecord = { ...event, time: new Date(services.now()).toISOString() };
    this.#list.push(record);
    if (kind === "turn") this.#cursor = undefined;
    // In the log before anything changes the files (a crash then a load still has it).
    try {
      await outbox.acknowledged(signal);
    } catch (error) {
      // Cancelled: it was handed to the store, which writes it.
      if (!signal.aborted) {
        this.#list.splice(this.#list.indexOf(record), 1);
        logger.warn("the store did not record a checkpoint: it is not listed", {
          sessionId,
          error: messageOf(error),
        });
        return `the store did not record it: ${messageOf(error)}`;
      }
    }
    return this.#list.indexOf(record) + 1;
  }

  /**
   * Records the files now as a checkpoint (once the restore is known to change them), restores
   * checkpoint `index`, tells the model; a restore that changed nothing says why, and neither
   * records nor tells anything.
   */
  async #restore(
    index: number,
    now: readonly RootSnapshot[],
    command: string,
    signal: AbortSignal,
  ): Promise<string> {
    const target = this.#list[index] as CheckpointRecord;
    const number = index + 1;
    let saved: Promise<number | string> | undefined;
    const beforeChange = async (): Promise<void> => {
      const taken = await (saved ??= this.#take("restore", command, signal, now));
      if (typeof taken === "string") {
        throw new CheckpointError(`the files as they are could not be kept first (${taken})`);
      }
    };
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
          outcome: await this.#storeOf().restore(stored.root, stored.tree, {
            signal,
            beforeChange,
          }),
        });
      } catch (error) {
        signal.throwIfAborted();
        problems.push(`${stored.root}: ${messageOf(error)}`);
      }
    }
    const cwd = this.#options.roots[0] ?? "";
    const name = (root: string, path: string): string => root === cwd ? path : `${root}/${path}`;
    const all = (pick: (outcome: RestoreOutcome) => readonly string[]): string[] =>
      outcomes.flatMap(({ root, outcome }) => pick(outcome).map((path) => name(root, path)));
    const restored = all((outcome) => outcome.restored);
    const removed = all((outcome) => outcome.removed);
    const large = all((outcome) => outcome.skipped.large);
    const ignored = all((outcome) => outcome.skipped.ignored);
    const when = `${timeOf(target)}, ${
      target.kind === "turn" ? `before "${target.prompt}"` : `before ${target.prompt}`
    }`;
    const changed = restored.length + removed.length > 0;
    const lines = changed ? [`Restored the files to checkpoint ${number} (${when}).`] : [
      `Not restored: ${
        problems.length > 0
          ? problems.join("; ")
          : `every file that differs from checkpoint ${number} is left alone`
      }.`,
    ];
    if (restored.length > 0) lines.push(`Written back: ${listed(restored)}.`);
    if (removed.length > 0) lines.push(`Removed: ${listed(removed)}.`);
    if (large.length > 0) {
      const max = this.#options.services.settings.checkpointMaxFileSize ??
        DEFAULT_CHECKPOINT_MAX_FILE_SIZE;
      lines.push(`Left alone (over ${max} bytes): ${listed(large)}.`);
    }
    if (ignored.length > 0) lines.push(`Left alone (ignored by .gitignore): ${listed(ignored)}.`);
    if (!changed) return lines.join("\n");
    lines.push(
      "Ignored files, files over the size limit and files outside the session's directories are " +
        "never restored; what commands did beyond the files is not undone.",
    );
    if (problems.length > 0) lines.push(`Not restored: ${problems.join("; ")}.`);
    const taken = await saved;
    if (typeof taken === "number") {
      lines.push(`Checkpoint ${taken} holds the files as they were: /restore ${taken} goes back.`);
    }
    this.#cursor = target.checkpointId;
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
