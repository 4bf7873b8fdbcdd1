fn main() {
    let log2: u32 = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(26);
    let cfg = wafsim_experiment::studies::bench::BenchConfig { mapping_units_log2: log2, ..Default::default() };
    let r = wafsim_experiment::studies::bench::run_bench(&cfg, |p| eprintln!("{p}")).unwrap();
    println!("{r:?}");
}
