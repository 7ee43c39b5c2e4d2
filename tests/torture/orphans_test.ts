import { orphans } from "../../torture/scenarios/orphans.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(orphans);
