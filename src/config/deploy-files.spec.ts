import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { ConfigurationError, ENV_KEYS, EnvSchema, validateEnv } from './env.schema';

const ROOT = join(__dirname, '..', '..');
const KUBERNETES = join(ROOT, 'deploy', 'kubernetes');

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  spec?: any;
}

const manifests: Manifest[] = readdirSync(KUBERNETES)
  .filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml')
  .flatMap((file) =>
    parseAllDocuments(readFileSync(join(KUBERNETES, file), 'utf8')).map((document) => {
      if (document.errors.length) throw new Error(`${file}: ${document.errors[0].message}`);
      return document.toJS() as Manifest;
    }),
  );
const find = (kind: string, name: string) => {
  const found = manifests.find((m) => m.kind === kind && m.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in deploy/kubernetes`);
  return found;
};
const configMap = () => find('ConfigMap', 'mailroom-config').data!;
const secret = () => find('Secret', 'mailroom-secrets').stringData!;
const container = (deployment: string) => find('Deployment', deployment).spec.template.spec.containers[0];
const podOf = (deployment: string) => find('Deployment', deployment).spec.template;
const roleOf = (deployment: string) => container(deployment).env.find((e: { name: string }) => e.name === 'APP_ROLE').value as string;
const portNamed = (deployment: string, name: string) =>
  container(deployment).ports.find((p: { name: string }) => p.name === name).containerPort as number;

/** The environment a pod of this Deployment starts with, a real ENCRYPTION_KEY in place of the placeholder. */
const podEnvironment = (deployment: string): EnvSchema =>
  validateEnv({
    ...configMap(),
    ...secret(),
    ENCRYPTION_KEY: 'ab'.repeat(32),
    BOOTSTRAP_ADMIN_KEY: '',
    METRICS_TOKEN: '',
    APP_ROLE: roleOf(deployment),
  });

// The deployment files set only variables Mailroom reads, with values it accepts, and agree with each other.
describe('deployment files', () => {
  describe('deploy/kubernetes', () => {
    it('lists every manifest file in the kustomization, each document with a kind and a name', () => {
      const kustomization = parse(readFileSync(join(KUBERNETES, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
      const files = readdirSync(KUBERNETES).filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml');
      expect([...kustomization.resources].sort()).toEqual(files.sort());
      for (const manifest of manifests) expect(manifest).toMatchObject({ apiVersion: expect.any(String), kind: expect.any(String) });
      expect(manifests.map((m) => `${m.kind}/${m.metadata.name}`).sort()).toEqual(
        [
          'ConfigMap/mailroom-config',
          'Deployment/mailroom-api',
          'Deployment/mailroom-clamav',
          'Deployment/mailroom-spamassassin',
          'Deployment/mailroom-worker',
          'HorizontalPodAutoscaler/mailroom-api',
          'Namespace/mailroom',
          'PodDisruptionBudget/mailroom-api',
          'PodDisruptionBudget/mailroom-worker',
          'Secret/mailroom-secrets',
          'Service/mailroom-api',
          'Service/mailroom-clamav',
          'Service/mailroom-inbound-smtp',
          'Service/mailroom-spamassassin',
        ].sort(),
      );
    });

    it('names only variables Mailroom reads, with values it accepts', () => {
      const named = [...Object.keys(configMap()), ...Object.keys(secret())];
      expect(named.filter((name) => !(ENV_KEYS as string[]).includes(name))).toEqual([]);
      expect(podEnvironment('mailroom-api').APP_ROLE).toBe('api');
      expect(podEnvironment('mailroom-worker').APP_ROLE).toBe('worker');
    });

    it('has placeholders that stop the pods at start, naming each variable, until they are replaced', () => {
      const refused = (() => {
        try {
          validateEnv({ ...configMap(), ...secret() });
          return [];
        } catch (err) {
          return (err as ConfigurationError).problems.map((problem) => problem.split(' ')[0]);
        }
      })();
      expect(refused.sort()).toEqual(['BOOTSTRAP_ADMIN_KEY', 'ENCRYPTION_KEY', 'METRICS_TOKEN']);
    });

    it('probes and scrapes the ports the processes listen on, and waits out the shutdown drain', () => {
      const api = podEnvironment('mailroom-api');
      const worker = podEnvironment('mailroom-worker');
      expect(portNamed('mailroom-api', 'http')).toBe(api.PORT);
      expect(container('mailroom-api').readinessProbe.httpGet).toEqual({ path: '/health/ready', port: 'http' });
      expect(container('mailroom-api').livenessProbe.httpGet).toEqual({ path: '/health', port: 'http' });
      expect(portNamed('mailroom-worker', 'probes')).toBe(worker.WORKER_PORT);
      expect(container('mailroom-worker').readinessProbe.httpGet).toEqual({ path: '/health/ready', port: 'probes' });
      expect(container('mailroom-worker').livenessProbe.httpGet).toEqual({ path: '/health', port: 'probes' });
      expect(portNamed('mailroom-worker', 'smtp')).toBe(worker.INBOUND_SMTP_PORT);
      expect(find('Service', 'mailroom-inbound-smtp').spec.ports[0].targetPort).toBe('smtp');
      expect(podOf('mailroom-api').metadata.annotations['prometheus.io/port']).toBe(String(api.PORT));
      expect(podOf('mailroom-worker').metadata.annotations['prometheus.io/port']).toBe(String(worker.WORKER_PORT));
      for (const [deployment, env] of [
        ['mailroom-api', api],
        ['mailroom-worker', worker],
      ] as const) {
        expect(podOf(deployment).spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(
          env.SHUTDOWN_DELAY_MS + env.SHUTDOWN_TIMEOUT_MS,
        );
      }
      expect(find('HorizontalPodAutoscaler', 'mailroom-api').spec.scaleTargetRef).toEqual({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: 'mailroom-api',
      });
    });

    it('points the workers at the content scanners’ Services and ports', () => {
      const worker = podEnvironment('mailroom-worker');
      const addressOf = (service: string) => {
        const spec = find('Service', service).spec;
        const scanner = find('Deployment', service).spec.template.spec.containers[0];
        const port = scanner.ports.find((p: { name: string }) => p.name === spec.ports[0].targetPort).containerPort as number;
        expect(spec.ports[0].port).toBe(port);
        return `${service}:${port}`;
      };
      expect(worker.INBOUND_SPAMD_ADDRESS).toBe(addressOf('mailroom-spamassassin'));
      expect(worker.INBOUND_CLAMD_ADDRESS).toBe(addressOf('mailroom-clamav'));
    });
  });

  describe('docker-compose.yml', () => {
    const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
      services: Record<string, { environment?: Record<string, string>; healthcheck?: { test: string[] } }>;
    };
    const mailroomServices = Object.entries(compose.services).filter(([, service]) => service.environment?.APP_ROLE);

    it('runs one API and two workers, every service with a health check', () => {
      expect(mailroomServices.map(([, service]) => service.environment!.APP_ROLE).sort()).toEqual(['api', 'worker', 'worker']);
      expect(Object.entries(compose.services).filter(([, service]) => !service.healthcheck)).toEqual([]);
    });

    it('names only variables Mailroom reads', () => {
      const named = mailroomServices.flatMap(([, service]) => Object.keys(service.environment!));
      expect(named.filter((name) => !(ENV_KEYS as string[]).includes(name))).toEqual([]);
    });

    it('points the workers at the spamassassin and clamav services', () => {
      for (const [, worker] of mailroomServices.filter(([, service]) => service.environment!.APP_ROLE === 'worker')) {
        expect(worker.environment!.INBOUND_SPAMD_ADDRESS).toBe('spamassassin:783');
        expect(worker.environment!.INBOUND_CLAMD_ADDRESS).toBe('clamav:3310');
      }
      expect(Object.keys(compose.services)).toEqual(expect.arrayContaining(['spamassassin', 'clamav']));
    });
  });
});
