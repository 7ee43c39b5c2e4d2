import { postgres } from "../../torture/scenarios/postgres.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(postgres);
