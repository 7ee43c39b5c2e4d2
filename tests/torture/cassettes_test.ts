import { cassettes } from "../../torture/scenarios/cassettes.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(cassettes);
