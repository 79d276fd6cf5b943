// Validate glTF files with the Khronos glTF-Validator, many per process.
// Reads one file path per line on stdin; writes one JSON line per file on stdout:
// {"path", "errors", "warnings", "infos", "messages": [{code, severity, pointer, message}]}
// Usage: node tools/validate-gltf.mjs [paths...]   (paths on the command line, or stdin)
import { readFile } from "node:fs/promises";
import path from "node:path";
import readline from "node:readline";
import validator from "gltf-validator";

async function validate(file) {
  const data = new Uint8Array(await readFile(file));
  const dir = path.dirname(file);
  const report = await validator.validateBytes(data, {
    uri: path.basename(file),
    maxIssues: 200,
    externalResourceFunction: async (uri) =>
      new Uint8Array(await readFile(path.resolve(dir, decodeURIComponent(uri)))),
  });
  const issues = report.issues;
  const severity = ["error", "warning", "info", "hint"];
  return {
    path: file,
    errors: issues.numErrors,
    warnings: issues.numWarnings,
    infos: issues.numInfos,
    messages: issues.messages.map((m) => ({
      code: m.code, severity: severity[m.severity] ?? String(m.severity),
      pointer: m.pointer ?? "", message: m.message,
    })),
  };
}

async function run(file) {
  try {
    return await validate(file);
  } catch (e) {
    return { path: file, errors: 1, warnings: 0, infos: 0,
             messages: [{ code: "IO_ERROR", severity: "error", pointer: "", message: String(e) }] };
  }
}

const args = process.argv.slice(2);
if (args.length) {
  let bad = 0;
  for (const f of args) {
    const r = await run(f);
    bad += r.errors;
    console.log(JSON.stringify(r));
  }
  process.exit(bad ? 1 : 0);
} else {
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (line.trim()) console.log(JSON.stringify(await run(line.trim())));
  }
}
