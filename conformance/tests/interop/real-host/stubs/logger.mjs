// Stand-in for @paperclipai/server dist/middleware/logger.js (a pino logger that writes to
// stdout). It keeps the same shape the worker manager uses (child/trace/debug/info/warn/error/
// fatal with pino's (obj, msg) or (msg) arguments), records every entry in
// globalThis.__paperclipHostLog so the interop script can assert on the host's warnings, and
// prints warn and above to stderr. Nothing else is stubbed.
const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"];
const records = (globalThis.__paperclipHostLog ??= []);

function makeLogger(bindings) {
  const logger = {
    child(extra) {
      return makeLogger({ ...bindings, ...extra });
    },
  };
  for (const level of LEVELS) {
    logger[level] = (objOrMsg, maybeMsg) => {
      const obj = typeof objOrMsg === "object" && objOrMsg !== null ? objOrMsg : {};
      const msg = typeof objOrMsg === "string" ? objOrMsg : String(maybeMsg ?? "");
      const record = { level, msg, ...bindings, ...obj };
      records.push(record);
      if (LEVELS.indexOf(level) >= LEVELS.indexOf("warn")) {
        process.stderr.write(`[host ${level}] ${msg} ${JSON.stringify(obj)}\n`);
      }
    };
  }
  return logger;
}

export const logger = makeLogger({});
export const httpLogger = (_req, _res, next) => next?.();
export function createHttpLogger() {
  return httpLogger;
}
