import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Project and collection names are one line of text, not blank (ONE_LINE_NAME), as the configuration file can hold
 * them: the APIs took any text before, so a name made then would make the account's export refused when pushed back.
 * Line breaks become spaces (the name then trimmed); a name left without a visible character takes the slug. Not
 * undone: line breaks and blanks said nothing worth restoring.
 */
export class MakeProjectAndCollectionNamesOneLine1795787001000 implements MigrationInterface {
  name = 'MakeProjectAndCollectionNamesOneLine1795787001000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['projects', 'collections']) {
      // Trimmed as the APIs trim a name, so that the file's name (checked trimmed) is the stored one.
      await queryRunner.query(
        `UPDATE "${table}" SET "name" = regexp_replace(regexp_replace("name", '\\r\\n?|\\n', ' ', 'g'), '^\\s+|\\s+$', '', 'g') WHERE "name" ~ '[\\r\\n]'`,
      );
      await queryRunner.query(`UPDATE "${table}" SET "name" = "slug" WHERE "name" !~ '\\S'`);
    }
  }

  public async down(): Promise<void> {
    // Nothing to undo: the previous schema takes these names as they are.
  }
}
