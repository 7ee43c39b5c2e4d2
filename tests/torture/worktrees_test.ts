import { worktrees } from "../../torture/scenarios/worktrees.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(worktrees);
