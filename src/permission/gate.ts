/**
 * Decides whether a tool call of a session may run: the permission rules (`./rules.ts`) first,
 * then the mode's policy (`./policy.ts`), then the user's answer, remembering "always" answers
 * for the session. Every decision is logged; every answer and every rule's decision is recorded
 * in the session's log.
 *
 * @module
 */
import type { Logger } from "../log/logger.ts";
import type { ToolCallLocation, ToolKind } from "../transport/acp_types.ts";
import type { Authorization, AuthorizeRequest, RelayedPermission } from "./authorization.ts";
import type { PermissionMode } from "./mode.ts";
import { decidePermission, type PermissionAnswer } from "./policy.ts";
import type { RuleKind } from "./rule_syntax.ts";
import { decideByRules, type PermissionRules, type RuleVerdict } from "./rules.ts";
import type { PermissionOutcome, PermissionTelemetry, Telemetry } from "../telemetry/telemetry.ts";

/** A tool call the user is asked about. */
export interface PermissionQuestion {
  readonly sessionId: string;
  readonly toolCallId: string;
  readonly title: string;
  readonly kind: ToolKind;
  readonly rawInput: unknown;
  readonly locations: readonly ToolCallLocation[];
  readonly signal: AbortSignal;
}

/**
 * Asks the client for permission (`session/request_permission`). Resolves `cancelled` when the
 * turn was cancelled or the client answered so; never rejects (failures count as a refusal).
 */
export type PermissionAsker = (
  question: PermissionQuestion,
) => Promise<PermissionAnswer | "cancelled">;

/** The log record of a permission answer (one of the store's events). */
export interface PermissionRecord {
  readonly type: "permission";
  readonly toolCallId: string;
  /** The tool asked about, `<tool>:relayed` for a question a running call relayed. */
  readonly tool: string;
  /**
   * The answer; for a call a rule decided without asking, `allow_once` (allowed) or
   * `reject_once` (denied). Only a user's answer without a `rule` is remembered on restore.
   */
  readonly answer: PermissionAnswer | "cancelled";
  /** What the rule that decided (or made the user be asked) does; absent when none did. */
  readonly decision?: RuleKind;
  /** That rule as written (for an allowed command line, each rule that allowed a part). */
  readonly rule?: string;
}

/** Records permission answers in the session's log (`commit`: durable before the answer). */
export interface PermissionRecorder {
  record(events: readonly PermissionRecord[], commit: boolean): void;
}

/** What a {@link PermissionGate} is built from. */
export interface PermissionGateOptions {
  readonly sessionId: string;
  readonly ask: PermissionAsker;
  /** Remembered "always" answers by tool name; the gate adds to it. */
  readonly grants: Map<string, "allow_always" | "reject_always">;
  /** Where answers are recorded (the session's log, committed with the turn). */
  readonly output: PermissionRecorder;
  readonly logger: Logger;
  /** The server's permission rules, checked before the mode and the grants. @default {none} */
  readonly rules?: PermissionRules;
  /** The session's working directory (path rules are relative to it). */
  readonly cwd?: string;
  /** The session's roots, the cwd first. */
  readonly roots?: readonly string[];
  /** Counts each decision by how it came out. @default {nothing counted} */
  readonly telemetry?: Telemetry;
}

/**
 * Decides tool calls: the permission rules first (deny, then ask, then allow), then the policy
 * of the pinned mode, then the user (whose "always" answers are remembered for the session).
 * Rules come before remembered answers: an "always" answer never beats a deny rule nor skips an
 * ask rule, and an answer to a question an ask rule made is not remembered. Every decision is
 * logged and every answer and rule decision recorded.
 */
export class PermissionGate {
  readonly #options: PermissionGateOptions;

  /** @param options The asker, the grants and where answers go */
  constructor(options: PermissionGateOptions) {
    this.#options = options;
  }

  /**
   * Decides whether a tool call may run.
   *
   * @param request The tool call
   * @param mode The permission mode the prompt pinned
   * @returns Whether it may run, and why not (for the model)
   */
  async authorize(request: AuthorizeRequest, mode: PermissionMode): Promise<Authorization> {
    const { tool } = request;
    const { sessionId, grants, logger } = this.#options;
    const facts = { sessionId, toolCallId: request.toolCallId, tool: tool.name, mode };
    const verdict = await this.#byRules(request);
    if (verdict?.action === "allow" || verdict?.action === "deny") {
      const allowed = verdict.action === "allow";
      this.#counted(allowed ? "allowed_by_rule" : "denied_by_rule", request, verdict.rule);
      logger.info(`permission: ${allowed ? "allowed" : "denied"} by rule`, {
        ...facts,
        rule: verdict.rule,
      });
      this.#options.output.record([{
        ...permissionEvent(request.toolCallId, tool.name, allowed ? "allow_once" : "reject_once"),
        decision: verdict.action,
        rule: verdict.rule,
      }], false);
      return allowed ? { allowed: true } : {
        allowed: false,
        rule: verdict.rule,
        reason: `The permission rule --deny '${verdict.rule}' refused this ${tool.name} call. ` +
          "Do not try to get around it; ask the user if it is needed.",
      };
    }
    const decision = verdict ? { action: "ask" as const } : decidePermission(
      mode,
      tool.name,
      tool.effect,
      grants,
    );
    if (decision.action === "allow") {
      this.#counted("allowed_by_mode", request);
      logger.debug("permission: allowed by policy", facts);
      return { allowed: true };
    }
    if (decision.action === "deny") {
      this.#counted("denied_by_mode", request);
      logger.info("permission: denied by policy", facts);
      return { allowed: false, reason: decision.reason + this.#uncovered(tool.name) };
    }
    if (verdict) logger.info("permission: asked by rule", { ...facts, rule: verdict.rule });
    const asked = Date.now();
    const answer = await this.#timed(request, () =>
      this.#options.ask({
        sessionId,
        toolCallId: request.toolCallId,
        title: request.title,
        kind: tool.kind,
        rawInput: request.rawInput,
        locations: request.locations,
        signal: request.signal,
      }));
    logger.info("permission: answered", { ...facts, answer, ms: Date.now() - asked });
    this.#counted(answerOutcome(answer), request, verdict?.rule);
    const event = permissionEvent(request.toolCallId, tool.name, answer);
    this.#options.output.record(
      [verdict ? { ...event, decision: "ask", rule: verdict.rule } : event],
      true,
    );
    if (!verdict && (answer === "allow_always" || answer === "reject_always")) {
      grants.set(tool.name, answer);
    }
    return authorization(answer, tool.name);
  }

  /** Counts a decision, and tells the call's telemetry how it came out (and by which rule). */
  #counted(
    outcome: PermissionOutcome,
    request?: { readonly telemetry?: PermissionTelemetry },
    rule?: string,
  ): void {
    this.#options.telemetry?.permissionDecision(outcome);
    request?.telemetry?.permission?.(outcome, rule);
  }

  /** Asks the client, the wait timed by the call's telemetry. */
  async #timed(
    request: { readonly telemetry?: PermissionTelemetry },
    ask: () => Promise<PermissionAnswer | "cancelled">,
  ): Promise<PermissionAnswer | "cancelled"> {
    const wait = request.telemetry?.permissionWait?.();
    let answer: PermissionAnswer | "cancelled" | undefined;
    try {
      return answer = await ask();
    } finally {
      wait?.end(answer === undefined ? "failed" : answer === "cancelled" ? "cancelled" : undefined);
    }
  }

  /** What the rules say about a call, `undefined` when there are none or none decides. */
  #byRules(request: AuthorizeRequest): Promise<RuleVerdict | undefined> {
    const { rules, cwd, roots } = this.#options;
    if (!rules || rules.allow.length + rules.deny.length + rules.ask.length === 0) {
      return Promise.resolve(undefined);
    }
    const root = cwd ?? roots?.[0] ?? "/";
    return decideByRules(rules, {
      tool: request.tool.name,
      input: request.rawInput,
      cwd: root,
      roots: roots ?? [root],
    });
  }

  /** For the model, when allow rules for the tool exist but did not cover the call. */
  #uncovered(tool: string): string {
    const { rules } = this.#options;
    const own = rules?.allow.filter((rule) => rule.tool === tool || rule.tool.includes("*")) ?? [];
    if (own.length === 0) return "";
    const shown = own.slice(0, 5).map((rule) => rule.text).join(", ");
    return ` No allow rule covers this call (allowed: ${shown}${
      own.length > 5 ? ", …" : ""
    }); a compound command needs every part allowed, and substitutions, subshells and ` +
      "redirections out of the workspace need a rule matching the whole line.";
  }

  /**
   * Asks the user what a running tool call asks (another agent's tool call, for the `delegate`
   * tool): no policy and no remembered grant decide it, the call itself was allowed. The answer
   * is logged and recorded under the name `<tool>:relayed`, which no tool has, so that an
   * "always" answer (which the asking agent remembers, if it does) grants nothing here.
   *
   * @param request The question and the call asking it
   * @returns The answer, `cancelled` when the call was cancelled
   */
  async relay(request: RelayedPermission): Promise<PermissionAnswer | "cancelled"> {
    const { sessionId, logger } = this.#options;
    const asked = Date.now();
    const answer = await this.#timed(request, () =>
      this.#options.ask({
        sessionId,
        toolCallId: request.toolCallId,
        title: request.title,
        kind: request.kind,
        rawInput: request.rawInput,
        locations: request.locations ?? [],
        signal: request.signal,
      }));
    // The call's own decision stays what its span says; the relayed answer is the wait's.
    this.#counted(answerOutcome(answer));
    const tool = `${request.tool.name}:relayed`;
    logger.info("permission: answered", {
      sessionId,
      toolCallId: request.toolCallId,
      tool,
      answer,
      ms: Date.now() - asked,
    });
    this.#options.output.record([permissionEvent(request.toolCallId, tool, answer)], true);
    return answer;
  }
}

/** The telemetry outcome of a user's answer. */
function answerOutcome(answer: PermissionAnswer | "cancelled"): PermissionOutcome {
  if (answer === "cancelled") return "cancelled";
  return answer === "allow_once" || answer === "allow_always"
    ? "allowed_by_user"
    : "denied_by_user";
}

/** What the user's answer means for the tool call. */
function authorization(answer: PermissionAnswer | "cancelled", tool: string): Authorization {
  if (answer === "allow_once" || answer === "allow_always") return { allowed: true };
  return {
    allowed: false,
    reason: answer === "cancelled"
      ? `Permission to run ${tool} was not given: the request was cancelled.`
      : `The user refused permission to run ${tool}${
        answer === "reject_always" ? " for the rest of this session" : ""
      }.`,
  };
}

/** The record of a permission answer. */
function permissionEvent(
  toolCallId: string,
  tool: string,
  answer: PermissionAnswer | "cancelled",
): PermissionRecord {
  return { type: "permission", toolCallId, tool, answer };
}
