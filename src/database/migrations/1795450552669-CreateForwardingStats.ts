import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Hand-written (the trigger and the backfill), as CreateAnalyticsRollups: forwarding analytics reads hourly and
 * daily rollups of `inbound_messages` per account and forwarding domain, kept by a statement-level AFTER INSERT
 * trigger with a transition table. Each statement adds its new rows once per account, hour and domain, then once
 * per account, day and domain, each in key order and every hour before any day, so concurrent statements lock
 * the rows they share in the same order and never deadlock. Definitions: docs/decisions.md.
 */

/** Adds the messages of `source` (the statement's new rows, or the whole table for the backfill) to the forwarding rollups. */
const forwardingRollup = (source: string) => `
  WITH hours AS (
    SELECT account_id, date_trunc('hour', created_at, 'UTC') AS hour, domain,
      count(*) AS received, sum(jsonb_array_length(recipients)) AS recipients
    FROM ${source}
    GROUP BY 1, 2, 3
  ), hourly AS (
    INSERT INTO forwarding_stats_hourly AS s (account_id, hour, domain, received, recipients)
    SELECT account_id, hour, domain, received, recipients FROM hours
    ORDER BY 1, 2, 3
    ON CONFLICT (account_id, hour, domain) DO UPDATE SET
      received = s.received + excluded.received,
      recipients = s.recipients + excluded.recipients
    RETURNING 1
  )
  INSERT INTO forwarding_stats_daily AS s (account_id, day, domain, received, recipients)
  SELECT account_id, (hour AT TIME ZONE 'UTC')::date, domain, sum(received), sum(recipients)
  FROM hours
  WHERE (SELECT count(*) FROM hourly) >= 0 -- the hours are upserted (and locked) before any day
  GROUP BY 1, 2, 3
  ORDER BY 1, 2, 3
  ON CONFLICT (account_id, day, domain) DO UPDATE SET
    received = s.received + excluded.received,
    recipients = s.recipients + excluded.recipients`;

// Without JIT, as the other rollup functions: PL/pgSQL keeps the plan made for the first call's row count.
const INBOUND_MESSAGES_FUNCTION = `
CREATE FUNCTION analytics_inbound_messages() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $$
BEGIN
  ${forwardingRollup('analytics_new_inbound')};
  RETURN NULL;
END
$$`;

const INBOUND_MESSAGES_TRIGGER = `
CREATE TRIGGER inbound_messages_analytics AFTER INSERT ON inbound_messages
  REFERENCING NEW TABLE AS analytics_new_inbound
  FOR EACH STATEMENT EXECUTE FUNCTION analytics_inbound_messages()`;

export class CreateForwardingStats1795450552669 implements MigrationInterface {
  name = 'CreateForwardingStats1795450552669';

  public async up(queryRunner: QueryRunner): Promise<void> {
    // Writers of older instances wait until this commits: no message lands between the backfill and the trigger.
    await queryRunner.query(`LOCK TABLE "inbound_messages" IN SHARE ROW EXCLUSIVE MODE`);
    await queryRunner.query(
      `CREATE TABLE "forwarding_stats_hourly" ("account_id" character varying(40) NOT NULL, "hour" TIMESTAMP WITH TIME ZONE NOT NULL, "domain" character varying(253) NOT NULL, "received" bigint NOT NULL DEFAULT '0', "recipients" bigint NOT NULL DEFAULT '0', CONSTRAINT "PK_282d467c23e66b2828275d49826" PRIMARY KEY ("account_id", "hour", "domain"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "forwarding_stats_daily" ("account_id" character varying(40) NOT NULL, "day" date NOT NULL, "domain" character varying(253) NOT NULL, "received" bigint NOT NULL DEFAULT '0', "recipients" bigint NOT NULL DEFAULT '0', CONSTRAINT "PK_a7e87f79b193393188b60d74eb2" PRIMARY KEY ("account_id", "day", "domain"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "forwarding_stats_hourly" ADD CONSTRAINT "FK_cb87f512be61f41ca6dded2f721" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "forwarding_stats_daily" ADD CONSTRAINT "FK_998171d4d4df40ee0a514865bdf" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    // An upgraded installation starts with the numbers of the messages it already received.
    await queryRunner.query(forwardingRollup('inbound_messages'));
    await queryRunner.query(INBOUND_MESSAGES_FUNCTION);
    await queryRunner.query(INBOUND_MESSAGES_TRIGGER);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "inbound_messages_analytics" ON "inbound_messages"`);
    await queryRunner.query(`DROP FUNCTION "analytics_inbound_messages"()`);
    await queryRunner.query(`ALTER TABLE "forwarding_stats_daily" DROP CONSTRAINT "FK_998171d4d4df40ee0a514865bdf"`);
    await queryRunner.query(`ALTER TABLE "forwarding_stats_hourly" DROP CONSTRAINT "FK_cb87f512be61f41ca6dded2f721"`);
    await queryRunner.query(`DROP TABLE "forwarding_stats_daily"`);
    await queryRunner.query(`DROP TABLE "forwarding_stats_hourly"`);
  }
}
