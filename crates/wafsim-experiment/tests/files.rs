//! File workloads through file systems in experiments (`[[phase.files]]`): the section 5
//! comparison (experiments/zoned-fs/lsm-files.toml) at a small scale.

mod common;
use common::{experiment, run_at};

#[test]
fn lsm_files_on_zns_with_a_zoned_fs_against_a_conventional_ssd() {
    let mut waf = std::collections::HashMap::new();
    for v in experiment("zoned-fs/lsm-files.toml") {
        let name = v.name.clone();
        let r = run_at(v, 0.01).unwrap();
        let fs = &r.filesystems[0];
        assert!(fs.file_write_bytes > 50 << 30, "{}: the application wrote 3x the drive", name);
        // Neither file system amplifies here: the zoned one's groups die whole (no host GC).
        assert!(fs.waf() >= 1.0 && fs.waf() < 1.02, "{}: file system WAF {}", name, fs.waf());
        assert_eq!(r.counters.host_write_bytes, fs.dev_write_bytes, "{}: the device got what the file system sent", name);
        eprintln!("{}: device WAF {:.3}, file system WAF {:.3}", name, r.waf(), fs.waf());
        waf.insert(name.clone(), r.waf() * fs.waf());
    }
    let (zns, on, off) = (waf["zns-zoned-fs"], waf["ssd-fs-discard"], waf["ssd-fs-no-discard"]);
    assert!(zns < 1.02, "ZNS total WAF {zns:.3}");
    assert!(on > zns + 0.1 && off > on + 1.0, "ZNS {zns:.3} < SSD with discard {on:.3} < without {off:.3}");
}
