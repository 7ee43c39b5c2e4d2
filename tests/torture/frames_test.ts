import { frames } from "../../torture/scenarios/frames.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(frames);
