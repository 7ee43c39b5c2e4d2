const t0 = performance.now();
for (const spec of process.argv.slice(2)) {
  const a = performance.now();
  await import(spec);
  console.error(spec, (performance.now() - a).toFixed(1));
}
console.error("total", (performance.now() - t0).toFixed(1));
