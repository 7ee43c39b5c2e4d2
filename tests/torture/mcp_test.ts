import { mcp } from "../../torture/scenarios/mcp.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(mcp);
