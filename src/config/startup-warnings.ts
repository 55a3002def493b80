import { AppConfigService } from './app-config.service';

/**
 * What the operator should know about this configuration before the first request: settings for local trials
 * only, and defaults that are fine on this machine but not for real mail. Said once per process at start
 * (src/startup/startup.ts), not by each thread or module that the setting affects.
 */
export function startupWarnings(config: AppConfigService): string[] {
  const { env } = config;
  const warnings: string[] = [];
  if (config.encryptionKeyFile) {
    warnings.push(
      `ENCRYPTION_KEY is not set: secrets are sealed with the key kept in ${config.encryptionKeyFile} (made on the first start). ` +
        'Set ENCRYPTION_KEY in production, and back it up with the database.',
    );
  }
  const { workerThreads } = config.connectionShares;
  if (env.APP_ROLE === 'all' && workerThreads < env.WORKER_PROCESSES) {
    warnings.push(
      `WORKER_PROCESSES=${env.WORKER_PROCESSES} wants more worker threads than the connection budgets can serve, two PostgreSQL ` +
        `connections and one SMTP connection each (DATABASE_POOL_SIZE=${env.DATABASE_POOL_SIZE}, a share of it the HTTP thread's` +
        `${env.SMTP_URL ? `; SMTP_POOL_SIZE=${env.SMTP_POOL_SIZE}` : ''}): ` +
        `${workerThreads} run. Raise the budgets (within PostgreSQL's max_connections and your provider's connection limit) or lower WORKER_PROCESSES.`,
    );
  }
  if (env.DOMAIN_VERIFICATION === 'skip') {
    warnings.push('DOMAIN_VERIFICATION=skip: new domains are marked verified without a DNS check. For local trials only.');
  }
  if (config.runsWorkers && !env.SMTP_URL) {
    warnings.push(
      `SMTP_URL is not set: emails are written to ${env.OUTBOX_DIR} instead of being sent. Set SMTP_URL to your provider's SMTP server.`,
    );
  }
  if (config.isLocalPublicUrl && (!env.FORMS_FROM || !env.RETURN_PATH_DOMAIN || !env.DOMAIN_SPF_INCLUDE)) {
    warnings.push(
      `Mail uses local defaults: notifications come from ${config.formsFrom.address}, bounces return to ` +
        `bounces+…@${config.returnPathDomain} and domains are shown the SPF hint "v=spf1 ${config.spfMechanism} ~all". ` +
        'For real mail set PUBLIC_URL to the address users reach, FORMS_FROM to an address on a verified domain, ' +
        "RETURN_PATH_DOMAIN to a domain whose MX points at the inbound SMTP server, and DOMAIN_SPF_INCLUDE to your provider's SPF domain.",
    );
  }
  return warnings;
}
