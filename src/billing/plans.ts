import { readFileSync } from 'node:fs';
import { plainToInstance, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  ArrayUnique,
  IsArray,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  NotEquals,
  ValidateNested,
  validateSync,
} from 'class-validator';
import { parse } from 'yaml';
import { flatten } from '../common/http/validation.pipe';

/** A plan of the catalog, amounts in cents so that fees and overage add up exactly. */
export interface BillingPlan {
  name: string;
  monthlyFeeCents: number;
  includedEmails: number;
  /** What 1,000 emails beyond includedEmails cost; charged pro rata per email. */
  overageCentsPer1000: number;
}

/** D-32: 1.00 per 1,000 emails beyond the plan's included ones. */
export const DEFAULT_OVERAGE_CENTS_PER_1000 = 100;

/** The built-in catalog (D-32), used unless BILLING_PLANS_FILE replaces it. */
export const DEFAULT_PLANS: readonly BillingPlan[] = [
  { name: 'starter', monthlyFeeCents: 1000, includedEmails: 10_000, overageCentsPer1000: DEFAULT_OVERAGE_CENTS_PER_1000 },
  { name: 'developer', monthlyFeeCents: 2500, includedEmails: 50_000, overageCentsPer1000: DEFAULT_OVERAGE_CENTS_PER_1000 },
  { name: 'scale', monthlyFeeCents: 9000, includedEmails: 250_000, overageCentsPer1000: DEFAULT_OVERAGE_CENTS_PER_1000 },
];

export const PLAN_NAME = /^[a-z][a-z0-9_-]{0,31}$/;
const MONEY = { maxDecimalPlaces: 2, allowNaN: false, allowInfinity: false };

/** One entry of the plans file (docs/billing.md). */
class PlanFileEntry {
  // With stopAtFirstError the decorator nearest the property runs first: the type check sits there.
  @NotEquals('free', { message: 'name must not be free: accounts without a subscription are on Free' })
  @Matches(PLAN_NAME, { message: 'name must be 1-32 lower-case letters, digits, - or _, starting with a letter' })
  @IsString()
  name: string;

  @Max(1_000_000)
  @Min(0)
  @IsNumber(MONEY, { message: 'monthlyFee must be a number with at most 2 decimals' })
  monthlyFee: number;

  @Max(1_000_000_000_000)
  @Min(0)
  @IsInt()
  includedEmails: number;

  @Max(10_000)
  @Min(0)
  @IsNumber(MONEY, { message: 'overagePer1000 must be a number with at most 2 decimals' })
  @IsOptional()
  overagePer1000?: number;
}

/** The plans file: a list of plans, and the overage rate of those that name none. */
class PlansFile {
  @Max(10_000)
  @Min(0)
  @IsNumber(MONEY, { message: 'overagePer1000 must be a number with at most 2 decimals' })
  @IsOptional()
  overagePer1000?: number;

  @ValidateNested({ each: true })
  @ArrayUnique((plan: PlanFileEntry | null | undefined) => plan?.name, { message: 'plans must have distinct names' })
  @ArrayMaxSize(100)
  @ArrayMinSize(1)
  @IsArray()
  @Type(() => PlanFileEntry)
  plans: PlanFileEntry[];
}

const cents = (amount: number) => Math.round(amount * 100);

/** The plans a subscription may name: the built-in ones, or those of BILLING_PLANS_FILE. */
export class PlanCatalog {
  private readonly byName: ReadonlyMap<string, BillingPlan>;

  constructor(readonly plans: readonly BillingPlan[] = DEFAULT_PLANS) {
    this.byName = new Map(plans.map((plan) => [plan.name, plan]));
  }

  get(name: string): BillingPlan | undefined {
    return this.byName.get(name);
  }

  get names(): string[] {
    return this.plans.map((plan) => plan.name);
  }

  /** The catalog of `file` (JSON or YAML), or the built-in one without a file; throws naming the file and each bad field. */
  static load(file: string | undefined): PlanCatalog {
    if (!file) return new PlanCatalog();
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(
        `Invalid BILLING_PLANS_FILE ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
        { cause: err },
      );
    }
    return PlanCatalog.parse(text, file);
  }

  /** The catalog written in `text` (JSON is YAML too); `source` names it in errors. */
  static parse(text: string, source: string): PlanCatalog {
    const fail = (problems: string[]): Error =>
      new Error(`Invalid BILLING_PLANS_FILE ${source}:\n${problems.map((p) => `  ${p}`).join('\n')}`);
    let raw: unknown;
    try {
      raw = parse(text);
    } catch (err) {
      throw fail([`not valid JSON or YAML: ${(err as Error).message.split('\n')[0]}`]);
    }
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw fail(['the file must hold an object with a plans list']);
    const parsed = plainToInstance(PlansFile, raw);
    const errors = validateSync(parsed, { whitelist: true, forbidNonWhitelisted: true, stopAtFirstError: true });
    if (errors.length > 0) throw fail(flatten(errors).map(({ field, message }) => `${field}: ${message}`));
    const defaultRate = parsed.overagePer1000 === undefined ? DEFAULT_OVERAGE_CENTS_PER_1000 : cents(parsed.overagePer1000);
    return new PlanCatalog(
      parsed.plans.map((plan) => ({
        name: plan.name,
        monthlyFeeCents: cents(plan.monthlyFee),
        includedEmails: plan.includedEmails,
        overageCentsPer1000: plan.overagePer1000 === undefined ? defaultRate : cents(plan.overagePer1000),
      })),
    );
  }
}
