// Reads NDJSON manifests on stdin and prints one NDJSON verdict per line:
// {"valid":bool,"paths":[...],"codes":[...]} from the published host validator
// (@paperclipai/shared pluginManifestV1Schema). A line that is not JSON gets
// {"error":"..."}.
import { createInterface } from "node:readline";
import { pluginManifestV1Schema } from "@paperclipai/shared/validators/plugin";

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
