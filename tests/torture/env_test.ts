import { env } from "../../torture/scenarios/env.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(env);
