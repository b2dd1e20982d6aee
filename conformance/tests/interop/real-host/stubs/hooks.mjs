// Module resolution hook (registered with module.register() by run-interop.mjs): the host's
// `../middleware/logger.js` resolves to ./logger.mjs. Every other module, including the worker
// manager and the plugin loader themselves, loads unmodified from node_modules.
const STUBS = new Map([["../middleware/logger.js", new URL("./logger.mjs", import.meta.url).href]]);

export async function resolve(specifier, context, nextResolve) {
  const stub = STUBS.get(specifier);
  if (stub && context.parentURL && context.parentURL.includes("/node_modules/@paperclipai/server/dist/")) {
    return { url: stub, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
