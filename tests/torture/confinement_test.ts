import { confinement } from "../../torture/scenarios/confinement.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(confinement);
