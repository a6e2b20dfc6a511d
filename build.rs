//! Link settings of the `tackle` binary that cargo profiles cannot express.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    if release
        && target("CARGO_CFG_TARGET_OS") == "linux"
        && target("CARGO_CFG_TARGET_ENV") == "gnu"
    {
        // A position-independent executable carries one 24-byte relocation per pointer in its
        // data (1.7 MB here); packed relative relocations (DT_RELR) store them as bitmaps, so
        // the file is smaller and the loader has less to do at every start. Needs glibc 2.36
        // at run time; linkers without it ignore the option. See
        // docs/decisions/0019-release-size.md.
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
