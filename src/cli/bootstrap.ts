import { AccountsModule } from '../operator/accounts.module';
import { AccountsService } from '../operator/accounts.service';
import { RedisModule } from '../redis/redis.module';
import { withDatabaseContext } from './database-context';

/**
 * Creates the operator account if there is none and answers a new operator admin key. Talks to the database
 * directly (the server's environment variables), as there is no key yet to call the API with.
 */
export function bootstrapOperator(): Promise<string> {
  return withDatabaseContext([RedisModule, AccountsModule], ['postgres', 'redis'], async (app) => {
    const key = await app.get(AccountsService).bootstrapOperator();
    if (!key) throw new Error('No operator key was made');
    return key;
  });
}
