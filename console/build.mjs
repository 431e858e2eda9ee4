// Builds console/src into console/dist: index.html, app.js (one bundle), app.css, favicon.svg. `make console` runs it.
import { copyFile, mkdir, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = dirname(fileURLToPath(import.meta.url));
const src = join(root, "src");
const dist = join(root, "dist");

await rm(dist, { recursive: true, force: true });
await mkdir(dist, { recursive: true });
const common = { bundle: true, minify: true, legalComments: "linked", logLevel: "warning", target: ["es2022"] };
await build({ ...common, entryPoints: [join(src, "main.js")], format: "esm", outfile: join(dist, "app.js") });
await build({ ...common, entryPoints: [join(src, "styles.css")], outfile: join(dist, "app.css") });
for (const file of ["index.html", "favicon.svg"]) await copyFile(join(src, file), join(dist, file));
