import { rules } from "../../torture/scenarios/rules.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(rules);
