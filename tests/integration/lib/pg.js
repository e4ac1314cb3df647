// tests/integration/lib/pg.js: the throwaway PostgreSQL cluster of the
// integration suite's PostgreSQL mode (PROVIDER_TEST_PGSQL=1). It owns the
// cluster's life: initdb (trust auth, superuser "postgres", no fsync) in a
// temp dir, pg_ctl start on a free loopback port with the unix socket in that
// same dir (run as the `postgres` user when we are root, the dir chown'd to
// it; as ourselves otherwise), one fresh database per test stack, queries
// through psql, and pg_ctl stop + removal of the dir, checked with pgrep so
// that no postgres process outlives a run.
//
// One cluster per test run: tests/integration/run.sh starts it with
// `node lib/pg.js start DIR` (which prints shell assignments of PROV_PG_HOST
// and PROV_PG_PORT), exports them for every test file and stops it with
// `node lib/pg.js stop DIR`. A test file run by hand (node --test FILE) finds
// no PROV_PG_HOST and starts its own cluster, stopped when its process exits.
//
// Environment: PROVIDER_TEST_PGSQL=1 (the mode), PROV_PG_BIN (default
// /usr/lib/postgresql/15/bin), PROV_PG_HOST/PROV_PG_PORT (a running cluster
// to use; its superuser is "postgres" with trust auth).

import { spawnSync, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const PG_MODE = process.env.PROVIDER_TEST_PGSQL === '1';
export const PG_BIN = process.env.PROV_PG_BIN || '/usr/lib/postgresql/15/bin';
const IS_ROOT = typeof process.getuid === 'function' && process.getuid() === 0;
const PG_USER = 'postgres';

function freePortSync() {
  // A synchronous free-port pick: a tiny child node binds port 0 and prints it.
  const out = execFileSync(process.execPath, ['-e', `
    const s = require('net').createServer();
    s.listen(0, '127.0.0.1', () => { process.stdout.write(String(s.address().port)); s.close(); });
  `]).toString().trim();
  const port = Number(out);
  if (!Number.isInteger(port) || port <= 0) throw new Error(`no free port: ${out}`);
  return port;
}

function pgIds() {
  const uid = Number(execFileSync('id', ['-u', PG_USER]).toString().trim());
  const gid = Number(execFileSync('id', ['-g', PG_USER]).toString().trim());
  return { uid, gid };
}

/** Runs a PostgreSQL server-side program (as postgres when root). */
function runServerTool(dir, tool, args, { timeout = 60000 } = {}) {
  const opts = { encoding: 'utf8', timeout, cwd: dir, env: { ...process.env, HOME: dir, LC_ALL: 'C' } };
  if (IS_ROOT) Object.assign(opts, pgIds());
  const r = spawnSync(path.join(PG_BIN, tool), args, opts);
  if (r.error) throw new Error(`${tool}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${tool} ${args.join(' ')} exited ${r.status ?? r.signal}:\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** Pids of processes whose command line names this data dir (the postmaster). */
export function postgresPids(dataDir) {
  const r = spawnSync('pgrep', ['-f', '--', `-D ${dataDir}`], { encoding: 'utf8' });
  return (r.stdout || '').split('\n').filter(Boolean).map(Number);
}

export class PgCluster {
  /** A cluster at host (socket dir) and port; owned = we started it and stop it. */
  constructor({ dir = null, host, port, owned }) {
    this.dir = dir;
    this.host = host;
    this.port = port;
    this.owned = owned;
    this.dataDir = dir ? path.join(dir, 'data') : null;
    this.pids = [];
  }

  /** initdb + pg_ctl start in dir (made when missing); returns the cluster. */
  static start(dir = null) {
    for (const t of ['initdb', 'pg_ctl', 'postgres']) {
      if (!fs.existsSync(path.join(PG_BIN, t))) {
        throw new Error(`${PG_BIN}/${t} not found: install Debian's postgresql package (sh scripts/install-deps.sh)`);
      }
    }
    const d = dir || fs.mkdtempSync(path.join(os.tmpdir(), 'prov-pg-'));
    fs.mkdirSync(d, { recursive: true });
    fs.chmodSync(d, 0o755);   // httpd's children (www-data) reach the socket in it
    if (IS_ROOT) {
      const { uid, gid } = pgIds();
      fs.chownSync(d, uid, gid);
    }
    const c = new PgCluster({ dir: d, host: d, port: freePortSync(), owned: true });
    runServerTool(d, 'initdb', ['-D', c.dataDir, '--auth=trust', '-U', PG_USER, '-E', 'UTF8',
      '--locale=C', '--no-sync', '--no-instructions']);
    // Throwaway data: no durability, small memory, enough connections for
    // two httpd instances with DBDMax 8 plus the CLI.
    fs.appendFileSync(path.join(c.dataDir, 'postgresql.conf'), [
      '', '# prov integration tests',
      `listen_addresses = '127.0.0.1'`, `port = ${c.port}`, `unix_socket_directories = '${d}'`,
      'fsync = off', 'synchronous_commit = off', 'full_page_writes = off',
      'max_connections = 200', 'shared_buffers = 32MB', 'log_min_messages = warning',
      'logging_collector = off', 'autovacuum = off', '',
    ].join('\n'));
    try {
      runServerTool(d, 'pg_ctl', ['-D', c.dataDir, '-l', path.join(d, 'postgres.log'), '-w', '-t', '60', 'start']);
    } catch (e) {
      let log = '';
      try { log = fs.readFileSync(path.join(d, 'postgres.log'), 'utf8'); } catch { /* none */ }
      fs.rmSync(d, { recursive: true, force: true });
      throw new Error(`${e.message}\n${log}`);
    }
    c.pids = postgresPids(c.dataDir);
    return c;
  }

  /** Stops the cluster (fast: the data is thrown away) and removes its dir. */
  stop() {
    if (!this.owned || !this.dir) return [];
    const problems = [];
    if (fs.existsSync(path.join(this.dataDir, 'postmaster.pid'))) {
      try {
        runServerTool(this.dir, 'pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', '-t', '30', 'stop']);
      } catch (e) {
        problems.push(`pg_ctl stop: ${e.message}`);
      }
    }
    const left = postgresPids(this.dataDir);
    if (left.length) {
      problems.push(`postgres processes left after stop: ${left.join(' ')}`);
      for (const pid of left) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
    this.owned = false;
    return problems;
  }

  /** libpq connection string of a database. */
  conninfo(dbname) {
    return `host=${this.host} port=${this.port} user=${PG_USER} dbname=${dbname}`;
  }

  psqlArgs(dbname) {
    return ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-h', this.host, '-p', String(this.port),
      '-U', PG_USER, '-d', dbname];
  }

  /** Runs SQL through psql; returns stdout (-At, fields split by '|'). */
  psql(dbname, sql) {
    const r = spawnSync('psql', [...this.psqlArgs(dbname), '-At', '-F', '|', '-c', sql],
      { encoding: 'utf8', timeout: 30000, env: { ...process.env, PGCONNECT_TIMEOUT: '10' } });
    if (r.error) throw new Error(`psql: ${r.error.message}`);
    if (r.status !== 0) throw new Error(`psql "${sql}": ${r.stderr}`);
    return r.stdout;
  }

  /** Creates a fresh, empty database; returns its name. */
  createDatabase(prefix = 'prov') {
    const name = `${prefix}_${crypto.randomBytes(6).toString('hex')}`;
    this.psql('postgres', `CREATE DATABASE ${name}`);
    return name;
  }
}

/* ------------------------------------------------------------------------ */
/* the cluster of this process                                               */

let shared = null;

function stopShared() {
  if (shared && shared.owned) {
    const problems = shared.stop();
    if (problems.length) process.stderr.write(`tests/integration/lib/pg.js: ${problems.join('\n')}\n`);
  }
}

/**
 * The cluster the stacks of this process use: the run's (PROV_PG_HOST and
 * PROV_PG_PORT) or one started now and stopped when the process exits.
 */
export function sharedCluster() {
  if (shared) return shared;
  if (process.env.PROV_PG_HOST && process.env.PROV_PG_PORT) {
    shared = new PgCluster({ host: process.env.PROV_PG_HOST, port: Number(process.env.PROV_PG_PORT), owned: false });
    return shared;
  }
  shared = PgCluster.start();
  process.on('exit', stopShared);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.once(sig, () => process.exit(128 + os.constants.signals[sig]));
  }
  return shared;
}

/* ------------------------------------------------------------------------ */
/* command line: node lib/pg.js start DIR | stop DIR (for run.sh)            */

const self = fileURLToPath(import.meta.url);
if (process.argv[1] && path.resolve(process.argv[1]) === self) {
  const [cmd, dir] = process.argv.slice(2);
  if (cmd === 'start' && dir) {
    const c = PgCluster.start(dir);
    process.stdout.write(`PROV_PG_HOST='${c.host}'\nPROV_PG_PORT=${c.port}\n`);
  } else if (cmd === 'stop' && dir) {
    const c = new PgCluster({ dir, host: dir, port: 0, owned: true });
    const problems = c.stop();
    if (problems.length) {
      process.stderr.write(`${problems.join('\n')}\n`);
      process.exit(1);
    }
  } else {
    process.stderr.write('usage: node lib/pg.js start DIR | stop DIR\n');
    process.exit(2);
  }
}
