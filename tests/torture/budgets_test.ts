import { budgets } from "../../torture/scenarios/budgets.ts";
import { tortureTest } from "./_torture.ts";

tortureTest(budgets);
