import { sandbox } from "../../torture/scenarios/sandbox.ts";
import { bwrapAvailable } from "../_helpers/bwrap.ts";
import { tortureTest } from "./_torture.ts";

// Without bubblewrap: skipped with the loud line (a failure in CI, where bwrapAvailable throws).
if (bwrapAvailable()) tortureTest(sandbox);
