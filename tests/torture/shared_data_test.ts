import { sharedData } from "../../torture/scenarios/shared_data.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(sharedData);
