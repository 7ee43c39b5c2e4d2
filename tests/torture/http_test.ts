import { http } from "../../torture/scenarios/http.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(http);
