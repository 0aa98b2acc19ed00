// Runs `ttap scan --format sarif` on the given traces and validates each log against the official
// SARIF 2.1.0 schema (shipped in @microsoft/jest-sarif) with Ajv. Usage:
//   node validate.mjs TTAP_BINARY TRACE...
// Exits 0 when every log is valid; prints the schema errors otherwise.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import Ajv from "ajv-draft-04";
import addFormats from "ajv-formats";

const require = createRequire(import.meta.url);
const schemaPath = require.resolve("@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json");
const schema = JSON.parse(readFileSync(schemaPath, "utf8"));
// unicodeRegExp: false because the official schema has a pattern that is invalid in "u" mode.
const ajv = new Ajv({ strict: false, allErrors: true, unicodeRegExp: false });
addFormats(ajv);
const validate = ajv.compile(schema);

const [ttap, ...traces] = process.argv.slice(2);
let failed = 0;
for (const trace of traces) {
  let out;
  try {
    out = execFileSync(ttap, ["scan", "--format", "sarif", "--min-severity", "hint", trace], { encoding: "utf8" });
  } catch (e) {
    out = e.stdout;  // exit code 1 means findings
    if (e.status !== 1 && e.status !== 0) {
      console.error(`${trace}: ttap exited ${e.status}`);
      failed++;
      continue;
    }
  }
  const log = JSON.parse(out);
  if (!validate(log)) {
    console.error(`${trace}: invalid SARIF`, JSON.stringify(validate.errors, null, 2));
    failed++;
  } else {
    const results = log.runs[0].results.length;
    console.log(`${trace}: valid SARIF 2.1.0 (${results} results)`);
  }
}
console.log(`${traces.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
