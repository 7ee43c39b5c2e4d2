/**
 * Starts the CLI on whichever runtime is running it.
 *
 * @returns Never returns normally: the runtime entry exits the process
 */
export async function main(): Promise<void> {
  const runtime = globalThis as { Deno?: unknown; Bun?: unknown };
  if (runtime.Deno !== undefined) return (await import("./deno.ts")).main();
  if (runtime.Bun !== undefined) return (await import("./bun.ts")).main();
  return (await import("./node.ts")).main();
}
