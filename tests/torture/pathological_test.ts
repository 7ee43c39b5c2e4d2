import { pathological } from "../../torture/scenarios/pathological.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(pathological);
