// tests/integration/lib/server.js: the integration harness. It owns one test
// "stack" at a time per caller: a temp dir (owned by www-data when we run as
// root, because httpd's children switch to that user and SQLite's WAL mode
// creates side files next to the database), a random gateway token, the mock
// gateway (tests/mockgw/mockgw) on a loopback port, a fresh SQLite database
// made and seeded with cli/providerctl, and the real Debian apache2 started in
// the foreground with a generated config that loads mod_provider. Teardown
// stops both servers and turns anything unexpected in httpd's error log or in
// the servers' stderr (error-level lines, crashed children, sanitizer
// reports, a secret written to the log) into a thrown Error, so that the
// test file's after() hook fails.
//
// Environment: PROV_BUILDDIR (build tree, default: the repo root),
// PROV_SRCDIR (source tree, default: the repo root), PROV_HTTPD (default
// /usr/sbin/apache2), PROV_HTTPD_MODULES (default /usr/lib/apache2/modules),
// PROV_SANITIZERS (non-empty: the build used -fsanitize; preload the
// runtimes into apache2; detected from the module's libraries otherwise),
// PROV_KEEP_TMP=1 keeps the temp dir for debugging.
//
// PostgreSQL mode (PROVIDER_TEST_PGSQL=1, or the stack option backend:
// 'pgsql'): the database is a fresh PostgreSQL database per stack in the
// run's throwaway cluster (lib/pg.js), migrated with providerctl --db
// pgsql:..., and httpd uses DBDriver pgsql. stack.sql() and stack.exec()
// read and write the database in either mode (sqlite3 CLI or psql). A stack
// made with the option peer: otherStack shares that stack's database, mock
// gateway and gateway token (two httpd instances on one database).
//
// Test clock: the option clock: EPOCH_SECONDS writes a clock file and sets
// ProviderClockFile; stack.setClock(t) moves the module's "now" without a
// restart (a peer shares its clock file).

import { spawn, spawnSync, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PG_MODE, sharedCluster } from './pg.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(here, '..', '..', '..');
export const SRCDIR = process.env.PROV_SRCDIR || REPO_ROOT;
export const BUILDDIR = process.env.PROV_BUILDDIR || REPO_ROOT;
export const HTTPD = process.env.PROV_HTTPD || '/usr/sbin/apache2';
export const HTTPD_MODULES = process.env.PROV_HTTPD_MODULES || '/usr/lib/apache2/modules';

export const MODULE_SO = path.join(BUILDDIR, 'mod_provider', '.libs', 'mod_provider.so');
export const PROVIDERCTL = path.join(BUILDDIR, 'cli', 'providerctl');
export const MOCKGW = path.join(BUILDDIR, 'tests', 'mockgw', 'mockgw');

/** The database driver of the stacks of this run: 'pgsql' or 'sqlite3'. */
export const BACKEND = PG_MODE ? 'pgsql' : 'sqlite3';
export { PG_MODE };

// PROV_SANITIZERS (make check passes the build's -fsanitize flags) or, when
// run by hand, a module that links the ASan runtime: apache2 then needs the
// runtimes preloaded.
export const SANITIZERS = (process.env.PROV_SANITIZERS || '').trim() !== ''
  || /libasan/.test(spawnSync('ldd', [MODULE_SO], { encoding: 'utf8' }).stdout || '');

const IS_ROOT = typeof process.getuid === 'function' && process.getuid() === 0;
const RUN_USER = 'www-data';

// Every server process we started, so that a crashing test run does not leave
// any behind: killed by process group (apache2 children share the parent's).
const live = new Set();
process.on('exit', () => {
  for (const child of live) {
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
  }
});

/* ------------------------------------------------------------------------ */
/* small utilities                                                           */

/**
 * Directives for a test file that plays dozens of sign-ins or OAuth flows from one
 * address within seconds: per-address limits far above its traffic, still
 * in the path (the limits themselves: ratelimit.test.js).
 */
export const ROOMY_LIMITS = ['register', 'token', 'authorize', 'signin']
  .map((c) => `ProviderAnonRateLimit ${c} 6000 1000`).join('\n');

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves null after ms without keeping the process alive (for races). */
function deadline(ms) {
  return new Promise((resolve) => setTimeout(() => resolve(null), ms).unref());
}

// Ports freePort has handed out in this process: the kernel may give the
// same free port to two binds in a row, and a stack's apache2 and mock
// gateway on one port would answer each other's requests.
const handedOut = new Set();

function anyFreePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Returns a TCP port that was free on 127.0.0.1 a moment ago, never one it returned before. */
export async function freePort() {
  for (let i = 0; i < 100; i++) {
    const port = await anyFreePort();
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('no free port that was not handed out already');
}

/** Resolves true once something accepts connections on 127.0.0.1:port. */
function probe(port) {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => { s.destroy(); resolve(false); });
  });
}

function requireFile(p, what) {
  if (!fs.existsSync(p)) {
    throw new Error(`${what} not found at ${p} (build first: autoreconf -fi && ./configure && make)`);
  }
}

let runIds = null;
function runIds_() {
  if (runIds === null) {
    const uid = Number(execFileSync('id', ['-u', RUN_USER]).toString().trim());
    const gid = Number(execFileSync('id', ['-g', RUN_USER]).toString().trim());
    runIds = { uid, gid };
  }
  return runIds;
}

/** When root, gives p (recursively) to www-data so httpd's children can write. */
function chownRun(p) {
  if (!IS_ROOT) return;
  const { uid, gid } = runIds_();
  const walk = (q) => {
    fs.lchownSync(q, uid, gid);
    if (fs.lstatSync(q).isDirectory()) {
      for (const e of fs.readdirSync(q)) walk(path.join(q, e));
    }
  };
  walk(p);
}

function sanitizerEnv(base) {
  const env = { ...base };
  // PROVIDER_TEST_CORES=DIR: a crashing child leaves a core in DIR (see
  // tests/README.md); ASan otherwise turns core dumps off.
  env.ASAN_OPTIONS = env.ASAN_OPTIONS || ('detect_leaks=0:abort_on_error=0'
    + (process.env.PROVIDER_TEST_CORES ? ':disable_coredump=0' : ''));
  env.UBSAN_OPTIONS = env.UBSAN_OPTIONS || 'print_stacktrace=1';
  return env;
}

// Lines that may never appear in the error log or a server's stderr.
const SANITIZER_RE = /AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|ThreadSanitizer|runtime error:|^SUMMARY: /;
const CRASH_RE = /exit signal|Segmentation fault|core dumped|AH00052|AH00051|AH00050|AH00060|AH00059|AH00143|AH00144|AH02818|stack smashing|double free|free\(\): invalid/;
const SEVERE_RE = /\[[\w.-]*:(emerg|alert|crit|error)\]/;
const PROVIDER_WARN_RE = /\[provider:warn\]/;

/* ------------------------------------------------------------------------ */
/* the mock gateway                                                          */

class MockGateway {
  constructor(stack, port, models) {
    this.stack = stack;
    this.port = port;
    this.models = models;
    this.proc = null;
    this.stderrPath = path.join(stack.dir, `mockgw-${port}.stderr`);
    this.reports = [];  // stderr problems of earlier runs (restarts)
  }

  get url() { return `http://127.0.0.1:${this.port}`; }

  async start(models = this.models) {
    if (this.proc) throw new Error('mockgw already running');
    this.models = models;
    const args = ['--listen', `127.0.0.1:${this.port}`, '--token-file', this.stack.tokenFile];
    if (models) args.push('--models', models.join(','));
    const err = fs.openSync(this.stderrPath, 'a');
    const env = sanitizerEnvForTools(process.env);
    const proc = spawn(MOCKGW, args, { stdio: ['ignore', 'pipe', err], env, detached: true });
    fs.closeSync(err);
    live.add(proc);
    this.proc = proc;
    let out = '';
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`mockgw did not start in 10 s: ${out}`)), 10000);
      proc.stdout.on('data', (d) => {
        out += d.toString();
        if (/mockgw listening on /.test(out)) { clearTimeout(timer); resolve(); }
      });
      proc.once('exit', (code, sig) => {
        clearTimeout(timer);
        reject(new Error(`mockgw exited at start (${code ?? sig}): ${fs.readFileSync(this.stderrPath, 'utf8')}`));
      });
    });
    proc.removeAllListeners('exit');
    proc.exitInfo = null;
    proc.exited = new Promise((resolve) => proc.once('exit', (code, signal) => {
      proc.exitInfo = { code, signal };
      live.delete(proc);
      resolve(proc.exitInfo);
    }));
  }

  /** Stops mockgw (SIGTERM; it exits 0 after a leak check under ASan). */
  async stop() {
    const proc = this.proc;
    if (!proc) return;
    this.proc = null;
    if (!proc.exitInfo) proc.kill('SIGTERM');
    const info = await Promise.race([proc.exited, deadline(10000)]);
    if (!info) {
      try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ }
      this.reports.push('mockgw did not exit within 10 s of SIGTERM');
      await proc.exited;
    } else if (info.code !== 0) {
      this.reports.push(`mockgw exited with ${info.code ?? info.signal}`);
    }
  }

  async restart(models = this.models) {
    await this.stop();
    await this.start(models);
  }

  problems() {
    const out = [...this.reports];
    if (fs.existsSync(this.stderrPath)) {
      for (const line of fs.readFileSync(this.stderrPath, 'utf8').split('\n')) {
        if (SANITIZER_RE.test(line)) out.push(`mockgw stderr: ${line}`);
      }
    }
    return out;
  }

  /** GET /v1/_last: the last POST the gateway received (with the service token). */
  async last() {
    const r = await fetch(`${this.url}/v1/_last`, {
      headers: { authorization: `Bearer ${this.stack.token}` },
    });
    if (r.status !== 200) throw new Error(`mockgw /v1/_last answered ${r.status}`);
    return r.json();
  }
}

function sanitizerEnvForTools(base) {
  // The CLI and mockgw link the sanitizer runtimes themselves; no preload.
  return SANITIZERS ? sanitizerEnv(base) : { ...base };
}

/* ------------------------------------------------------------------------ */
/* the stack                                                                 */

/**
 * Starts a stack. Options:
 *   models:        ids that mockgw lists (GET /v1/models); default DEFAULT_UPSTREAMS
 *   mockgw:        false = do not start mockgw (the gateway URL points at a closed port)
 *   gatewayURL:    override ProviderGatewayURL
 *   directives:    extra config lines (string), appended inside the server config
 *   overrides:     { DirectiveName: value } replacing the defaults below
 *   seed:          async (stack) => {} run after migrate, before httpd starts
 *   backend:       'sqlite3' | 'pgsql' (default: BACKEND, from PROVIDER_TEST_PGSQL)
 *   peer:          a running stack whose database, mock gateway, token and
 *                  clock file this one shares (no migrate; seed still runs)
 *   clock:         epoch seconds: the module reads "now" from a clock file
 *                  (ProviderClockFile) that stack.setClock() rewrites
 *   threads:       httpd's worker threads (ThreadsPerChild = MaxRequestWorkers
 *                  in the one child), default 16; races of N requests want N
 *   startupLog:    a RegExp of [provider:warn] lines httpd's start-up may log
 *                  (e.g. PROV00401 for a database not made yet)
 *   children:      httpd child processes (StartServers = ServerLimit), default
 *                  1; with more, each has `threads` threads and all of them
 *                  share the database (SQLite: several writers of one file)
 *   port:          httpd's port on 127.0.0.1 (default: a free one); a test
 *                  that must know the service's URL before it starts (the
 *                  identity providers' redirect URIs, lib/idp.js) takes one
 *                  from freePort() and gives it here
 */
export async function startStack(opts = {}) {
  requireFile(HTTPD, 'apache2');
  requireFile(MODULE_SO, 'mod_provider.so');
  requireFile(PROVIDERCTL, 'providerctl');
  requireFile(MOCKGW, 'mockgw');
  const stack = new Stack(opts);
  try {
    await stack.setup();
  } catch (e) {
    await stack.stop({ check: false }).catch(() => {});
    throw e;
  }
  return stack;
}

export class Stack {
  constructor(opts) {
    this.opts = opts;
    this.peer = opts.peer || null;
    this.backend = this.peer ? this.peer.backend : (opts.backend || BACKEND);
    if (this.backend !== 'sqlite3' && this.backend !== 'pgsql') {
      throw new Error(`unknown backend ${this.backend}`);
    }
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prov-it-'));
    fs.chmodSync(this.dir, 0o755);
    this.db = this.peer ? this.peer.db : path.join(this.dir, 'db', 'provider.db');
    this.pg = null;          // the PgCluster (pgsql)
    this.pgDatabase = null;  // the database's name (pgsql)
    this.tokenFile = this.peer ? this.peer.tokenFile : path.join(this.dir, 'gateway.token');
    this.token = this.peer ? this.peer.token : `gwtok-${crypto.randomBytes(24).toString('hex')}`;
    this.clockFile = this.peer && this.peer.clockFile ? this.peer.clockFile
      : (opts.clock !== undefined && opts.clock !== null ? path.join(this.dir, 'clock', 'now') : null);
    this.conf = path.join(this.dir, 'httpd.conf');
    this.errorLog = path.join(this.dir, 'logs', 'error.log');
    this.httpdStderr = path.join(this.dir, 'logs', 'httpd.stderr');
    this.secrets = [this.token];   // never in a log line or an answer
    this.allowances = [];          // {from, to, re}: log lines a test expected
    this.httpd = null;
    this.mock = null;
    this.port = 0;
  }

  get baseURL() { return `http://127.0.0.1:${this.port}`; }

  /** providerctl's --db value. */
  get dbSpec() {
    return this.backend === 'pgsql' ? `pgsql:${this.pg.conninfo(this.pgDatabase)}` : `sqlite3:${this.db}`;
  }

  async setup() {
    for (const d of ['db', 'logs', 'run', 'htdocs', 'clock']) fs.mkdirSync(path.join(this.dir, d));
    this.port = this.opts.port || await freePort();
    if (this.peer) {
      this.pg = this.peer.pg;
      this.pgDatabase = this.peer.pgDatabase;
      this.mock = this.peer.mock;      // shared, stopped by the peer
      this.ownsMock = false;
      this.gatewayURL = this.opts.gatewayURL || this.peer.gatewayURL;
      this.secrets.push(...this.peer.secrets);
    } else {
      fs.writeFileSync(this.tokenFile, `${this.token}\n`, { mode: 0o600 });
      const mockPort = await freePort();
      this.mock = new MockGateway(this, mockPort, this.opts.models || DEFAULT_UPSTREAMS);
      this.ownsMock = true;
      if (this.opts.mockgw !== false) await this.mock.start();
      this.gatewayURL = this.opts.gatewayURL || this.mock.url;
      if (this.backend === 'pgsql') {
        this.pg = this.opts.pgCluster || sharedCluster();
        this.pgDatabase = this.pg.createDatabase();
      }
      if (this.clockFile) this.setClock(this.opts.clock);
      if (this.opts.migrate !== false) this.ctl('db', 'migrate');
    }
    if (this.opts.seed) await this.opts.seed(this);
    chownRun(this.dir);
    if (IS_ROOT && !this.peer) fs.chownSync(this.tokenFile, 0, 0);  // read by root at startup only
    this.writeConfig();
    await this.startHttpd();
    if (this.opts.startupLog) this.allowances.push({ from: 0, to: this.logSize(), re: this.opts.startupLog });
  }

  writeConfig() {
    const d = {
      ProviderEngine: 'On',
      ProviderGatewayURL: this.gatewayURL,
      ProviderGatewayTokenFile: this.tokenFile,
      ProviderGatewayTimeout: '5',
      ProviderGatewayConnectTimeout: '2',
      ProviderMaxBodySize: '65536',
      ProviderModelsCacheTTL: '1',
      ProviderDocsRoot: path.join(SRCDIR, 'docs', 'site'),
      ProviderWebRoot: path.join(SRCDIR, 'web'),
      ...(this.opts.overrides || {}),
    };
    const M = HTTPD_MODULES;
    const threads = Number(this.opts.threads || 16);
    const children = Number(this.opts.children || 1);
    const lines = [
      `# generated by tests/integration/lib/server.js`,
      `ServerRoot "${this.dir}"`,
      `ServerName 127.0.0.1`,
      `Listen 127.0.0.1:${this.port}`,
      `PidFile "${this.dir}/run/httpd.pid"`,
      `DefaultRuntimeDir "${this.dir}/run"`,
      `ErrorLog "${this.errorLog}"`,
      `LogLevel warn provider:info`,
      `DocumentRoot "${this.dir}/htdocs"`,
      `LoadModule mpm_event_module ${M}/mod_mpm_event.so`,
      `LoadModule authz_core_module ${M}/mod_authz_core.so`,
      `LoadModule dbd_module ${M}/mod_dbd.so`,
      `LoadModule provider_module ${MODULE_SO}`,
      ...(IS_ROOT ? [`User ${RUN_USER}`, `Group ${RUN_USER}`] : []),
      `StartServers ${children}`,
      `ServerLimit ${children}`,
      `ThreadLimit ${threads}`,
      `ThreadsPerChild ${threads}`,
      `MinSpareThreads 1`,
      `MaxSpareThreads ${children * threads}`,
      `MaxRequestWorkers ${children * threads}`,
      `MaxConnectionsPerChild 0`,
      `Timeout 30`,
      // stopped as Debian's apache2.service stops it (graceful-stop): the
      // ungraceful stop's close_worker_sockets() can touch a connection a
      // worker is freeing, a crash of httpd's event MPM with no module loaded
      `GracefulShutdownTimeout 10`,
      ...(process.env.PROVIDER_TEST_CORES
        ? [`CoreDumpDirectory "${process.env.PROVIDER_TEST_CORES}"`] : []),
      ...(this.backend === 'pgsql' ? [
        `DBDriver pgsql`,
        `DBDParams "${this.pg.conninfo(this.pgDatabase)}"`,
        `DBDMin 1`,
        `DBDKeep 8`,
        `DBDMax 8`,
      ] : [
        // nothing else: the module sets WAL, synchronous and busy handling
        `DBDriver sqlite3`,
        `DBDParams "${this.db}"`,
      ]),
      ...(this.clockFile ? [`ProviderClockFile "${this.clockFile}"`] : []),
      ...Object.entries(d).filter(([, v]) => v !== null && v !== undefined)
        .map(([k, v]) => `${k} ${/\s/.test(v) ? `"${v}"` : v}`),
      this.opts.directives || '',
      '',
    ];
    fs.writeFileSync(this.conf, lines.join('\n'));
  }

  httpdEnv() {
    let env = { ...process.env };
    if (SANITIZERS) {
      const lib = (n) => execFileSync('gcc', [`-print-file-name=${n}`]).toString().trim();
      env = sanitizerEnv(env);
      env.LD_PRELOAD = `${lib('libasan.so')} ${lib('libubsan.so')}`;
    }
    return env;
  }

  async startHttpd() {
    const err = fs.openSync(this.httpdStderr, 'a');
    const proc = spawn(HTTPD, ['-DFOREGROUND', '-f', this.conf],
      { stdio: ['ignore', err, err], env: this.httpdEnv(), detached: true });
    fs.closeSync(err);
    live.add(proc);
    this.httpd = proc;
    proc.exitInfo = null;
    proc.exited = new Promise((resolve) => proc.once('exit', (code, signal) => {
      proc.exitInfo = { code, signal };
      live.delete(proc);
      resolve(proc.exitInfo);
    }));
    const deadline = Date.now() + 30000;
    while (Date.now() < deadline) {
      if (proc.exitInfo) {
        throw new Error(`apache2 exited at start (${proc.exitInfo.code ?? proc.exitInfo.signal}):\n`
          + `${this.readFile(this.httpdStderr)}\n${this.readFile(this.errorLog)}`);
      }
      if (await probe(this.port)) {
        // The parent listens before its child is ready; one real answer
        // (any status) shows the child serves. httpd also binds its port
        // before the post-config checks that may refuse the configuration:
        // a connection taken then and dropped when it exits is not a start.
        const answer = await fetch(`${this.baseURL}/`, { signal: AbortSignal.timeout(20000) })
          .then(async (r) => { await r.arrayBuffer(); return r; }, () => null);
        // (another server on the port, not this apache2: a clear failure)
        if (answer && !/^Apache/.test(answer.headers.get('server') || '')) {
          throw new Error(`something else answers on port ${this.port} (Server: `
            + `${answer.headers.get('server')}), not this apache2`);
        }
        if (answer && !proc.exitInfo) return;
      }
      await sleep(50);
    }
    throw new Error(`apache2 did not listen on ${this.port} within 30 s:\n${this.readFile(this.errorLog)}`);
  }

  async stopHttpd() {
    const proc = this.httpd;
    if (!proc) return [];
    this.httpd = null;
    const problems = [];
    if (proc.exitInfo) {
      problems.push(`apache2 had exited during the test (${proc.exitInfo.code ?? proc.exitInfo.signal})`);
      return problems;
    }
    proc.kill('SIGWINCH');   // apachectl graceful-stop
    const info = await Promise.race([proc.exited, deadline(20000)]);
    if (!info) {
      problems.push('apache2 did not stop within 20 s of graceful-stop');
      try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ }
      await proc.exited;
    } else if (info.code !== 0 && info.signal !== 'SIGTERM') {
      problems.push(`apache2 exited with ${info.code ?? info.signal}`);
    }
    // Children of a stopped parent are gone with it; make sure of that.
    try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ }
    return problems;
  }

  /** Restarts httpd (new config from opts.overrides / opts.directives). */
  async restartHttpd(changes = {}) {
    const problems = await this.stopHttpd();
    if (problems.length) throw new Error(problems.join('\n'));
    Object.assign(this.opts, changes);
    this.writeConfig();
    await this.startHttpd();
  }

  readFile(p) {
    try { return fs.readFileSync(p, 'utf8'); } catch { return ''; }
  }

  logSize() {
    try { return fs.statSync(this.errorLog).size; } catch { return 0; }
  }

  /**
   * Runs fn while accepting error-log lines that match re (e.g. the module
   * logging a gateway failure that the test provoked). Lines written before
   * fn ran, or later than 500 ms after it finished, are still checked.
   */
  async expectingLog(re, fn) {
    const from = this.logSize();
    try {
      return await fn();
    } finally {
      await sleep(500);
      this.allowances.push({ from, to: this.logSize(), re });
    }
  }

  /**
   * Like expectingLog, for a test that kills an httpd child on purpose: the
   * parent's report of that child's death (and lines matching re) are
   * accepted while fn runs. Sanitizer reports never are.
   */
  async expectingCrash(re, fn) {
    const from = this.logSize();
    try {
      return await fn();
    } finally {
      await sleep(500);
      this.allowances.push({ from, to: this.logSize(), re, crash: true });
    }
  }

  allowed(offset, line, { crash = false } = {}) {
    return this.allowances.some((a) => offset >= a.from && offset < a.to && (!crash || a.crash)
      && (a.re.test(line) || (a.crash && /exit signal Killed/.test(line))));
  }

  /** Waits (up to ms) until httpd answers again after its child was killed. */
  async waitServing(ms = 20000) {
    const until = Date.now() + ms;
    for (;;) {
      const r = await this.models().catch(() => null);
      if (r && r.status === 200) return;
      if (Date.now() >= until) throw new Error('httpd does not serve again after the kill');
      await sleep(100);
    }
  }

  /**
   * Waits until no billing lease is held (throws after ms). A child's
   * billing writer writes the rows of requests drawn from a lease once they
   * are answered, and returns the lease once its key has had nothing in
   * flight for 100 ms: from then on the ledger and the books are complete.
   */
  async billingSettled(ms = 5000) {
    const until = Date.now() + ms;
    for (;;) {
      const n = this.leasesHeld();
      if (n === 0) return;
      if (Date.now() >= until) throw new Error(`${n} billing lease(s) still held after ${ms} ms`);
      await sleep(10);
    }
  }

  /** How many billing leases the database holds. */
  leasesHeld() {
    return Number(this.sql('SELECT COUNT(*) AS n FROM billing_leases')[0].n);
  }

  /** billingSettled without leaving the event loop (for synchronous readers). */
  leasesReturnedSync(ms = 5000) {
    const until = Date.now() + ms;
    const cell = new Int32Array(new SharedArrayBuffer(4));
    for (;;) {
      const n = this.leasesHeld();
      if (n === 0) return;
      if (Date.now() >= until) throw new Error(`${n} billing lease(s) still held after ${ms} ms`);
      Atomics.wait(cell, 0, 0, 10);
    }
  }

  /**
   * Waits until the request of res (its x-request-id) is settled in the
   * ledger (throws after ms). A non-streamed answer leaves before its
   * settlement is committed, and a request drawn from a lease has no row
   * until the billing writer writes it; no row while no lease is held: the
   * request was refused before it reserved anything. Returns res.
   */
  async requestSettled(res, ms = 5000) {
    const rid = res && res.headers && res.headers.get('x-request-id');
    if (!rid || !/^[A-Za-z0-9_-]+$/.test(rid)) return res;
    const until = Date.now() + ms;
    for (;;) {
      const [row] = this.sql(`SELECT status,
          (SELECT COUNT(*) FROM billing_leases) AS leases
        FROM (SELECT 1 AS one) AS o LEFT JOIN ledger ON request_id = '${rid}'`);
      if (row.status ? row.status !== 'reserved' : Number(row.leases) === 0) return res;
      if (Date.now() >= until) throw new Error(`request ${rid} not settled after ${ms} ms`);
      await sleep(5);
    }
  }

  /**
   * The ledger row of request rid once it is settled (not 'reserved'), after
   * the billing engine has written everything, checking that the balance of
   * userId moved from before by exactly the row's credits and that the row
   * charged no more than its hold. Throws after ms.
   */
  async settledRow(rid, userId, before, ms = 15000) {
    const until = Date.now() + ms;
    let row = this.ledger(rid);
    while (!row || row.status === 'reserved') {
      if (Date.now() >= until) throw new Error(`not settled: ${JSON.stringify(row)}`);
      await sleep(100);
      row = this.ledger(rid);
    }
    await this.billingSettled();
    const balance = this.balance(userId);
    if (balance !== before - BigInt(row.credits)) {
      throw new Error(`balance ${balance} != ${before} - the ledger's ${row.credits}`);
    }
    if (BigInt(row.credits) > BigInt(row.reserved)) {
      throw new Error(`charged ${row.credits}, more than the hold ${row.reserved}`);
    }
    return row;
  }

  /** Pids of httpd's child processes (the workers; the parent is this.httpd). */
  httpdChildren() {
    if (!this.httpd) return [];
    const r = spawnSync('pgrep', ['-P', String(this.httpd.pid)], { encoding: 'utf8' });
    return (r.stdout || '').split('\n').filter(Boolean).map(Number);
  }

  /** Problems found in httpd's error log and stderr (strings; empty = clean). */
  logProblems() {
    const problems = [];
    const text = this.readFile(this.errorLog);
    let offset = 0;
    for (const line of text.split('\n')) {
      const at = offset;
      offset += Buffer.byteLength(line) + 1;
      if (!line) continue;
      if (SANITIZER_RE.test(line) || (CRASH_RE.test(line) && !this.allowed(at, line, { crash: true }))) {
        problems.push(`error log: ${line}`);
      } else if (CRASH_RE.test(line)) {
        continue;
      } else if ((SEVERE_RE.test(line) || PROVIDER_WARN_RE.test(line)) && !this.allowed(at, line)) {
        problems.push(`error log: ${line}`);
      }
    }
    for (const s of this.secrets) {
      if (s && text.includes(s)) problems.push(`error log contains a secret (${s.slice(0, 12)}...)`);
    }
    for (const line of this.readFile(this.httpdStderr).split('\n')) {
      if (SANITIZER_RE.test(line) || CRASH_RE.test(line) || SEVERE_RE.test(line)) {
        problems.push(`apache2 stderr: ${line}`);
      }
    }
    return problems;
  }

  /** Stops everything; throws when the logs show a problem (unless check is false). */
  async stop({ check = true } = {}) {
    const problems = [];
    problems.push(...await this.stopHttpd());
    if (this.mock && this.ownsMock !== false) {
      await this.mock.stop();
      problems.push(...this.mock.problems());
    }
    problems.push(...this.logProblems());
    if (process.env.PROV_KEEP_TMP !== '1' && (problems.length === 0 || !check)) {
      fs.rmSync(this.dir, { recursive: true, force: true });
    }
    if (check && problems.length) {
      throw new Error(`unexpected server problems (kept ${this.dir}):\n  ${problems.join('\n  ')}`);
    }
  }

  /* ---------------------------------------------------------------------- */
  /* providerctl and the database                                            */

  /** Runs providerctl; returns stdout; throws with stderr on a non-zero exit. */
  ctl(...args) {
    const r = spawnSync(PROVIDERCTL, ['--db', this.dbSpec, ...args], {
      env: sanitizerEnvForTools(process.env), encoding: 'utf8', timeout: 30000,
    });
    if (this.backend === 'sqlite3') chownRun(path.dirname(this.db));
    if (r.error) throw r.error;
    if (r.status !== 0) {
      throw new Error(`providerctl ${args.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr}`);
    }
    if (SANITIZER_RE.test(r.stderr)) throw new Error(`providerctl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  }

  /** Runs providerctl with --json and parses its output. */
  ctlJSON(...args) {
    const out = this.ctl(...args, '--json');
    try {
      return JSON.parse(out);
    } catch {
      throw new Error(`providerctl ${args.join(' ')} --json printed no JSON: ${out}`);
    }
  }

  /**
   * Rows of one query (array of objects keyed by column name; integers as
   * numbers, text as strings) through the sqlite3 CLI or psql. Write SQL
   * that both accept (CAST(x AS TEXT) for big sums). A statement that is not
   * a SELECT/WITH/VALUES query is run as is and gives [] (see exec()).
   */
  sql(query) {
    if (this.backend === 'pgsql') {
      const q = String(query).trim().replace(/;\s*$/, '');
      if (!/^(select|with|values)\b/i.test(q)) {
        this.pg.psql(this.pgDatabase, q);
        return [];
      }
      const out = this.pg.psql(this.pgDatabase,
        `SELECT COALESCE(json_agg(prov_q), '[]'::json) FROM (${q}) AS prov_q`).trim();
      return out ? JSON.parse(out) : [];
    }
    const r = spawnSync('sqlite3', ['-json', '-cmd', '.timeout 5000', this.db, query],
      { encoding: 'utf8', timeout: 30000 });
    chownRun(path.dirname(this.db));
    if (r.status !== 0) throw new Error(`sqlite3 "${query}": ${r.stderr}`);
    return r.stdout.trim() ? JSON.parse(r.stdout) : [];
  }

  /** Runs statements that return nothing (one transaction), in either mode. */
  exec(statements) {
    const text = `BEGIN;\n${String(statements).trim().replace(/;?\s*$/, ';')}\nCOMMIT;`;
    if (this.backend === 'pgsql') {
      this.pg.psql(this.pgDatabase, text);
      return;
    }
    const r = spawnSync('sqlite3', ['-bail', '-cmd', '.timeout 5000', this.db, text],
      { encoding: 'utf8', timeout: 30000 });
    chownRun(path.dirname(this.db));
    if (r.status !== 0) throw new Error(`sqlite3 "${text}": ${r.stderr}`);
  }

  /* ---------------------------------------------------------------------- */
  /* the test clock                                                          */

  /** Sets the module's "now" (epoch seconds) through the clock file. */
  setClock(t) {
    if (!this.clockFile) throw new Error('this stack has no clock (startStack({clock}))');
    const secs = Math.floor(Number(t));
    if (!Number.isFinite(secs)) throw new Error(`bad clock ${t}`);
    const tmp = `${this.clockFile}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, `${secs}\n`, { mode: 0o644 });
    fs.renameSync(tmp, this.clockFile);   // atomic: never a half-written file
    this.clock = secs;
    if (this.peer) this.peer.clock = secs;
    return secs;
  }

  /* ---------------------------------------------------------------------- */
  /* seeding helpers (through providerctl, as an operator would)             */

  /** Adds a user with an optional balance (credits); returns its id. */
  addUser(email, credits = null) {
    this.ctl('user', 'add', email);
    if (credits !== null) this.ctl('balance', 'add', email, String(credits), '--reason', 'test seed');
    return this.userId(email);
  }

  userId(email) {
    const rows = this.sql(`SELECT id FROM users WHERE email = '${email.replace(/'/g, "''")}'`);
    if (rows.length !== 1) throw new Error(`no user ${email}`);
    return rows[0].id;
  }

  /**
   * A user's balance (micro-credits). A lease counts in it like a hold until
   * its process returns it, keep_idle (100 ms) after its key's last request:
   * requests one after another draw from one. So the balance is read once no
   * lease is held (waiting up to ms; throws after), unless held is true: then
   * at once, what holds and leases take out included.
   */
  balance(userId, { held = false, ms = 5000 } = {}) {
    if (!held) this.leasesReturnedSync(ms);
    const rows = this.sql(`SELECT CAST(balance AS TEXT) AS b FROM users WHERE id = ${Number(userId)}`);
    if (rows.length !== 1) throw new Error(`no user ${userId}`);
    return BigInt(rows[0].b);
  }

  /** Creates a key; returns {id, secret}. budget: credits or null. */
  createKey(user, { name = null, budget = null } = {}) {
    const args = ['key', 'create', String(user)];
    if (name) args.push('--name', name);
    if (budget !== null) args.push('--budget', String(budget));
    const k = this.ctlJSON(...args);
    if (!k || typeof k.secret !== 'string' || k.id === undefined) {
      throw new Error(`key create printed ${JSON.stringify(k)}`);
    }
    this.secrets.push(k.secret);
    return { id: k.id, secret: k.secret };
  }

  /**
   * Adds a catalog model. rates: {input, output, cache, reasoning} in credits
   * per 1M tokens (strings or numbers; missing = not configured).
   */
  addModel(publicId, upstream, { name = null, rates = null, family = null } = {}) {
    const args = ['model', 'add', publicId, '--upstream', upstream];
    if (name) args.push('--name', name);
    if (family) args.push('--family', family);
    this.ctl(...args);
    if (rates) {
      const p = ['model', 'price', publicId];
      for (const k of ['input', 'output', 'cache', 'reasoning']) {
        if (rates[k] !== undefined && rates[k] !== null) p.push(`--${k}`, String(rates[k]));
      }
      this.ctl(...p);
    }
  }

  /** The ledger row of a request id (or undefined). */
  ledger(requestId) {
    const rows = this.sql(`SELECT request_id, user_id, key_id, model_id, transport,
        input_tokens, output_tokens, cache_tokens, reasoning_tokens,
        CAST(reserved AS TEXT) AS reserved, CAST(credits AS TEXT) AS credits, status
        FROM ledger WHERE request_id = '${String(requestId).replace(/'/g, "''")}'`);
    return rows[0];
  }

  /* ---------------------------------------------------------------------- */
  /* HTTP                                                                    */

  /**
   * One request to httpd. body: an object (sent as JSON), a string or Buffer
   * (sent as is) or undefined. Returns {status, headers, text, json}.
   */
  async request(method, urlPath, { key = null, body, headers = {}, timeout = 30000 } = {}) {
    const h = { ...headers };
    if (key) h.authorization = `Bearer ${key}`;
    let payload = body;
    if (body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body)
        && !(body instanceof ReadableStream)) {
      payload = JSON.stringify(body);
    }
    if (payload !== undefined && !Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) {
      h['content-type'] = 'application/json';
    }
    const init = { method, headers: h, body: payload, signal: AbortSignal.timeout(timeout) };
    if (payload instanceof ReadableStream) init.duplex = 'half';
    const r = await fetch(`${this.baseURL}${urlPath}`, init);
    const text = await r.text();
    let json;
    try { json = JSON.parse(text); } catch { json = undefined; }
    return { status: r.status, headers: r.headers, text, json };
  }

  chat(key, body, opts = {}) {
    return this.request('POST', '/v1/chat/completions', { key, body, ...opts });
  }

  models(opts = {}) {
    return this.request('GET', '/v1/models', opts);
  }
}

/* ------------------------------------------------------------------------ */
/* the default catalog used by most test files                              */

// Upstream ids that the mock gateway lists by default.
export const DEFAULT_UPSTREAMS = [
  'mock-main', 'mock-null', 'mock-disabled', 'mock-unpriced', 'mock-gateway-only',
  'mock-fault-500', 'mock-fault-malformed', 'mock-fault-delay-8000', 'mock-fault-cut',
  'mock-fault-reset', 'mock-fault-overflow', 'mock-fault-trickle-300', 'mock-fault-delay-1500',
];

// Public models: rates in credits per 1M tokens (null = not configured).
export const CATALOG = {
  'prov-main': { upstream: 'mock-main', name: 'Main Model',
    rates: { input: '1.234567', output: '2.345678', cache: '0.123457', reasoning: '3.456789' } },
  'prov-nullrates': { upstream: 'mock-null', name: 'Null Rates',
    rates: { input: '2.5', output: '7.000001', cache: null, reasoning: null } },
  'prov-disabled': { upstream: 'mock-disabled', name: 'Disabled',
    rates: { input: '1', output: '1' }, disabled: true },
  'prov-unlisted': { upstream: 'mock-not-on-gateway', name: 'Unlisted',
    rates: { input: '1', output: '1' } },
  'prov-unpriced': { upstream: 'mock-unpriced', name: 'Unpriced', rates: null },
  'prov-fault-500': { upstream: 'mock-fault-500', name: 'Fault 500',
    rates: { input: '1', output: '1' } },
  'prov-fault-malformed': { upstream: 'mock-fault-malformed', name: 'Fault Malformed',
    rates: { input: '1', output: '1' } },
  'prov-slow': { upstream: 'mock-fault-delay-8000', name: 'Slow',
    rates: { input: '1', output: '1' } },
  'prov-fault-cut': { upstream: 'mock-fault-cut', name: 'Fault Cut',
    rates: { input: '1', output: '1' } },
  'prov-fault-reset': { upstream: 'mock-fault-reset', name: 'Fault Reset',
    rates: { input: '1', output: '1' } },
  'prov-fault-overflow': { upstream: 'mock-fault-overflow', name: 'Fault Overflow',
    rates: { input: '1', output: '1' } },
  'prov-trickle': { upstream: 'mock-fault-trickle-300', name: 'Trickle',
    rates: { input: '3', output: '4' } },
  'prov-delay': { upstream: 'mock-fault-delay-1500', name: 'Delay',
    rates: { input: '3', output: '4' } },
};

/** Seeds CATALOG through providerctl (the disabled model ends up disabled). */
export function seedCatalog(stack) {
  for (const [id, m] of Object.entries(CATALOG)) {
    stack.addModel(id, m.upstream, { name: m.name, rates: m.rates });
    if (m.disabled) stack.ctl('model', 'disable', id);
  }
}
