import { kill } from "../../torture/scenarios/kill.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(kill);
