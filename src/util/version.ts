import denoJson from "../../deno.json" with { type: "json" };

/** The acp-harness version, from deno.json. */
export const VERSION: string = denoJson.version;
