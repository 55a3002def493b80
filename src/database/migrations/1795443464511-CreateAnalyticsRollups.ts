import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Hand-written (the triggers and the backfill): analytics reads hourly and daily rollups that PostgreSQL keeps as
 * events are written, whoever writes them (acceptance, the delivery worker, tracking, provider events, DSNs), so a
 * query's cost does not grow with the number of messages. The triggers are statement-level with transition
 * tables: each statement adds its new rows once per account and hour, then once per account and day, each in key
 * order, so concurrent statements lock the rows they share in the same order (every hour before any day) and never
 * deadlock, and a batch of a thousand events makes one upsert per bucket instead of a thousand updates of a hot
 * row. Definitions: docs/decisions.md.
 */

/** The event types analytics counts; the others (queued, deferred, …) cost the trigger a scan of the new rows only. */
const COUNTED_TYPES = `'sent', 'delivered', 'bounced', 'complained', 'unsubscribed', 'opened', 'clicked'`;

/**
 * Adds the events of `source` (the statement's new rows, or the whole table for the backfill) to
 * email_stats_hourly, then the same sums per day to email_stats_daily. A `sent` event of one recipient counts 1; one of the whole message (recipient null: every
 * recipient still pending was accepted in one attempt) counts the recipients that attempt went to: those without
 * an earlier per-recipient sent, bounced, failed or suppressed event (one recipient: 1, with no lookup). A
 * message's first human open or click (the first recorded: the lowest id, so that the backfill picks the event
 * the trigger picked) is claimed in message_engagements; it counts as unique only where the claim took.
 *
 * Messages are looked up by key, row by row (LATERAL … OFFSET 0 keeps the planner from making hash joins of them):
 * PL/pgSQL plans this statement once per connection, for the size of the first call's new rows, and a plan made
 * for a bulk insert (a seq scan of messages) must never be reused for a single tracking hit. For the same reason
 * the functions run without JIT: a plan costed for a bulk insert would otherwise be compiled at every later call
 * of the connection (50 ms to a second each, measured), however few its rows.
 */
const EMAIL_COLUMNS = `sent, delivered, bounced, complained, unsubscribed, opened, opened_unique, opened_machine, clicked, clicked_unique, clicked_machine`;
const EMAIL_SUMS = `sum(sent) AS sent, sum(delivered) AS delivered, sum(bounced) AS bounced, sum(complained) AS complained, sum(unsubscribed) AS unsubscribed, sum(opened) AS opened, sum(opened_unique) AS opened_unique, sum(opened_machine) AS opened_machine, sum(clicked) AS clicked, sum(clicked_unique) AS clicked_unique, sum(clicked_machine) AS clicked_machine`;
const EMAIL_ADDS = `
    sent = s.sent + excluded.sent,
    delivered = s.delivered + excluded.delivered,
    bounced = s.bounced + excluded.bounced,
    complained = s.complained + excluded.complained,
    unsubscribed = s.unsubscribed + excluded.unsubscribed,
    opened = s.opened + excluded.opened,
    opened_unique = s.opened_unique + excluded.opened_unique,
    opened_machine = s.opened_machine + excluded.opened_machine,
    clicked = s.clicked + excluded.clicked,
    clicked_unique = s.clicked_unique + excluded.clicked_unique,
    clicked_machine = s.clicked_machine + excluded.clicked_machine`;

const emailRollup = (source: string) => `
  WITH counted AS (
    SELECT e.id, e.message_id, e.type, e.machine, e.occurred_at, m.account_id,
      CASE
        WHEN e.type <> 'sent' THEN 0
        WHEN e.recipient IS NOT NULL OR jsonb_array_length(m.recipients) <= 1 THEN 1
        ELSE GREATEST(1, (
          SELECT count(*)::int FROM jsonb_array_elements_text(m.recipients) AS r(address)
          WHERE NOT EXISTS (
            SELECT 1 FROM message_events x
            WHERE x.message_id = e.message_id AND x.id < e.id AND x.recipient = r.address
              AND x.type IN ('sent', 'bounced', 'failed', 'suppressed'))))
      END AS sent
    FROM ${source} e
    CROSS JOIN LATERAL (SELECT account_id, recipients FROM messages WHERE id = e.message_id OFFSET 0) m
    WHERE e.type IN (${COUNTED_TYPES})
  ), firsts AS (
    INSERT INTO message_engagements (message_id, type, occurred_at)
    SELECT DISTINCT ON (message_id, type) message_id, type, occurred_at
    FROM counted
    WHERE type IN ('opened', 'clicked') AND NOT machine
    ORDER BY message_id, type, id
    ON CONFLICT (message_id, type) DO NOTHING
    RETURNING message_id, type, occurred_at
  ), hours AS (
    SELECT account_id, hour, ${EMAIL_SUMS}
    FROM (
      SELECT account_id, date_trunc('hour', occurred_at, 'UTC') AS hour, sent,
        (type = 'delivered')::int AS delivered,
        (type = 'bounced')::int AS bounced,
        (type = 'complained')::int AS complained,
        (type = 'unsubscribed')::int AS unsubscribed,
        (type = 'opened' AND NOT machine)::int AS opened,
        0 AS opened_unique,
        (type = 'opened' AND machine)::int AS opened_machine,
        (type = 'clicked' AND NOT machine)::int AS clicked,
        0 AS clicked_unique,
        (type = 'clicked' AND machine)::int AS clicked_machine
      FROM counted
      UNION ALL
      SELECT m.account_id, date_trunc('hour', f.occurred_at, 'UTC'), 0, 0, 0, 0, 0,
        0, (f.type = 'opened')::int, 0, 0, (f.type = 'clicked')::int, 0
      FROM firsts f
      CROSS JOIN LATERAL (SELECT account_id FROM messages WHERE id = f.message_id OFFSET 0) m
    ) c
    GROUP BY account_id, hour
  ), hourly AS (
    INSERT INTO email_stats_hourly AS s (account_id, hour, ${EMAIL_COLUMNS})
    SELECT account_id, hour, ${EMAIL_COLUMNS} FROM hours
    ORDER BY account_id, hour
    ON CONFLICT (account_id, hour) DO UPDATE SET${EMAIL_ADDS}
    RETURNING 1
  )
  INSERT INTO email_stats_daily AS s (account_id, day, ${EMAIL_COLUMNS})
  SELECT account_id, (hour AT TIME ZONE 'UTC')::date, ${EMAIL_SUMS}
  FROM hours
  WHERE (SELECT count(*) FROM hourly) >= 0 -- the hours are upserted (and locked) before any day
  GROUP BY 1, 2
  ORDER BY 1, 2
  ON CONFLICT (account_id, day) DO UPDATE SET${EMAIL_ADDS}`;

/** Adds the submissions of `source` to the form rollups: accepted and held ones are submissions, spam apart. */
const formRollup = (source: string) => `
  WITH hours AS (
    SELECT account_id, date_trunc('hour', created_at, 'UTC') AS hour, form_id,
      count(*) FILTER (WHERE status <> 'spam') AS submissions, count(*) FILTER (WHERE status = 'spam') AS spam
    FROM ${source}
    GROUP BY 1, 2, 3
  ), hourly AS (
    INSERT INTO form_stats_hourly AS s (account_id, hour, form_id, submissions, spam)
    SELECT account_id, hour, form_id, submissions, spam FROM hours
    ORDER BY 1, 2, 3
    ON CONFLICT (account_id, hour, form_id) DO UPDATE SET
      submissions = s.submissions + excluded.submissions,
      spam = s.spam + excluded.spam
    RETURNING 1
  )
  INSERT INTO form_stats_daily AS s (account_id, day, form_id, submissions, spam)
  SELECT account_id, (hour AT TIME ZONE 'UTC')::date, form_id, sum(submissions), sum(spam)
  FROM hours
  WHERE (SELECT count(*) FROM hourly) >= 0 -- the hours are upserted (and locked) before any day
  GROUP BY 1, 2, 3
  ORDER BY 1, 2, 3
  ON CONFLICT (account_id, day, form_id) DO UPDATE SET
    submissions = s.submissions + excluded.submissions,
    spam = s.spam + excluded.spam`;

const MESSAGE_EVENTS_FUNCTION = `
CREATE FUNCTION analytics_message_events() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $$
BEGIN
  ${emailRollup('analytics_new_events')};
  RETURN NULL;
END
$$`;

const MESSAGE_EVENTS_TRIGGER = `
CREATE TRIGGER message_events_analytics AFTER INSERT ON message_events
  REFERENCING NEW TABLE AS analytics_new_events
  FOR EACH STATEMENT EXECUTE FUNCTION analytics_message_events()`;

const FORM_SUBMISSIONS_FUNCTION = `
CREATE FUNCTION analytics_form_submissions() RETURNS trigger LANGUAGE plpgsql SET jit = off AS $$
BEGIN
  ${formRollup('analytics_new_submissions')};
  RETURN NULL;
END
$$`;

// Only inserts: a held submission that is released (held → accepted) was counted as a submission already.
const FORM_SUBMISSIONS_TRIGGER = `
CREATE TRIGGER form_submissions_analytics AFTER INSERT ON form_submissions
  REFERENCING NEW TABLE AS analytics_new_submissions
  FOR EACH STATEMENT EXECUTE FUNCTION analytics_form_submissions()`;

export class CreateAnalyticsRollups1795443464511 implements MigrationInterface {
  name = 'CreateAnalyticsRollups1795443464511';

  public async up(queryRunner: QueryRunner): Promise<void> {
    // Writers of older instances wait until this commits: no event lands between the backfill and the triggers.
    await queryRunner.query(`LOCK TABLE "message_events", "form_submissions" IN SHARE ROW EXCLUSIVE MODE`);
    await queryRunner.query(
      `CREATE TABLE "message_engagements" ("message_id" character varying(40) NOT NULL, "type" character varying(10) NOT NULL, "occurred_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "PK_d4fe695a604f1eefa2bbf812c80" PRIMARY KEY ("message_id", "type"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "form_stats_hourly" ("account_id" character varying(40) NOT NULL, "hour" TIMESTAMP WITH TIME ZONE NOT NULL, "form_id" character varying(40) NOT NULL, "submissions" bigint NOT NULL DEFAULT '0', "spam" bigint NOT NULL DEFAULT '0', CONSTRAINT "PK_96b296f03cd47515004fd839338" PRIMARY KEY ("account_id", "hour", "form_id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_form_stats_hourly_form" ON "form_stats_hourly" ("form_id") `);
    await queryRunner.query(
      `CREATE TABLE "email_stats_hourly" ("account_id" character varying(40) NOT NULL, "hour" TIMESTAMP WITH TIME ZONE NOT NULL, "sent" bigint NOT NULL DEFAULT '0', "delivered" bigint NOT NULL DEFAULT '0', "bounced" bigint NOT NULL DEFAULT '0', "complained" bigint NOT NULL DEFAULT '0', "unsubscribed" bigint NOT NULL DEFAULT '0', "opened" bigint NOT NULL DEFAULT '0', "opened_unique" bigint NOT NULL DEFAULT '0', "opened_machine" bigint NOT NULL DEFAULT '0', "clicked" bigint NOT NULL DEFAULT '0', "clicked_unique" bigint NOT NULL DEFAULT '0', "clicked_machine" bigint NOT NULL DEFAULT '0', CONSTRAINT "PK_0331dfe188071a31b8f72c7e21d" PRIMARY KEY ("account_id", "hour"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "form_stats_daily" ("account_id" character varying(40) NOT NULL, "day" date NOT NULL, "form_id" character varying(40) NOT NULL, "submissions" bigint NOT NULL DEFAULT '0', "spam" bigint NOT NULL DEFAULT '0', CONSTRAINT "PK_9f58a451a2ac44ea43fe5fa7507" PRIMARY KEY ("account_id", "day", "form_id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_form_stats_daily_form" ON "form_stats_daily" ("form_id") `);
    await queryRunner.query(
      `CREATE TABLE "email_stats_daily" ("account_id" character varying(40) NOT NULL, "day" date NOT NULL, "sent" bigint NOT NULL DEFAULT '0', "delivered" bigint NOT NULL DEFAULT '0', "bounced" bigint NOT NULL DEFAULT '0', "complained" bigint NOT NULL DEFAULT '0', "unsubscribed" bigint NOT NULL DEFAULT '0', "opened" bigint NOT NULL DEFAULT '0', "opened_unique" bigint NOT NULL DEFAULT '0', "opened_machine" bigint NOT NULL DEFAULT '0', "clicked" bigint NOT NULL DEFAULT '0', "clicked_unique" bigint NOT NULL DEFAULT '0', "clicked_machine" bigint NOT NULL DEFAULT '0', CONSTRAINT "PK_fc3f96dff662b75077e80a46b73" PRIMARY KEY ("account_id", "day"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "message_engagements" ADD CONSTRAINT "FK_52ea1f5e723dd53eafbac79e8a1" FOREIGN KEY ("message_id") REFERENCES "messages"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "form_stats_hourly" ADD CONSTRAINT "FK_79d679de80471ab0ecb50ccf8b2" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "form_stats_hourly" ADD CONSTRAINT "FK_fd353927eb66098d74c84e8b348" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "email_stats_hourly" ADD CONSTRAINT "FK_9e673b783e9cf370781a2e30bad" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "form_stats_daily" ADD CONSTRAINT "FK_d22f9ba9945f958e90ef3dbbd3e" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "form_stats_daily" ADD CONSTRAINT "FK_372e0dcb1a690002ee3dab0cc3c" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "email_stats_daily" ADD CONSTRAINT "FK_15d6f2672076272f548dcee8bd2" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    // An upgraded installation starts with the numbers of the events and submissions it already has.
    await queryRunner.query(emailRollup('message_events'));
    await queryRunner.query(formRollup('form_submissions'));
    await queryRunner.query(MESSAGE_EVENTS_FUNCTION);
    await queryRunner.query(MESSAGE_EVENTS_TRIGGER);
    await queryRunner.query(FORM_SUBMISSIONS_FUNCTION);
    await queryRunner.query(FORM_SUBMISSIONS_TRIGGER);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "form_submissions_analytics" ON "form_submissions"`);
    await queryRunner.query(`DROP FUNCTION "analytics_form_submissions"()`);
    await queryRunner.query(`DROP TRIGGER "message_events_analytics" ON "message_events"`);
    await queryRunner.query(`DROP FUNCTION "analytics_message_events"()`);
    await queryRunner.query(`ALTER TABLE "email_stats_daily" DROP CONSTRAINT "FK_15d6f2672076272f548dcee8bd2"`);
    await queryRunner.query(`ALTER TABLE "form_stats_daily" DROP CONSTRAINT "FK_372e0dcb1a690002ee3dab0cc3c"`);
    await queryRunner.query(`ALTER TABLE "form_stats_daily" DROP CONSTRAINT "FK_d22f9ba9945f958e90ef3dbbd3e"`);
    await queryRunner.query(`DROP TABLE "email_stats_daily"`);
    await queryRunner.query(`DROP INDEX "public"."IX_form_stats_daily_form"`);
    await queryRunner.query(`DROP TABLE "form_stats_daily"`);
    await queryRunner.query(`ALTER TABLE "email_stats_hourly" DROP CONSTRAINT "FK_9e673b783e9cf370781a2e30bad"`);
    await queryRunner.query(`ALTER TABLE "form_stats_hourly" DROP CONSTRAINT "FK_fd353927eb66098d74c84e8b348"`);
    await queryRunner.query(`ALTER TABLE "form_stats_hourly" DROP CONSTRAINT "FK_79d679de80471ab0ecb50ccf8b2"`);
    await queryRunner.query(`ALTER TABLE "message_engagements" DROP CONSTRAINT "FK_52ea1f5e723dd53eafbac79e8a1"`);
    await queryRunner.query(`DROP TABLE "email_stats_hourly"`);
    await queryRunner.query(`DROP INDEX "public"."IX_form_stats_hourly_form"`);
    await queryRunner.query(`DROP TABLE "form_stats_hourly"`);
    await queryRunner.query(`DROP TABLE "message_engagements"`);
  }
}
