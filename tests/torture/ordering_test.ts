import { ordering } from "../../torture/scenarios/ordering.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(ordering);
