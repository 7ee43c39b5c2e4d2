/**
 * The handlers of the session methods, loaded with a connection's session side (never at
 * start-up: see `src/server/connection_sessions.ts`).
 *
 * @module
 */
export { cancel } from "./handlers/session_cancel.ts";
export { closeSession, deleteSession } from "./handlers/session_close.ts";
export { setConfigOption, setMode } from "./handlers/session_config.ts";
export { forkSession } from "./handlers/session_fork.ts";
export { listSessions } from "./handlers/session_list.ts";
export { loadSession, resumeSession } from "./handlers/session_load.ts";
export { newSession } from "./handlers/session_new.ts";
export { prompt } from "./handlers/session_prompt.ts";
export { steerSession } from "./handlers/session_steering.ts";
