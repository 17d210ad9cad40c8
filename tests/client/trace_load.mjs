// trace_load: load a trace with the Chrome DevTools Performance panel's own trace engine
// (npm @paulirish/trace_engine) and print what it understood, as JSON: the trace's bounds and
// the processes it named. Usage: node trace_load.mjs ENGINE_DIR TRACE.json
// ENGINE_DIR: the package's directory (tests/client/install-trace-engine.sh puts it in place).
const [engineDir, tracePath] = process.argv.slice(2);
const { analyzeTrace } = await import(`${engineDir}/analyze-trace.mjs`);
const { parsedTrace } = await analyzeTrace(tracePath);
const meta = parsedTrace.data.Meta;
const processes = [...meta.processNames.values()].map((e) => e.args.name).sort();
console.log(JSON.stringify({ bounds: meta.traceBounds, processes }));
