// Interop test against the published Paperclip host, npm @paperclipai/server 2026.916.1.
//
// Loads the host's dist/services/plugin-worker-manager.js and dist/services/plugin-loader.js
// UNMODIFIED from node_modules (only dist/middleware/logger.js is replaced by stubs/logger.mjs,
// through a module.register() resolve hook), installs a plugin the way the host does, and drives
// its worker through the host's worker manager:
//
//   install  -> discover/load the manifest with the host's plugin loader (real validator)
//   start    -> manager.startWorker(): fork(entrypoint) + initialize (supportedMethods printed)
//   calls    -> environmentAcquireLease, environmentExecute (sh -c 'echo hi'),
//               [--sync: environmentSyncIn of a small tree below the lease's remoteCwd, a
//               check execute, environmentSyncOut back, byte comparison],
//               environmentReleaseLease, [--sync: environmentDestroyLease of that lease],
//               environmentAcquireLease, environmentDestroyLease
//               [--engine-socket <path>: afterwards the Docker-API engine on that socket holds
//               no container labelled with the run's company]
//   stop     -> manager.stopWorker(): the shutdown request; the worker must exit on it (no
//               SIGTERM escalation), and every process of the plugin must be gone
//   crash    -> (packaged plugins) SIGKILL of the shim: the native worker must not outlive it
//
// Usage:
//   node run-interop.mjs packaged <plugin folder> [--config <json>] [--sync] [--engine-socket <path>]
//       A folder written by `sandbox-conformance package`. It is packed with `npm pack` and
//       installed with the host's own command (`npm install <tgz> --prefix <dir> --save
//       --ignore-scripts`), then found by the host's npm discovery.
//   node run-interop.mjs official-fixture <fixture folder> [--config <json>]
//       conformance/tests/fixtures/official-sdk-worker (written with @paperclipai/plugin-sdk).
//       It is copied into a plugin folder (manifest.json -> dist/manifest.js, `npm ci`) and
//       loaded as a local-path install. This proves the harness itself.
//
// Exit status 0 when every assertion holds; 1 with a message otherwise.
//
// Install: `npm install --no-save` in this folder (the Rust tests do it when node_modules is
// missing). Versions are pinned by npm-shrinkwrap.json, which npm uses as the lockfile. It is not
// a package-lock.json because `npm ci` refuses this tree: @paperclipai/server 2026.916.1 depends
// on platform packages that are not published (@cursor/sdk-darwin-arm64 and others,
// @heif2jpeg/heif2jpeg-darwin-x64 and others), so no lockfile can list them and `npm ci`
// reports them "Missing from lock file". `npm install` skips them as the optional packages
// they are. .npmrc sets ignore-scripts, as the host does for plugins.
import { register } from "node:module";
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

register("./stubs/hooks.mjs", import.meta.url);

const HERE = path.dirname(fileURLToPath(import.meta.url));
const HOST_DIST = path.join(HERE, "node_modules/@paperclipai/server/dist");
const HOST_VERSION = JSON.parse(
  fs.readFileSync(path.join(HERE, "node_modules/@paperclipai/server/package.json"), "utf8"),
).version;

const [mode, source, ...rest] = process.argv.slice(2);
let config = {};
let withSync = false;
let engineSocket = null;
for (let i = 0; i < rest.length; i++) {
  if (rest[i] === "--config") config = JSON.parse(rest[++i]);
  else if (rest[i] === "--sync") withSync = true;
  else if (rest[i] === "--engine-socket") engineSocket = rest[++i];
  else fail(`unknown argument ${rest[i]}`);
}
if (!["packaged", "official-fixture"].includes(mode) || !source) {
  fail("usage: node run-interop.mjs packaged|official-fixture <folder> [--config <json>]");
}

function fail(message) {
  console.error(`interop FAILED: ${message}`);
  process.exit(1);
}
function check(condition, message) {
  if (!condition) fail(message);
}
function step(message) {
  console.log(`-- ${message}`);
}
function npm(args, cwd) {
  return execFileSync("npm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 120_000 });
}
// GET on a Docker-API engine's unix socket; resolves to the parsed JSON body.
function engineGet(socketPath, urlPath) {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path: urlPath }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (body += c));
      res.on("end", () => (res.statusCode === 200 ? resolve(JSON.parse(body)) : reject(new Error(`engine answered ${res.statusCode}`))));
    });
    req.on("error", reject);
  });
}
function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
function childrenOf(pid) {
  const out = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) === pid) out.push(Number(entry));
    } catch {
      // The process ended while scanning.
    }
  }
  return out;
}
function gone(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
}
async function waitGone(pids, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (pids.every(gone)) return true;
    await sleep(20);
  }
  return pids.every(gone);
}

const watchdog = setTimeout(() => fail("the interop run took longer than 180 s"), 180_000);
watchdog.unref();

const work = fs.mkdtempSync(path.join(os.tmpdir(), "paperclip-real-host-"));
const localPluginDir = path.join(work, "plugins");
fs.mkdirSync(localPluginDir, { recursive: true });
// The host's working directory is neither the plugin folder nor this folder.
const hostCwd = path.join(work, "host-cwd");
fs.mkdirSync(hostCwd);

try {
  await main();
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}

async function main() {
  const { pluginLoader, buildPluginWorkerEnv } = await import(
    pathToFileURL(path.join(HOST_DIST, "services/plugin-loader.js")).href
  );
  const { createPluginWorkerManager } = await import(
    pathToFileURL(path.join(HOST_DIST, "services/plugin-worker-manager.js")).href
  );
  const hostLog = globalThis.__paperclipHostLog;
  check(Array.isArray(hostLog), "the logger stub was not loaded");
  step(`host: @paperclipai/server ${HOST_VERSION} (plugin-worker-manager.js, plugin-loader.js unmodified; logger stubbed)`);

  // No database: the loader methods used here (discoverFromNpm, loadManifest) never touch it.
  const loader = pluginLoader(null, { localPluginDir, enableLocalFilesystem: false });

  // --- install --------------------------------------------------------------------------
  let packageRoot;
  let packageName;
  let packagePath; // the host records a path only for local-path installs
  let manifest;
  if (mode === "packaged") {
    const pkg = JSON.parse(fs.readFileSync(path.join(source, "package.json"), "utf8"));
    packageName = pkg.name;
    const tgzName = npm(["pack", path.resolve(source), "--pack-destination", work, "--silent"], work).trim().split("\n").pop();
    const tgz = path.join(work, tgzName);
    step(`npm pack -> ${tgzName}`);
    // The host's install command (plugin-loader.js installPlugin).
    npm(["install", tgz, "--prefix", localPluginDir, "--save", "--ignore-scripts"], work);
    packageRoot = path.join(localPluginDir, "node_modules", ...packageName.split("/"));
    packagePath = null;
    const bins = fs.readdirSync(path.join(packageRoot, "bin"));
    for (const b of bins) {
      const mode = fs.statSync(path.join(packageRoot, "bin", b)).mode & 0o777;
      step(`installed bin/${b} mode ${mode.toString(8)}`);
    }
    const { discovered, errors } = await loader.discoverFromNpm([path.join(localPluginDir, "node_modules")]);
    check(errors.length === 0, `host discovery errors: ${JSON.stringify(errors)}`);
    const found = discovered.find((d) => d.packageName === packageName);
    check(found, `the host's npm discovery did not find ${packageName} (found ${discovered.map((d) => d.packageName)})`);
    check(found.manifest, `the host found ${packageName} but no manifest`);
    manifest = found.manifest;
    step(`host discovered ${packageName}@${found.version} and validated manifest ${manifest.id}`);
  } else {
    packageRoot = path.join(localPluginDir, "official-sdk-fixture");
    fs.mkdirSync(path.join(packageRoot, "dist"), { recursive: true });
    for (const f of ["worker.mjs", "worker-parts.cjs", "package-lock.json"]) {
      fs.copyFileSync(path.join(source, f), path.join(packageRoot, f));
    }
    const pkg = JSON.parse(fs.readFileSync(path.join(source, "package.json"), "utf8"));
    const fixtureManifest = JSON.parse(fs.readFileSync(path.join(source, "manifest.json"), "utf8"));
    pkg.paperclipPlugin = { manifest: "./dist/manifest.js", worker: fixtureManifest.entrypoints.worker };
    fs.writeFileSync(path.join(packageRoot, "package.json"), JSON.stringify(pkg, null, 2));
    fs.writeFileSync(
      path.join(packageRoot, "dist/manifest.js"),
      `export default ${JSON.stringify(fixtureManifest, null, 2)};\n`,
    );
    npm(["ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"], packageRoot);
    packageName = pkg.name;
    packagePath = packageRoot;
    manifest = await loader.loadManifest(packageRoot);
    check(manifest, "the host's loader found no manifest in the fixture plugin folder");
    step(`host loaded and validated manifest ${manifest.id} (local-path install)`);
  }

  // Entry point resolution as the host's resolveWorkerEntrypoint (not exported) does it:
  // relative to the package folder, which it must not leave.
  const entrypointPath = path.resolve(packageRoot, manifest.entrypoints.worker);
  check(entrypointPath.startsWith(path.resolve(packageRoot)) && fs.existsSync(entrypointPath),
    `worker entrypoint ${manifest.entrypoints.worker} does not resolve inside ${packageRoot}`);
  const driver = (manifest.environmentDrivers ?? []).find((d) => d.kind === "sandbox_provider");
  check(driver, "the manifest declares no sandbox_provider driver");

  const instanceInfo = { instanceId: "interop", hostVersion: HOST_VERSION, deploymentMode: "local_trusted", deploymentExposure: "private" };
  const env = buildPluginWorkerEnv({ manifest, packageName, packagePath, instanceInfo });
  check(!("HOME" in env), "the host's worker env unexpectedly has HOME");

  process.chdir(hostCwd);
  const manager = createPluginWorkerManager();
  const pluginId = randomUUID();
  const startOptions = {
    entrypointPath,
    manifest,
    config: {},
    instanceInfo,
    apiVersion: manifest.apiVersion,
    databaseNamespace: null,
    hostHandlers: {},
    autoRestart: false,
    env,
  };

  // --- start + initialize ---------------------------------------------------------------
  const handle = await manager.startWorker(pluginId, startOptions);
  check(handle.status === "running", `worker status after start: ${handle.status}`);
  const supported = handle.supportedMethods;
  console.log(`host saw supportedMethods: ${JSON.stringify(supported)}`);
  for (const m of ["environmentAcquireLease", "environmentExecute", "environmentReleaseLease", "environmentDestroyLease"]) {
    check(supported.includes(m), `supportedMethods lacks ${m}`);
  }
  const shimPid = handle.diagnostics().pid;
  check(Number.isInteger(shimPid), "no worker pid");
  const nativePids = childrenOf(shimPid);
  step(`worker pid ${shimPid}${nativePids.length ? `, its children ${nativePids.join(",")}` : ""}`);

  // --- environment calls ------------------------------------------------------------------
  const companyId = randomUUID();
  const environmentId = randomUUID();
  const base = { driverKey: driver.driverKey, companyId, environmentId, issueId: null, config };
  const call = async (method, params) => {
    try {
      return await manager.call(pluginId, method, params);
    } catch (err) {
      fail(`${method} failed: ${err?.message ?? err}${err?.code !== undefined ? ` (code ${err.code})` : ""}`);
    }
  };

  const lease = await call("environmentAcquireLease", { ...base, runId: randomUUID() });
  check(typeof lease?.providerLeaseId === "string" && lease.providerLeaseId, `acquire returned ${JSON.stringify(lease)}`);
  step(`environmentAcquireLease -> ${lease.providerLeaseId}`);
  const hostLease = { providerLeaseId: lease.providerLeaseId, metadata: lease.metadata ?? {}, expiresAt: lease.expiresAt ?? null };
  const exec = await call("environmentExecute", {
    ...base,
    lease: hostLease,
    command: "sh",
    args: ["-c", "echo hi"],
    timeoutMs: 30_000,
    bypassSession: true,
  });
  check(exec?.exitCode === 0 && exec.stdout === "hi\n" && exec.timedOut === false,
    `environmentExecute returned ${JSON.stringify(exec)}`);
  step(`environmentExecute sh -c 'echo hi' -> exitCode 0, stdout ${JSON.stringify(exec.stdout)}`);
  if (withSync) await syncRoundTrip(call, base, hostLease, driver);
  const released = await call("environmentReleaseLease", { ...base, providerLeaseId: lease.providerLeaseId, leaseMetadata: hostLease.metadata });
  check(released === null || released?.providerLeaseId === lease.providerLeaseId,
    `environmentReleaseLease returned ${JSON.stringify(released)}`);
  step(`environmentReleaseLease -> ${JSON.stringify(released)}`);
  if (withSync) {
    const d1 = await call("environmentDestroyLease", { ...base, providerLeaseId: lease.providerLeaseId, leaseMetadata: hostLease.metadata });
    check(d1 === null || d1?.state === "destroyed", `environmentDestroyLease after release returned ${JSON.stringify(d1)}`);
    step(`environmentDestroyLease ${lease.providerLeaseId} after release -> ${JSON.stringify(d1)}`);
  }

  const lease2 = await call("environmentAcquireLease", { ...base, runId: randomUUID() });
  check(typeof lease2?.providerLeaseId === "string" && lease2.providerLeaseId, `second acquire returned ${JSON.stringify(lease2)}`);
  const destroyed = await call("environmentDestroyLease", { ...base, providerLeaseId: lease2.providerLeaseId, leaseMetadata: lease2.metadata ?? {} });
  check(destroyed === null || (destroyed?.providerLeaseId === lease2.providerLeaseId && destroyed.state === "destroyed"),
    `environmentDestroyLease returned ${JSON.stringify(destroyed)}`);
  step(`environmentDestroyLease ${lease2.providerLeaseId} -> ${JSON.stringify(destroyed)}`);

  if (engineSocket) {
    const filters = encodeURIComponent(JSON.stringify({ label: [`paperclip-company-id=${companyId}`] }));
    const left = await engineGet(engineSocket, `/containers/json?all=1&filters=${filters}`);
    check(Array.isArray(left) && left.length === 0, `containers of this run left in the engine: ${JSON.stringify(left.map((c) => c.Id))}`);
    step(`engine: no container of company ${companyId} left`);
  }

  // --- graceful stop ----------------------------------------------------------------------
  const stopStart = Date.now();
  await manager.stopWorker(pluginId);
  const escalated = hostLog.some((r) => /sending SIGTERM|escalating to SIGTERM|sending SIGKILL/.test(r.msg));
  check(!escalated, "the worker did not exit on the shutdown request; the host escalated to signals");
  check(await waitGone([shimPid, ...nativePids], 10_000), `processes left after stop: ${[shimPid, ...nativePids].filter((p) => !gone(p))}`);
  step(`stopWorker: exited on the shutdown request in ${Date.now() - stopStart} ms; no process left`);

  // --- crash: SIGKILL of the worker process the host knows --------------------------------
  if (mode === "packaged") {
    const crashId = randomUUID();
    const h2 = await manager.startWorker(crashId, startOptions);
    const pid2 = h2.diagnostics().pid;
    const children2 = childrenOf(pid2);
    check(children2.length > 0, "the shim has no native child");
    const exited = new Promise((resolve) => h2.on("exit", resolve));
    process.kill(pid2, "SIGKILL");
    const ev = await exited;
    check(await waitGone(children2, 10_000), `native worker ${children2} outlived its SIGKILLed shim`);
    step(`SIGKILL of shim ${pid2} (exit signal ${ev.signal}): native worker ${children2.join(",")} ended too`);
    await manager.stopWorker(crashId);
  }

  const noisy = hostLog.filter((r) => /unparseable message|unknown request id|invalid invocation scope/.test(r.msg));
  check(noisy.length === 0, `host warnings about the worker's output: ${JSON.stringify(noisy)}`);
  const unhandled = hostLog.filter((r) => r.msg === "worker called unregistered host method");
  if (unhandled.length) step(`note: worker called host methods this harness does not serve: ${unhandled.map((r) => r.method)}`);
  console.log(`interop OK (${mode})`);
}

// syncIn of a small tree (with a file whose bytes are not text) to where the host puts its
// uploads (below the lease's remoteCwd, .paperclip-runtime/), an execute that reads it there,
// then syncOut of the same tree back to this machine; the bytes must match.
async function syncRoundTrip(call, base, hostLease, driver) {
  const caps = driver.sandboxCapabilities ?? {};
  check(caps.nativeSyncIn && caps.nativeSyncOut, "--sync needs nativeSyncIn and nativeSyncOut");
  const remoteCwd = String(hostLease.metadata.remoteCwd ?? "").trim();
  check(remoteCwd.startsWith("/"), `the lease has no remoteCwd: ${JSON.stringify(hostLease.metadata)}`);
  const src = path.join(work, "sync-src");
  fs.mkdirSync(path.join(src, "sub"), { recursive: true });
  const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  fs.writeFileSync(path.join(src, "sub", "bytes.bin"), binary);
  fs.writeFileSync(path.join(src, "hello.txt"), "hello from the host\n");
  const target = `${remoteCwd}/.paperclip-runtime/interop/tree`;
  const inRes = await call("environmentSyncIn", {
    ...base,
    lease: hostLease,
    operations: [{ operationId: "interop-in", files: [{ sourcePath: src, targetPath: target, kind: "directory" }] }],
  });
  check(inRes?.operations?.[0]?.filesTransferred === 2, `environmentSyncIn returned ${JSON.stringify(inRes)}`);
  step(`environmentSyncIn ${src} -> ${target}: ${JSON.stringify(inRes.operations[0])}`);
  const seen = await call("environmentExecute", {
    ...base,
    lease: hostLease,
    command: "sh",
    args: ["-c", `cat ${target}/hello.txt && wc -c < ${target}/sub/bytes.bin`],
    timeoutMs: 30_000,
    bypassSession: true,
  });
  check(seen?.exitCode === 0 && seen.stdout.replace(/\s+/g, " ").trim() === "hello from the host 256",
    `the synced files are not in the sandbox: ${JSON.stringify(seen)}`);
  step("environmentExecute sees the synced tree in the sandbox");
  const back = path.join(work, "sync-back");
  const outRes = await call("environmentSyncOut", {
    ...base,
    lease: hostLease,
    operations: [{ operationId: "interop-out", files: [{ sourcePath: target, targetPath: back, kind: "directory" }] }],
  });
  check(outRes?.operations?.[0]?.operationId === "interop-out", `environmentSyncOut returned ${JSON.stringify(outRes)}`);
  check(fs.readFileSync(path.join(back, "sub", "bytes.bin")).equals(binary), "syncOut bytes differ");
  check(fs.readFileSync(path.join(back, "hello.txt"), "utf8") === "hello from the host\n", "syncOut text differs");
  step(`environmentSyncOut ${target} -> ${back}: bytes identical`);
}
