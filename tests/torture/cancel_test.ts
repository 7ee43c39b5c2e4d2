import { cancelRaces } from "../../torture/scenarios/cancel.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(cancelRaces);
