// deploy/ cannot run here (no cluster, no container engine), so it is checked offline: the chart
// renders (test/fixtures/helm-render.ts) into manifests that Kubernetes' own schemas accept
// (kubernetes-models), whose loom arguments `loom serve` accepts; the InferencePool validates
// against the inference extension's CRD schema; the pool, the EPP values and the chart agree on
// labels and ports; the Containerfile's runtime stage has no compiler and copies files a build makes.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Ajv } from 'ajv';
import { Deployment } from 'kubernetes-models/apps/v1';
import { PersistentVolumeClaim, Service } from 'kubernetes-models/v1';
import YAML from 'yaml';
import { serveCommand } from '../src/commands/serve.js';
import { PROJECT_ROOT } from './fixtures/index.js';
import { renderChart } from './fixtures/helm-render.js';

const DEPLOY = join(PROJECT_ROOT, 'deploy');
const CHART = join(DEPLOY, 'helm', 'loom');
type Manifest = { kind: string; metadata: { name: string }; spec: Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any

const VALIDATORS: Record<string, (m: object) => void> = {
  Deployment: (m) => new Deployment(m as never).validate(),
  Service: (m) => new Service(m as never).validate(),
  PersistentVolumeClaim: (m) => new PersistentVolumeClaim(m as never).validate(),
};

function render(overrides: object = {}): Manifest[] {
  const docs = renderChart(CHART, { name: 'loom', namespace: 'inference' }, overrides) as Manifest[];
  for (const doc of docs) {
    const validate = VALIDATORS[doc.kind];
    assert.ok(validate, `a ${doc.kind} has a schema check`);
    validate(doc);
  }
  return docs;
}

const byKind = (docs: Manifest[], kind: string) => docs.filter((d) => d.kind === kind);

/** the loom container's args as `loom serve` parses them: unknown options throw */
function parseServeArgs(args: string[]): Record<string, unknown> {
  const cmd = serveCommand().exitOverride().configureOutput({ writeErr: () => undefined });
  cmd.action(() => undefined);
  cmd.parse(args.map((a) => a.replace('$(POD_IP)', '10.0.0.7')), { from: 'user' });
  return cmd.opts();
}

describe('deploy/helm/loom', () => {
  it('renders, with defaults, a Deployment and a Service that Kubernetes schemas accept', () => {
    const docs = render();
    assert.deepEqual(docs.map((d) => d.kind).sort(), ['Deployment', 'Service']);
    const deploy = byKind(docs, 'Deployment')[0]!;
    const pod = deploy.spec.template;
    const container = pod.spec.containers[0];
    const opts = parseServeArgs(container.args);
    assert.equal(opts.model, 'hf:bartowski/Llama-3.2-1B-Instruct-GGUF:Llama-3.2-1B-Instruct-Q4_K_M.gguf');
    assert.equal(opts.host, '0.0.0.0');
    // graceful termination outlasts loom's own drain
    assert.ok(pod.spec.terminationGracePeriodSeconds > (opts.shutdownTimeout as number), 'grace period > --shutdown-timeout');
    assert.equal(container.livenessProbe.httpGet.path, '/health');
    assert.equal(container.readinessProbe.httpGet.path, '/ready');
    assert.equal(pod.metadata.annotations['prometheus.io/scrape'], 'true');
    assert.equal(pod.metadata.annotations['prometheus.io/port'], String(opts.port));
    assert.deepEqual(deploy.spec.selector.matchLabels, pod.metadata.labels, 'the selector selects its pods');
    assert.equal(byKind(docs, 'Service')[0]!.spec.ports[0].port, opts.port);
    assert.ok(pod.spec.volumes[0].emptyDir, 'no claim by default: a volume per pod');
  });

  it('renders KV events, a shared model claim and extra args when asked', () => {
    const docs = render({ kvEvents: { enabled: true }, persistence: { enabled: true }, extraArgs: ['--max-num-seqs', '64'], model: { offline: true } });
    const claim = byKind(docs, 'PersistentVolumeClaim')[0]!;
    assert.deepEqual(claim.spec.accessModes, ['ReadWriteMany']);
    const container = byKind(docs, 'Deployment')[0]!.spec.template.spec.containers[0];
    const opts = parseServeArgs(container.args);
    assert.equal(opts.kvEventsEndpoint, 'tcp://loom-epp:5557');
    assert.equal(opts.kvEventsTopic, 'kv@10.0.0.7@llama-3.2-1b-instruct');
    assert.equal(opts.maxNumSeqs, 64);
    assert.equal(opts.offline, true);
    assert.equal(byKind(docs, 'Deployment')[0]!.spec.template.spec.volumes[0].persistentVolumeClaim.claimName, claim.metadata.name);
    const withClaim = render({ persistence: { enabled: true, existingClaim: 'models' } });
    assert.equal(byKind(withClaim, 'PersistentVolumeClaim').length, 0, 'an existing claim is used, not made');
  });

  it('the schema check catches a broken manifest (the check is real)', () => {
    assert.throws(() => new Deployment({ metadata: { name: 'x' }, spec: { selector: {}, template: { spec: { containers: [{ name: 'c', ports: [{ containerPort: 'http' }] }] } } } } as never).validate());
  });
});

describe('deploy/inference-extension', () => {
  const crd = YAML.parse(readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'k8s', 'inferencepools.crd.yaml'), 'utf8'));
  const schema = crd.spec.versions.find((v: { name: string }) => v.name === 'v1').schema.openAPIV3Schema;
  const ajv = new Ajv({ strict: false, allErrors: true });
  const validatePool = ajv.compile(schema);
  const docs = YAML.parseAllDocuments(readFileSync(join(DEPLOY, 'inference-extension', 'inferencepool.yaml'), 'utf8')).map((d) => d.toJS() as Manifest);
  const pool = docs.find((d) => d.kind === 'InferencePool')!;
  const chartPod = byKind(render(), 'Deployment')[0]!.spec.template;
  const chartPort = byKind(render(), 'Service')[0]!.spec.ports[0].port;

  it("the InferencePool is valid against the extension's CRD (v1.6.0) and selects the chart's pods", () => {
    assert.ok(validatePool(pool), JSON.stringify(validatePool.errors));
    assert.ok(!validatePool({ ...pool, spec: { ...pool.spec, targetPorts: [{ number: 'http' }] } }), 'the CRD schema catches a bad port');
    for (const [k, v] of Object.entries(pool.spec.selector.matchLabels)) assert.equal(chartPod.metadata.labels[k], v);
    assert.equal(pool.spec.targetPorts[0].number, chartPort);
    const route = docs.find((d) => d.kind === 'HTTPRoute')!;
    assert.deepEqual(route.spec.rules[0].backendRefs[0], { group: 'inference.networking.k8s.io', kind: 'InferencePool', name: pool.metadata.name });
  });

  it("the EPP chart's values describe the same pool, as a vLLM-protocol server", () => {
    const values = YAML.parse(readFileSync(join(DEPLOY, 'inference-extension', 'epp-values.yaml'), 'utf8'));
    assert.deepEqual(values.inferencePool.modelServers.matchLabels, pool.spec.selector.matchLabels);
    assert.deepEqual(values.inferencePool.targetPorts, pool.spec.targetPorts);
    assert.equal(values.inferencePool.modelServerType, 'vllm');
    const plugins = YAML.parse(values.inferenceExtension.pluginsCustomConfig[values.inferenceExtension.pluginsConfigFile]);
    assert.equal(plugins.kind, 'EndpointPickerConfig');
    const prefix = plugins.plugins.find((p: { type: string }) => p.type === 'prefix-cache-scorer');
    assert.equal(prefix.parameters.blockSize, 16, "the scorer's block size is loom's default --block-size");
  });
});

describe('deploy/Containerfile', () => {
  const text = readFileSync(join(DEPLOY, 'Containerfile'), 'utf8');
  const stages = text.split(/^FROM /m).slice(1);

  it('builds in one stage and runs in another without a compiler', () => {
    assert.equal(stages.length, 2);
    assert.match(stages[0]!, /npm ci/);
    assert.match(stages[1]!, /-slim AS runtime/);
    assert.doesNotMatch(stages[1]!, /apt-get|g\+\+|build-essential|make|python3/, 'no toolchain in the runtime image');
    assert.match(stages[1]!, /USER node/);
    assert.match(stages[1]!, /ENTRYPOINT \["node", "\/app\/dist\/src\/cli.js", "serve"\]/);
  });

  it("copies into the runtime only what a build makes, where the loader looks", () => {
    const copies = [...stages[1]!.matchAll(/^COPY --from=build \/src\/(\S+) (\S+)$/gm)].map((m) => m[1]!);
    assert.ok(copies.length >= 4);
    for (const path of copies) assert.ok(existsSync(join(PROJECT_ROOT, path)), `${path} exists after npm ci`);
    assert.ok(copies.includes('build/Release/loom_native.node'));
  });
});
