import { run } from "../../torture/scenarios/run.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(run);
