/**
 * Ordering races: a mode change, a config change, a cancel or a close sent just before a prompt
 * (in the same write, or in the write before) must take effect before that prompt starts.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Scenario, ScenarioContext } from "../context.ts";
import { writeScript } from "../driver.ts";

const VARIANTS = ["set_mode", "set_mode-2writes", "set_config_option", "cancel", "close"] as const;

/** See the module doc. */
export const ordering: Scenario = {
  name: "ordering",
  description:
    "set_mode/set_config_option read-only, idle cancel, close, each then a prompt in one write",
  async run(context: ScenarioContext): Promise<void> {
    const races = context.pick(100, 20, 5);
    const script = await writeScript(context.base, "script.json", [
      { toolCalls: [{ name: "write_file", arguments: { path: "out.txt", content: "written" } }] },
      { text: "done" },
    ]);
    const server = context.start({
      dataDir: join(context.base, "data"),
      cwd: context.base,
      args: ["--mode", "auto", "--model", "scripted", "--script", script],
    });
    await server.initialize();
    for (let n = 0; n < races; n++) {
      const variant = VARIANTS[n % VARIANTS.length] as typeof VARIANTS[number];
      const cwd = join(context.base, "ws", String(n));
      await mkdir(cwd, { recursive: true });
      const sessionId = await server.newSession(cwd);
      const prompt = server.promptRequest(sessionId, "write it");
      context.run();
      switch (variant) {
        case "set_mode":
          await server.write(
            server.request("session/set_mode", { sessionId, modeId: "read-only" }).frame,
            prompt.frame,
          );
          break;
        case "set_mode-2writes":
          await server.write(
            server.request("session/set_mode", { sessionId, modeId: "read-only" }).frame,
          );
          await server.write(prompt.frame);
          break;
        case "set_config_option":
          await server.write(
            server.request("session/set_config_option", {
              sessionId,
              configId: "mode",
              value: "read-only",
            }).frame,
            prompt.frame,
          );
          break;
        case "cancel":
          await server.write(server.notification("session/cancel", { sessionId }), prompt.frame);
          break;
        case "close":
          await server.write(
            server.request("session/close", { sessionId }).frame,
            prompt.frame,
          );
          break;
      }
      const response = await server.response(prompt.id, 20_000);
      const written = existsSync(join(cwd, "out.txt"));
      if (response === undefined) {
        if (!(await context.checkAnswers(server, variant))) return;
        context.fail("other", "hang", `${variant}: the prompt got no answer within 20 s`);
        continue;
      }
      const stopReason = (response.result as { stopReason?: string } | undefined)?.stopReason;
      if (variant === "cancel") {
        if (stopReason === "cancelled") {
          context.fail(
            "other",
            "cancel-overtook",
            "an idle cancel sent before a prompt cancelled it",
          );
        }
      } else if (variant === "close") {
        if (!("error" in response)) {
          context.fail(
            "other",
            "close-overtook",
            `a prompt sent after session/close ran (${stopReason}, file ${
              written ? "written" : "not written"
            })`,
          );
        }
      } else if (written) {
        context.fail(
          "unconsented",
          variant,
          `write_file ran after ${variant} read-only was sent before the prompt`,
        );
      }
    }
    await context.checkAnswers(server, "end");
  },
};
