import { queue } from "../../torture/scenarios/queue.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(queue);
