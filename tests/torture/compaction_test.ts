import { compaction } from "../../torture/scenarios/compaction.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(compaction);
