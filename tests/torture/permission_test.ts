import { permission } from "../../torture/scenarios/permission.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(permission);
