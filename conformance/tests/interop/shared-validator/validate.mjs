// Reads NDJSON manifests on stdin and prints one NDJSON verdict per line:
// {"valid":bool,"paths":[...],"codes":[...]} from the published host validator
// (@paperclipai/shared pluginManifestV1Schema). A line that is not JSON gets
// {"error":"..."}.
// `node validate.mjs --keys` instead prints the schema's own keys, in declaration order:
// {"top":[...],"driver":[...],"capabilities":[...]} (the differential test mutates them).
import { createInterface } from "node:readline";
import { pluginManifestV1Schema } from "@paperclipai/shared/validators/plugin";

if (process.argv[2] === "--keys") {
  // The object schema under optional/array/pipe wrappers.
  const object = (schema) => {
    for (;;) {
      const def = schema._zod.def;
      if (def.type === "object") return schema;
      schema = def.innerType ?? def.element ?? def.in;
    }
  };
  const driver = object(pluginManifestV1Schema.shape.environmentDrivers);
  const keys = {
    top: Object.keys(pluginManifestV1Schema.shape),
    driver: Object.keys(driver.shape),
    capabilities: Object.keys(object(driver.shape.sandboxCapabilities).shape),
  };
  process.stdout.write(JSON.stringify(keys) + "\n");
} else {
  await verdicts();
}

/** One NDJSON verdict per stdin line. */
async function verdicts() {
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (line.trim() === "") continue;
    let value;
    try {
      value = JSON.parse(line);
    } catch (err) {
      process.stdout.write(JSON.stringify({ error: String(err) }) + "\n");
      continue;
    }
    const result = pluginManifestV1Schema.safeParse(value);
    const issues = result.success ? [] : result.error.issues;
    process.stdout.write(
      JSON.stringify({
        valid: result.success,
        paths: issues.map((i) => i.path.join(".")),
        codes: issues.map((i) => i.code),
        messages: issues.map((i) => i.message),
      }) + "\n",
    );
  }
}
