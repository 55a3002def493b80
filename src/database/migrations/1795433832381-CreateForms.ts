import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateForms1795433832381 implements MigrationInterface {
  name = 'CreateForms1795433832381';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "forms" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "kind" character varying(12) NOT NULL, "name" character varying(200) NOT NULL, "slug" character varying(63), "domain_id" character varying(40), "collection_id" character varying(40), "settings" jsonb NOT NULL DEFAULT '{}', "confirmed_at" TIMESTAMP WITH TIME ZONE, "confirmation_token_hash" character(64), "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_ba062fd30b06814a60756f233da" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_forms_confirmation_token" ON "forms" ("confirmation_token_hash") WHERE "confirmation_token_hash" IS NOT NULL`,
    );
    await queryRunner.query(`CREATE INDEX "IX_forms_account_created" ON "forms" ("account_id", "created_at") `);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_forms_collection_slug" ON "forms" ("collection_id", "slug") WHERE "collection_id" IS NOT NULL`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "UQ_forms_domain_slug" ON "forms" ("domain_id", "slug") WHERE "domain_id" IS NOT NULL`);
    await queryRunner.query(
      `CREATE TABLE "form_submissions" ("id" character varying(40) NOT NULL, "account_id" character varying(40) NOT NULL, "form_id" character varying(40) NOT NULL, "status" character varying(10) NOT NULL, "spam_reason" character varying(200), "fields" jsonb NOT NULL, "files" jsonb NOT NULL DEFAULT '[]', "held_attachments" jsonb, "message_ids" jsonb NOT NULL DEFAULT '[]', "ip" character varying(45), "user_agent" character varying(500), "origin" character varying(500), "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_fb6e1e9f26cda31c358a8a1530e" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_form_submissions_form_created" ON "form_submissions" ("form_id", "created_at", "id") `);
    await queryRunner.query(
      `CREATE TABLE "event_outbox" ("id" BIGSERIAL NOT NULL, "account_id" character varying(40) NOT NULL, "type" character varying(40) NOT NULL, "payload" jsonb NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "published_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "PK_c8bd4a6797caa3ebad9b40c9813" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IX_event_outbox_unpublished" ON "event_outbox" ("id") WHERE "published_at" IS NULL`);
    // The forms domains and collections kept in JSON become rows (one entity for every form).
    await queryRunner.query(`INSERT INTO "forms" ("id", "account_id", "kind", "name", "slug", "collection_id", "settings", "confirmed_at")
            SELECT 'frm_' || substr(md5(c."id" || '/' || f.key), 1, 22), c."account_id", 'collection', left(COALESCE(f.value->>'name', f.key), 200), f.key, c."id", f.value, now()
            FROM "collections" c, jsonb_each(c."forms") f`);
    await queryRunner.query(`INSERT INTO "forms" ("id", "account_id", "kind", "name", "slug", "domain_id", "settings", "confirmed_at")
            SELECT 'frm_' || substr(md5(d."id" || '/' || f.key), 1, 22), d."account_id", 'domain', left(COALESCE(f.value->>'name', f.key), 200), f.key, d."id", f.value, now()
            FROM "domains" d, jsonb_each(COALESCE(d."settings"->'forms', '{}')) f`);
    await queryRunner.query(`UPDATE "domains" SET "settings" = "settings" - 'forms' WHERE "settings" ? 'forms'`);
    await queryRunner.query(`ALTER TABLE "collections" DROP COLUMN "forms"`);
    await queryRunner.query(`ALTER TABLE "templates" ADD "type" character varying(20) NOT NULL DEFAULT 'email'`);
    await queryRunner.query(`ALTER TABLE "messages" ADD "system_sender" boolean NOT NULL DEFAULT false`);
    await queryRunner.query(
      `ALTER TABLE "forms" ADD CONSTRAINT "FK_da65a723430d6be50f6950944f8" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "forms" ADD CONSTRAINT "FK_2f129ff19c785605046713f8c4b" FOREIGN KEY ("domain_id") REFERENCES "domains"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "forms" ADD CONSTRAINT "FK_652a9dd4395f4041188d3123737" FOREIGN KEY ("collection_id") REFERENCES "collections"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "form_submissions" ADD CONSTRAINT "FK_079b8ffae53cb7b89333ebfc346" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "form_submissions" ADD CONSTRAINT "FK_56176b21d723c3b3344305c48e1" FOREIGN KEY ("form_id") REFERENCES "forms"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "event_outbox" ADD CONSTRAINT "FK_a585f22f102ca763711bdabc77e" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "event_outbox" DROP CONSTRAINT "FK_a585f22f102ca763711bdabc77e"`);
    await queryRunner.query(`ALTER TABLE "form_submissions" DROP CONSTRAINT "FK_56176b21d723c3b3344305c48e1"`);
    await queryRunner.query(`ALTER TABLE "form_submissions" DROP CONSTRAINT "FK_079b8ffae53cb7b89333ebfc346"`);
    await queryRunner.query(`ALTER TABLE "forms" DROP CONSTRAINT "FK_652a9dd4395f4041188d3123737"`);
    await queryRunner.query(`ALTER TABLE "forms" DROP CONSTRAINT "FK_2f129ff19c785605046713f8c4b"`);
    await queryRunner.query(`ALTER TABLE "forms" DROP CONSTRAINT "FK_da65a723430d6be50f6950944f8"`);
    await queryRunner.query(`ALTER TABLE "messages" DROP COLUMN "system_sender"`);
    await queryRunner.query(`ALTER TABLE "templates" DROP COLUMN "type"`);
    await queryRunner.query(`ALTER TABLE "collections" ADD "forms" jsonb NOT NULL DEFAULT '{}'`);
    await queryRunner.query(
      `UPDATE "collections" c SET "forms" = sub.forms FROM (SELECT "collection_id", jsonb_object_agg("slug", "settings") AS forms FROM "forms" WHERE "collection_id" IS NOT NULL GROUP BY "collection_id") sub WHERE sub."collection_id" = c."id"`,
    );
    await queryRunner.query(
      `UPDATE "domains" d SET "settings" = d."settings" || jsonb_build_object('forms', sub.forms) FROM (SELECT "domain_id", jsonb_object_agg("slug", "settings") AS forms FROM "forms" WHERE "domain_id" IS NOT NULL AND "slug" <> 'send' GROUP BY "domain_id") sub WHERE sub."domain_id" = d."id"`,
    );
    await queryRunner.query(`DROP INDEX "public"."IX_event_outbox_unpublished"`);
    await queryRunner.query(`DROP TABLE "event_outbox"`);
    await queryRunner.query(`DROP INDEX "public"."IX_form_submissions_form_created"`);
    await queryRunner.query(`DROP TABLE "form_submissions"`);
    await queryRunner.query(`DROP INDEX "public"."UQ_forms_domain_slug"`);
    await queryRunner.query(`DROP INDEX "public"."UQ_forms_collection_slug"`);
    await queryRunner.query(`DROP INDEX "public"."IX_forms_account_created"`);
    await queryRunner.query(`DROP INDEX "public"."UQ_forms_confirmation_token"`);
    await queryRunner.query(`DROP TABLE "forms"`);
  }
}
