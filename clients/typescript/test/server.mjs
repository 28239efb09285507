// A real `memchentic serve` for the tests: a fresh store in a temp folder, the hash
// embedder, an admin key and identity keys, a free port; stopped by `stop()`.
//
// The CLI is $MEMCHENTIC_BIN, else the repository's .venv/bin/memchentic, else
// `memchentic` on PATH.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

export function memchenticBin() {
  if (process.env.MEMCHENTIC_BIN) return process.env.MEMCHENTIC_BIN;
  const venv = resolve(here, "../../../.venv/bin/memchentic");
  return existsSync(venv) ? venv : "memchentic";
}

const ENV = { ...process.env, HF_HUB_OFFLINE: "1", SERVER_EVENTS_POLL_SECONDS: "0.1" };

function cli(args) {
  return execFileSync(memchenticBin(), args, { env: ENV, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** A free TCP port on 127.0.0.1 (the OS picks it; the server binds it right after). */
export function freePort() {
  return new Promise((ok, fail) => {
    const probe = net.createServer();
    probe.unref();
    probe.on("error", fail);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => ok(port));
    });
  });
}

async function healthy(url, process, deadlineMs) {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    if (process.exitCode !== null) throw new Error(`memchentic serve exited with ${process.exitCode}`);
    try {
      const answer = await fetch(`${url}/healthz`);
      if (answer.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`memchentic serve did not answer /healthz within ${deadlineMs} ms`);
}

/**
 * Start a server. `identities` get a key each (`keys.alice`...), `keys.admin` is an
 * admin key. `restart()` stops the process and starts another on the same store
 * and port (the keys stay valid: the store keeps them); it kills the process
 * (SIGKILL), as a crash or a dropped network would end its open connections.
 */
export async function startServer({ identities = ["alice", "bob"] } = {}) {
  const folder = mkdtempSync(join(tmpdir(), "memchentic-ts-"));
  const store = join(folder, "memory.db");
  const common = ["--store", store, "--embedder", "hash"];
  const keys = { admin: JSON.parse(cli(["keys", "create", "--admin", "--json", ...common])).key };
  for (const name of identities) {
    keys[name] = JSON.parse(cli(["keys", "create", "--identity", name, "--json", ...common])).key;
  }
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let child;
  let log = "";

  async function start() {
    const args = ["serve", "--port", String(port), "--no-mcp", "--no-console", "--log-level", "warning", ...common];
    child = spawn(memchenticBin(), args, { env: ENV, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (d) => (log += d));
    child.stderr.on("data", (d) => (log += d));
    try {
      await healthy(url, child, 60_000);
    } catch (error) {
      error.message += `\n${log}`;
      throw error;
    }
  }

  async function halt(signal = "SIGTERM") {
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill(signal);
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }

  await start();
  return {
    url,
    keys,
    log: () => log,
    async restart() {
      await halt("SIGKILL");
      await start();
    },
    async stop() {
      await halt();
      rmSync(folder, { recursive: true, force: true });
    },
  };
}
