// Builds the package: dist/ (ES modules) and dist/cjs/ (CommonJS), each with its
// .d.ts files. `npm run build`, and npm runs it on `prepare` (`npm ci` here, or
// `npm install <this folder>` from another project) and on `prepack` (`npm pack`,
// `npm publish`).
//
// Installing the folder from another project runs `prepare` here before this
// folder has its own devDependencies (TypeScript): they are installed first, from
// the lockfile, so that the folder installs as the published package would.
import { execFileSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = join(here, "node_modules", "typescript", "bin", "tsc");

function npm(args) {
  // Under npm, npm_execpath is the npm that runs this script; alone, npm on PATH.
  const cli = process.env.npm_execpath;
  const [command, first] = cli ? [process.execPath, [cli]] : ["npm", []];
  execFileSync(command, [...first, ...args], { cwd: here, stdio: "inherit", shell: !cli && process.platform === "win32" });
}

if (!existsSync(tsc)) {
  // The flags undo what the installing project's npm passes down in npm_config_*
  // (its prefix, --global, --omit=dev); --ignore-scripts: no `prepare` loop.
  const flags = ["--prefix", here, "--global=false", "--include=dev", "--ignore-scripts", "--no-audit", "--no-fund"];
  npm([existsSync(join(here, "package-lock.json")) ? "ci" : "install", ...flags]);
}
execFileSync(process.execPath, [tsc, "-p", join(here, "tsconfig.json")], { stdio: "inherit" });
execFileSync(process.execPath, [tsc, "-p", join(here, "tsconfig.cjs.json")], { stdio: "inherit" });
// dist/cjs sits inside a package of "type": "module": its own package.json tells
// Node.js (and TypeScript, reading its .d.ts files) that its .js files are CommonJS.
writeFileSync(join(here, "dist", "cjs", "package.json"), `${JSON.stringify({ type: "commonjs" }, null, 2)}\n`);
